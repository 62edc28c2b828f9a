// GLUE-style TSV task files (nxm-compress data.train / data.eval): read with 2 labels, then encoded with the
// byte tokenizer as nxm-compress does.
#include "fuzz_support.hpp"
#include "nxm/task.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_clean([&] {
    const auto examples = core::nxm::read_tsv(fuzz::file("task.tsv", fuzz::text(data, size)), 2);
    const core::text::ByteTokenizer tok;
    core::nxm::encode_examples(examples, tok, 256, 16);
  });
}
