// JSON Lines (train/eval data.format=jsonl and prepare --format jsonl read it this way).
#include "fuzz_support.hpp"
#include "io/jsonl.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_clean([&] {
    for (const auto& v : core::io::read_jsonl(fuzz::file("d.jsonl", fuzz::text(data, size)))) core::io::json_excerpt(v);
  });
}
