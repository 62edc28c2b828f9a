// llm.c model files (header + float32 parameters) and token shards: headers must agree with the bytes that
// follow before anything is allocated (issue 20.3).
#include "fuzz_support.hpp"
#include "text/shard.hpp"
#include "train/interop.hpp"
#include "train/params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto model = fuzz::file("m.bin", fuzz::text(data, size));
  fuzz::expect_clean([&] {
    const auto cfg = core::train::read_llmc_config(model);
    core::train::ParamLayout layout(cfg);
    core::train::FlatBuffers<float> params(layout);
    core::train::load_llmc_checkpoint(model, params);
  });
  return fuzz::expect_clean([&] { core::text::read_shard(model); });
}
