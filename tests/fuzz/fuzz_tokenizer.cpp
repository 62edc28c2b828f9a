// GPT-2 tokenizer files: the input is encoder.json, a NUL byte, then vocab.bpe; a tokenizer that loads must
// encode and decode a fixed text.
#include <algorithm>

#include "fuzz_support.hpp"
#include "text/gpt2_bpe.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = fuzz::text(data, size);
  const auto cut = std::min(input.find('\0'), input.size());
  fuzz::file("encoder.json", input.substr(0, cut));
  fuzz::file("vocab.bpe", cut < input.size() ? input.substr(cut + 1) : std::string_view());
  return fuzz::expect_clean([&] {
    const core::text::Gpt2Tokenizer tok(fuzz::scratch());
    tok.decode(tok.encode("Hello world, it's 2026!\n  tabs\tand ünïcode"));
  });
}
