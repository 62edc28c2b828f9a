// GLUE-style TSV task files (nxm-compress task.train / task.test, ltd-pretrain glue.*): read with 2 labels,
// then encoded with the byte tokenizer as both tools do.
#include "fuzz_support.hpp"
#include "train/classify_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_clean([&] {
    const auto examples = core::train::read_tsv(fuzz::file("task.tsv", fuzz::text(data, size)), 2);
    const core::text::ByteTokenizer tok;
    core::train::encode_examples(examples, tok, 256, 16);
  });
}
