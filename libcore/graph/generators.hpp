// Synthetic graphs: R-MAT / Kronecker (Chakrabarti et al.; Graph500 parameters a = 0.57,
// b = c = 0.19, edge factor 16) and Erdos-Renyi G(n, p) (geometric skipping, Batagelj-Brandes).
// Both are deterministic for a given seed, then cleaned like any input (build_graph).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/csr.hpp"

namespace core::graph {

struct RmatParams {
  int scale = 14;            // 2^scale vertex ids
  double edge_factor = 16;   // edges = edge_factor * 2^scale (before cleaning)
  double a = 0.57, b = 0.19, c = 0.19;
  int threads = 0;           // generation threads (0: core::thread_count()); the graph does not depend on it
  // Directed entries buffered per fill round (8 bytes each; 0: a quarter of the memory available, at
  // least 2^25 entries); more rounds use less memory and generate the stream once more each. The graph
  // does not depend on it.
  std::uint64_t round_entries = 0;
};

// The cleaned graph of rmat_edges(p, seed), built as build_graph would but without materialising the
// edge list: 8 bytes per generated edge (both directions, 32-bit ids), the round's buffer (16 bytes per
// edge in one round where memory allows) plus about 24 bytes per vertex id. Scale <= 32.
Graph generate_rmat(const RmatParams& p, std::uint64_t seed, CleanReport* report = nullptr);
// The raw R-MAT edges (scrambled ids, self-loops and duplicates kept): 16 bytes an edge.
std::vector<RawEdge> rmat_edges(const RmatParams& p, std::uint64_t seed);
Graph generate_gnp(std::uint64_t n, double p, std::uint64_t seed, CleanReport* report = nullptr);

// Graph spec strings: "rmat:SCALE[:EDGE_FACTOR]" or "gnp:N:P". nullopt when `spec` names no
// generator (then it is a file path); UsageError when it does but is malformed.
// Whether `spec` names a generator (rmat:... or gnp:...), well-formed or not.
bool is_generator_spec(const std::string& spec);
std::optional<Graph> generate_from_spec(const std::string& spec, std::uint64_t seed,
                                        CleanReport* report = nullptr);

}  // namespace core::graph
