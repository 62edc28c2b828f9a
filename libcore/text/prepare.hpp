// Text -> train/val token shards (llm.c layout) in an output folder: the library side of
// `zpp-train prepare --input TEXT|FOLDER|- [--format jsonl] --tokenizer bytes|gpt2:DIR --out DIR`.
// Documents: a text file is one, and so is each file of an input folder (in name order); a JSON
// Lines file (format jsonl, as Hugging Face datasets export them) holds one per line, in its "text"
// field. When the tokenizer has an end-of-text token it goes before every document (llm.c's
// convention of a separator). The text is read and tokenized in chunks of about chunk_bytes, cut
// only where the tokens of the parts are those of the whole (a newline between two characters that
// are no whitespace), into a uint16 token file in the output folder, unlinked as soon as it is open
// (a killed prepare leaves no such file); the shards are then copied out of it: memory does not grow
// with the input (a text without such cut points is one chunk). The last `val_fraction` of the
// tokens is the validation split, the rest the training split; each split is cut into shards of at
// most `shard_tokens` tokens named train_000000.bin, ..., val_000000.bin, ... They are written into a
// staging folder inside the output folder (.prepare-staging-HOST-PID; one a killed prepare left is
// removed by the next prepare into the folder on that host) and replace an earlier run's shards only
// once all are written; prepare.json (removed first, written last) records the result, so it never
// describes a mix of old and new shards.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "text/tokenizer.hpp"

namespace core::text {

struct PrepareOptions {
  std::string input;              // text file (any bytes), folder of them (each a document); "-": standard input
  std::string format = "text";    // text: the input is one document; jsonl: one JSON object per line per document
  std::string text_key = "text";  // jsonl: the field holding a document's text
  std::string tokenizer = "bytes";
  std::string out;                // output folder, created when absent
  double val_fraction = 0.1;
  std::int64_t shard_tokens = 100'000'000;
  std::int64_t chunk_bytes = 64 << 20;  // text tokenized at a time (peak memory ~8x this with bytes, ~4x with GPT-2)
  int threads = 0;                      // threads tokenizing a chunk's parts (0: all cores, or OMP_NUM_THREADS)

  template <class V>
  void visit(V& v) {
    v("input", input, "text file to tokenize, a folder of them (each file a document), or - (standard input)");
    v("format", format, "text (the input is one document) or jsonl (one {\"text\": ...} object per line, each a document)",
      core::one_of({"text", "jsonl"}));
    v("text_key", text_key, "jsonl: the field that holds the document");
    v("tokenizer", tokenizer, "'bytes' or 'gpt2:DIR' (DIR holds encoder.json and vocab.bpe)");
    v("out", out, "output folder for the shards");
    v("val_fraction", val_fraction, "fraction of the tokens (the last ones) kept for validation",
      core::in_range(0.0, 0.5));
    v("shard_tokens", shard_tokens, "most tokens per shard file", core::positive<std::int64_t>());
    v("chunk_bytes", chunk_bytes, "bytes of text tokenized at a time (the memory prepare needs)",
      core::positive<std::int64_t>());
    v("threads", threads, "threads tokenizing (0: all cores, or OMP_NUM_THREADS); the tokens do not depend on it",
      core::at_least(0));
  }
};

struct PrepareResult {
  std::string tokenizer;          // spec, as make_tokenizer() takes it
  std::int32_t vocab_size = 0;
  std::int64_t input_bytes = 0;
  std::int64_t train_tokens = 0;
  std::int64_t val_tokens = 0;
  std::vector<std::string> train_files;  // full paths
  std::vector<std::string> val_files;
  double seconds = 0;             // wall time of tokenization and writing

  nlohmann::json to_json() const;
};

// The last position in buf where tokenizing the two sides apart gives the tokens of the whole (with
// every tokenizer): just after a newline between two well-formed characters that are no whitespace,
// or between the CR and LF of a CR LF so placed; npos when there is none.
std::size_t last_safe_cut(std::string_view buf);

struct TokenFileResult {
  std::int64_t input_bytes = 0;
  std::int64_t tokens = 0;
  std::int64_t documents = 0;
};
struct InputFormat {
  std::string format = "text";  // text or jsonl (PrepareOptions)
  std::string text_key = "text";
};
// Pass 1 of prepare, also used by training on a text file: tokenizes the text read from `in`
// (`source` names it in messages) into `out` as uint16 (no header), the end-of-text token (when the
// tokenizer has one) before every document. A text is one document, read chunk by chunk, about
// chunk_bytes at a time, cut where the tokens of the parts are those of the whole; jsonl documents
// are gathered up to chunk_bytes. Either way the text is cut the same way into parts of about 1 MiB
// that `threads` threads tokenize (0: OpenMP's default); the tokens are the same for any thread
// count. Memory is bounded by chunk_bytes (a text without a cut point, or a longer document, is one
// chunk). `out` is opened by the caller (so it may unlink the file first); `out_name` names it in
// messages. Throws UsageError (a vocabulary above 65536), DataError (a jsonl line that is no object
// with a string text_key, naming source:line) or IoError.
TokenFileResult tokenize_to_file(std::istream& in, const std::string& source, const Tokenizer& tokenizer,
                                 std::int64_t chunk_bytes, std::ostream& out, const std::string& out_name,
                                 int threads = 0, const InputFormat& format = {});

// The same for several files, one after another into one token file (each a document in format
// text), opened one at a time; messages name the file.
TokenFileResult tokenize_files_to_file(const std::vector<std::filesystem::path>& files, const Tokenizer& tokenizer,
                                       std::int64_t chunk_bytes, std::ostream& out, const std::string& out_name,
                                       int threads = 0, const InputFormat& format = {});
// The files an input folder gives prepare: its regular files but hidden ones, in name order
// (DataError when there are none; subfolders are not entered).
std::vector<std::filesystem::path> input_folder_files(const std::filesystem::path& dir);

// Throws UsageError (empty input/out path, bad options, bad tokenizer spec), InputMissingError (input or
// tokenizer files absent), DataError (input too short to give both splits a token, an input folder
// without files, a malformed jsonl line), IoError.
PrepareResult prepare(const PrepareOptions& options);

}  // namespace core::text
