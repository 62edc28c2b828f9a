// Token data for training: a text file (or standard input, "-") tokenized on the fly as `prepare`
// would (into a temporary uint16 file, chunk by chunk; the last val_fraction of the tokens is the
// validation split), a folder of llm.c token shards, or shards named one by one (a shard file or a glob,
// as llm.c's -i), all mapped and read in place; shards written by `zpp-train prepare`
// (train_000000.bin, val_000000.bin) or by llm.c (tiny_shakespeare_val.bin, fineweb_train_000001.bin:
// a split's files have "train" or "val" as a '_'-separated word of their name; in a folder with
// prepare.json, the shards it lists). Batches are windows of seq_len + 1 tokens: inputs and next-token
// targets. Training windows (data.order=random) start at offsets drawn from a stream that depends only on
// (seed, step, micro step; see batch_stream), so a resumed run sees exactly the batches an uninterrupted run
// would; data.order=sequential|llmc follows llm.c's loader instead (BatchOrder).
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "io/mapped_file.hpp"
#include "text/shard.hpp"
#include "train/model_config.hpp"

namespace core::train {

// The data keys train's and eval's `data` sections share: what to read, and how a text input is
// tokenized and split.
struct DataSource {
  std::string input = "/usr/share/common-licenses/GPL-3";  // Debian base-files: on every machine
  std::string tokenizer;  // text input or shards without prepare.json: 'bytes' or 'gpt2:DIR'; empty: prepare.json's, else bytes
  double val_fraction = 0.1;        // for a text input
  std::string format = "text";      // a text input: one document, or jsonl (a document per line)
  std::string text_key = "text";    // jsonl: the field holding a document

  template <class V>
  void visit_source(V& v, const char* tokenizer_help) {
    v("input", input, "text file (-: standard input), folder of train/val token shards (from `prepare` or llm.c), "
                      "a shard file or a glob of shard files (quoted; val-named ones, else those beside them, validate)");
    v("tokenizer", tokenizer, tokenizer_help);
    v("val_fraction", val_fraction, "tail fraction of a text input kept for validation", core::in_range(0.0, 0.5));
    v("format", format, "a text input: text (one document) or jsonl (a {\"text\": ...} document per line)",
      core::one_of({"text", "jsonl"}));
    v("text_key", text_key, "jsonl: the field holding a document");
  }
};

struct DataOptions : DataSource {
  int seq_len = 128;  // tokens per training sequence (T)
  std::string order = "random";  // random | sequential | llmc (see BatchOrder)

  template <class V>
  void visit(V& v) {
    visit_source(v, "tokenizer of a text input, or of shards without prepare.json: bytes or gpt2:DIR (empty: the shards' prepare.json, else bytes)");
    v("seq_len", seq_len, "tokens per sequence (context length T)", core::positive<int>());
    v("order", order,
      "training batches: random (windows at random offsets), sequential (llm.c's loader unshuffled: consecutive "
      "B x T chunks, shard by shard) or llmc (llm.c's shuffled loader: shards and chunks permuted by its "
      "Mersenne Twister seeded 42 + rank)",
      core::one_of({"random", "sequential", "llmc"}));
  }
};

// The tokens of one split: the concatenation of its parts, each read in place from a mapped file
// (a token shard, or a range of the uint16 token file a text input was tokenized into), so data
// larger than memory trains. Windows may cross from one part into the next.
class TokenSplit {
 public:
  void add(text::MappedShard shard);
  // Tokens [begin, begin + count) of a mapped uint16 token file.
  void add(std::shared_ptr<const io::MappedFile> tokens_file, std::int64_t begin, std::int64_t count,
           std::string source);
  std::int64_t size() const { return size_; }
  // The number of tokens of each part (shard), in order.
  std::vector<std::int64_t> part_sizes() const;
  const std::string& part_source(std::size_t i) const { return parts_.at(i).source; }
  // Tokens [start, start + n) of the concatenation (start + n <= size()).
  void copy(std::int64_t start, std::size_t n, std::int32_t* out) const;
  std::vector<std::int32_t> tokens(std::int64_t start, std::size_t n) const;
  // The largest token (-1 when empty).
  std::int32_t max_token() const;
  // DataError naming the part, the index and (for a shard) the byte offset of the first token >= vocab.
  void check_vocabulary(std::int32_t vocab, const std::string& tokenizer) const;

