// GPT-2's byte-level BPE tokenizer (Radford et al. 2019, OpenAI encoder.py) reading the standard
// encoder.json (token string -> id, in GPT-2's printable byte alphabet) and vocab.bpe (merges, one
// "a b" pair a line, rank = line order). Text is split by gpt2_pretokenize(); each piece's bytes are
// merged by rank exactly as encoder.py does (lowest-ranked adjacent pair first, all its occurrences
// left to right). Pieces are cached, so repeated words cost one hash lookup. encode() may be called
// from several threads at once.
// "<|endoftext|>" in the input text is encoded as ordinary text (as encoder.py does); the token itself
// is eot_token().
#pragma once
#include <array>
#include <filesystem>
#include <unordered_map>

#include "text/tokenizer.hpp"

namespace core::text {

// The two files of a GPT-2 tokenizer folder: dir/encoder.json and dir/vocab.bpe, or where only they
// exist Hugging Face's copies of them, dir/vocab.json and dir/merges.txt.
struct Gpt2TokenizerFiles {
  std::filesystem::path vocab, merges;
};
Gpt2TokenizerFiles gpt2_tokenizer_files(const std::filesystem::path& dir);

class Gpt2Tokenizer final : public Tokenizer {
 public:
  // Reads gpt2_tokenizer_files(dir). InputMissingError when absent, DataError (naming the
  // file and line or key) when malformed or inconsistent (a merge whose result is not in the vocab,
  // or a token that is neither a byte, a "<|...|>" special nor a merge's result: a truncated vocab.bpe).
  explicit Gpt2Tokenizer(const std::filesystem::path& dir);

  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;
  std::int32_t vocab_size() const override { return static_cast<std::int32_t>(id_to_bytes_.size()); }
  std::optional<std::int32_t> eot_token() const override { return eot_; }
  // "gpt2:" + the folder as an absolute path: prepare.json and checkpoints record it, and `train` or
  // `sample` may run from another working directory.
  std::string spec() const override { return "gpt2:" + dir_.string(); }
  // The folder the files were read from (absolute).
  const std::filesystem::path& dir() const { return dir_; }

  // Byte string of one token.
  const std::string& token_bytes(std::int32_t id) const;

 private:
  struct Merge {
    std::int32_t rank;
    std::int32_t result;
  };
  void read_encoder(const std::filesystem::path& file);
  void read_merges(const std::filesystem::path& file);
  // Appends the ids of one pre-token piece.
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
  // The ids of one piece after all its merges (encoder.py's bpe()), in O(n log n).
  void merge_bytes(std::string_view piece, std::vector<std::int32_t>& symbols) const;

  std::filesystem::path dir_;
  std::vector<std::string> id_to_bytes_;
  std::unordered_map<std::string, std::int32_t> bytes_to_id_;
  std::array<std::int32_t, 256> byte_id_{};
  std::unordered_map<std::uint64_t, Merge> merges_;  // (left id << 32 | right id) -> merge
  std::optional<std::int32_t> eot_;

  // Pieces are cached per thread (encode() runs on several threads at once when prepare tokenizes a
  // chunk's parts in parallel; a shared cache would take a lock per piece): a thread's cache belongs
  // to the tokenizer whose id_ it holds and starts again when another tokenizer uses the thread.
  static constexpr std::size_t kCacheLimit = 1 << 18;  // pieces a thread's cache holds before it is cleared
  std::uint64_t id_;                                    // unique per tokenizer object, never reused
};

// GPT-2's reversible map from bytes to printable code points (bytes_to_unicode in encoder.py):
// printable Latin-1 bytes map to themselves, the other 68 to U+0100 onwards in byte order.
std::array<char32_t, 256> gpt2_byte_alphabet();

}  // namespace core::text
