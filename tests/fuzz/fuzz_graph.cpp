// Edge lists and Matrix Market (the first byte picks the reader), through the builder's cleaning; the graph
// that comes out must pass the CSR structure check.
#include <stdexcept>

#include "fuzz_support.hpp"
#include "graph/graph_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool mtx = data[0] & 1;
  const auto path = fuzz::file(mtx ? "g.mtx" : "g.el", fuzz::text(data + 1, size - 1));
  return fuzz::expect_clean([&] {
    const auto g = mtx ? core::graph::read_matrix_market(path) : core::graph::read_edge_list(path);
    if (const auto why = core::graph::check_structure(g); !why.empty()) throw std::logic_error("bad CSR: " + why);
  });
}
