// The common tokenizer interface (text bytes <-> token ids), the byte-level tokenizer that needs no
// files, and the factory that builds a tokenizer from its spec string ("bytes" or "gpt2:DIR").
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace core::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of a byte string (any bytes, UTF-8 or not); decode(encode(s)) == s.
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  // Bytes of a token sequence; throws DataError for an id outside [0, vocab_size()).
  virtual std::string decode(std::span<const std::int32_t> ids) const = 0;
  virtual std::int32_t vocab_size() const = 0;
  // The end-of-text (document separator) token, when the vocabulary has one.
  virtual std::optional<std::int32_t> eot_token() const = 0;
  // The spec make_tokenizer() rebuilds this tokenizer from ("bytes", "gpt2:/path").
  virtual std::string spec() const = 0;
};

// Each byte is its own token: vocabulary 256, no end-of-text token.
class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;
  std::int32_t vocab_size() const override { return 256; }
  std::optional<std::int32_t> eot_token() const override { return std::nullopt; }
  std::string spec() const override { return "bytes"; }
};

// "bytes" -> ByteTokenizer; "gpt2:DIR" -> Gpt2Tokenizer reading DIR/encoder.json and DIR/vocab.bpe.
// Throws UsageError for another spec, InputMissingError / DataError for missing or malformed files.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec);

// Throws DataError naming the id when it lies outside [0, vocab_size).
void check_token_id(std::int32_t id, std::int32_t vocab_size);

}  // namespace core::text
