// Byte-level tokenizer and the tokenizer factory.
#include "text/tokenizer.hpp"

#include "common/errors.hpp"
#include "text/gpt2_bpe.hpp"

namespace core::text {

void check_token_id(std::int32_t id, std::int32_t vocab_size) {
  if (id < 0 || id >= vocab_size)
    throw DataError("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                    std::to_string(vocab_size) + ")");
}

std::vector<std::int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out(ids.size(), '\0');
  for (std::size_t i = 0; i < ids.size(); ++i) {
    check_token_id(ids[i], 256);
    out[i] = static_cast<char>(ids[i]);
  }
  return out;
}

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& spec) {
  if (spec == "bytes") return std::make_unique<ByteTokenizer>();
  const std::string gpt2 = "gpt2:";
  if (spec.rfind(gpt2, 0) == 0 && spec.size() > gpt2.size())
    return std::make_unique<Gpt2Tokenizer>(spec.substr(gpt2.size()));
  throw UsageError("unknown tokenizer '" + spec + "': expected 'bytes' or 'gpt2:DIR' (DIR holding " +
                   "encoder.json and vocab.bpe, or Hugging Face's vocab.json and merges.txt)");
}

}  // namespace core::text