 private:
  struct Part {
    std::string source;
    bool shard = false;
    std::shared_ptr<const void> owner;  // the mapping `tokens` views
    std::span<const std::uint16_t> tokens;
    std::int64_t begin = 0;  // index of tokens[0] in the split
  };
  void push(Part part);
  std::vector<Part> parts_;
  std::int64_t size_ = 0;
};

struct TokenData {
  TokenSplit train, val;
  int vocab_size = 0;    // of the tokenizer that made the tokens
  std::string tokenizer; // its spec, recorded in checkpoints for `sample`
  std::string source;    // what was read, for messages
};

// The tokenizer spec that the prepare.json beside the shards data.input names records (for a folder, a shard
// file or a glob: the prepare.json of their folder); empty when there is none (a text, llm.c's shards).
std::string prepared_tokenizer(const std::string& input);

// data.input is a text file (or "-"), a folder of train/val shards, a shard file or a glob of shard files (see
// load_shard_list in data.cpp: the "val"-named ones validate, else the val shards beside them).
// Throws InputMissingError (no such file/folder), DataError (no train or val tokens, or a split
// shorter than seq_len + 1 tokens), UsageError (bad tokenizer spec, val_fraction 0 for a text).
TokenData load_token_data(const DataOptions& options);

// UsageError unless a model of this configuration can read the data: model.vocab_size at least the
// vocabulary of the tokenizer that made the tokens, and for bert one id more for [MASK].
void check_model_vocabulary(const TokenData& data, const ModelConfig& model);

// The random stream of micro step `micro` (< accum) of optimizer step `step`: distinct for every
// (step, micro) at any accum; step * 1024 + micro while accum <= 1024 (the streams runs had before,
// so their resumed continuations keep their batches).
std::uint64_t batch_stream(std::int64_t step, int micro, int accum);

// Fills tokens/targets [B*T] with B windows of the train split for (seed, stream).
void sample_train_batch(const TokenData& data, int B, int T, std::uint64_t seed, std::uint64_t stream,
                        std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets);
// The order of llm.c's DataLoader (llmc/dataloader.h) over the parts (shards) of a train split, for `ranks`
// processes of which this is `rank`: each shard is cut into (tokens - 1) / (ranks B T) chunks of ranks x B x T
// tokens (+1 for the last target), this rank reading B x T + 1 tokens at rank x B x T into the chunk. Unshuffled
// (data.order=sequential): chunk 0, 1, ... of shard 0, then of shard 1, ..., then again from shard 0. Shuffled
// (data.order=llmc): as llm.c with should_shuffle, a std::mt19937 seeded 42 + rank (llm.c's manual_seed and
// randint32 are MT19937's) permutes the shard order at every epoch (Fisher-Yates on the previous order, j =
// randint32 % (i + 1)) and the chunks of a shard each time the shard is entered. The batches are then those
// llm.c's train loader gives for the same shards, B, T and ranks, call for call.
class BatchOrder {
 public:
  // DataError naming the shard when one holds fewer than ranks x B x T + 1 tokens (llm.c asserts so too).
  BatchOrder(const TokenSplit& split, int B, int T, bool shuffle, int rank = 0, int ranks = 1);
  // The split index of the next batch's first token (then B x T + 1 tokens from there).
  std::int64_t next();
  // Advances past `batches` batches without reading tokens (a resumed run).
  void skip(std::int64_t batches);

 private:
  void enter_shard();
  void reset();
  std::vector<std::int64_t> begin_, chunks_;  // per part: its split index and its number of chunks
  std::int64_t chunk_tokens_, rank_offset_;
  bool shuffle_;
  std::mt19937 rng_;
  std::vector<int> shard_order_, chunk_order_;
  std::size_t shard_ = 0;
  std::int64_t chunk_ = 0;
};

// Fills tokens/targets [B*T] with the B consecutive windows of the batch at split index `start` (from BatchOrder).
void chunk_batch(const TokenData& data, int B, int T, std::int64_t start, std::vector<std::int32_t>& tokens,
                 std::vector<std::int32_t>& targets);

// Validation batch i (0-based): consecutive windows from the start of the val split (wrapping).
void val_batch(const TokenData& data, int B, int T, int i, std::vector<std::int32_t>& tokens,
               std::vector<std::int32_t>& targets);

// BERT masked-language-model corruption (Devlin et al. 2019) of a batch made by the functions
// above, in place: each position is chosen with probability `prob`; a chosen position keeps its
// token as target and its input becomes mask_id (80%), a uniform random id in [0, vocab) (10%) or
// stays (10%); other positions get target -1 (ignored). At least one position is chosen.
// Deterministic in (seed, stream).
void apply_mlm_mask(std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets, std::int32_t mask_id,
                    std::int32_t vocab, double prob, std::uint64_t seed, std::uint64_t stream);

}  // namespace core::train
