// The opening of a GPT-2 encoder.json holding the 256 byte tokens (ids 0..255) in GPT-2's printable
// byte alphabet and nothing else: tests add entries (merge results, "<|endoftext|>") and the closing
// brace to make small GPT-2 tokenizers without the real vocabulary.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "text/gpt2_bpe.hpp"
#include "text/unicode.hpp"

namespace core::test {

inline std::string byte_alphabet_encoder() {
  std::string encoder = "{";
  const auto alphabet = core::text::gpt2_byte_alphabet();
  for (int b = 0; b < 256; ++b) {
    std::string key;
    core::text::append_utf8(key, alphabet[b]);
    encoder += (b ? ", " : "") + nlohmann::json(key).dump() + ": " + std::to_string(b);
  }
  return encoder;
}

}  // namespace core::test
