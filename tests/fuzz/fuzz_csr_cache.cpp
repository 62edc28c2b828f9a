// The binary CSR cache (issue 20.6: a flipped bit was trusted). The input is a list of edits to a valid cache of
// a small graph, three bytes each (a 16-bit offset, a byte to XOR there), plus an optional cut of the file; the
// source's size and modification time in the header are left alone (changing them only makes the cache stale).
// A damaged cache must be rejected (a DataError naming it), or else give a graph that passes the structure check.
#include <iterator>
#include <stdexcept>

#include "fuzz_support.hpp"
#include "graph/graph_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto source = fuzz::file("src.el", "0 1\n1 2\n2 0\n2 3\n3 4\n4 2\n5 0\n");
  static const std::string valid = [] {
    const auto path = fuzz::scratch() / "valid.csr";
    core::graph::write_csr_cache(path, source, core::graph::load_graph(source, {"off"}));
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::string bytes = valid;
  std::size_t i = 0;
  for (; i + 3 <= size; i += 3) {
    const std::size_t at = (data[i] | (data[i + 1] << 8)) % bytes.size();
    if (at >= 16 && at < 32) continue;  // the source's size and mtime
    bytes[at] = static_cast<char>(bytes[at] ^ data[i + 2]);
  }
  if (i < size) bytes.resize(bytes.size() - data[i] % 64 % bytes.size());
  const auto cache = fuzz::file("g.csr", bytes);
  return fuzz::expect_clean([&] {
    core::graph::LoadedGraph g;
    if (core::graph::read_csr_cache(cache, source, g))
      if (const auto why = core::graph::check_structure(g.graph); !why.empty())
        throw std::logic_error("cache accepted with a bad CSR: " + why);
  });
}
