// Pattern strings (names and edge lists such as 0-1,1-2,2-0), then the symmetry group of small ones.
#include "fuzz_support.hpp"
#include "graph/pattern.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_clean([&] {
    const auto p = core::graph::parse_pattern(std::string(fuzz::text(data, size)));
    if (p.size() <= 7) core::graph::automorphisms(p);
  });
}
