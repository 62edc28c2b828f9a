// Undirected simple graph in compressed sparse row form (sorted neighbour lists), built from a raw
// edge list by symmetrising, dropping self-loops and duplicate edges and compacting vertex ids to
// 0..n-1 (the original id of every vertex is kept). Also the degree-ordered relabelling of
// GraphZero's generalised orientation: vertices sorted by decreasing degree, so for every vertex v
// the neighbours with a smaller id (the prefix of its sorted list) are those of higher degree;
// that prefix has at most sqrt(2m) entries.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "graph/csr_array.hpp"

namespace core::graph {

using Vertex = std::uint32_t;
using EdgeIndex = std::uint64_t;

// What building the graph removed or changed, reported to the user.
struct CleanReport {
  std::uint64_t input_edges = 0;      // edge lines / entries read
  std::uint64_t self_loops = 0;       // u == v, dropped
  std::uint64_t duplicates = 0;       // repeated undirected edges (incl. both directions), dropped
  std::uint64_t max_input_id = 0;     // largest vertex id seen in the input
  std::uint64_t vertices = 0;         // vertices after compaction (ids that occur in an edge)
  std::uint64_t edges = 0;            // undirected edges kept
};

// The three arrays are owned vectors, or views of a memory-mapped CSR cache (graph_io.hpp).
struct Graph {
  CsrArray<EdgeIndex> offsets{0};        // n + 1 entries
  CsrArray<Vertex> adj;                  // 2m entries, each list sorted ascending
  CsrArray<std::uint64_t> original_ids;  // id in the input file of every vertex
  std::vector<std::int32_t> labels;         // empty when unlabeled, else one label per vertex

  Vertex n() const { return static_cast<Vertex>(offsets.size() - 1); }
  std::uint64_t m() const { return adj.size() / 2; }
  std::uint32_t degree(Vertex v) const { return static_cast<std::uint32_t>(offsets[v + 1] - offsets[v]); }
  std::span<const Vertex> neighbors(Vertex v) const {
    return {adj.data() + offsets[v], adj.data() + offsets[v + 1]};
  }
  bool has_edge(Vertex u, Vertex v) const;
  std::uint32_t max_degree() const;
  bool labeled() const { return !labels.empty(); }
};

using RawEdge = std::pair<std::uint64_t, std::uint64_t>;

// Symmetrises, removes self-loops and duplicates, compacts ids (ascending original id order).
Graph build_graph(std::vector<RawEdge> edges, CleanReport* report = nullptr);

// Relabels vertices by decreasing degree (ties by id); labels and original ids follow. The lists are
// built on `threads` threads (0: core::thread_count()); the result does not depend on it.
Graph relabel_by_degree(const Graph& g, int threads = 0);

// Empty when `g` is a CSR of a simple undirected graph (offsets monotone from 0 to adj.size(), ids in range,
// each list strictly ascending, no self-loops, every edge in both lists, one original id per vertex), else
// the first violation found. O(n + m).
std::string check_structure(const Graph& g);

// One-line human description of a clean report.
std::string describe(const CleanReport& r);

}  // namespace core::graph
