// Clique counting in each root's local graph (G2Miner's local graph search; Chen & Arvind, "Efficient
// and Scalable Graph Pattern Mining on GPUs", OSDI'22). A k-clique plan whose every level is bounded
// by all earlier ones (Plan::local_graph) finds each clique with its vertices in decreasing id order,
// so the matches with root v lie in N+(v), the neighbours of v with smaller ids (the oriented prefix,
// short under degree ordering). Those d vertices are relabelled 0..d-1 in id order and the local
// graph is built once per root as d bitmap rows: row i = the local vertices below i adjacent to i
// (one look-up per oriented neighbour of i). Level 1 is a local vertex i, each deeper level ranges
// over the AND of the rows chosen so far, and the last level is only counted: the popcount of that
// AND, never written. For triangles (k = 3) the rows are not built: N+(v) is marked in a byte per
// graph vertex and the size of row i is the number of marked vertices in N+(u_i) (one look-up per
// element instead of a merge of the two lists). Roots with more than
// kMaxDegree oriented neighbours are left to the list interpreter (their d^2/8-byte bitmap would not
// stay in cache).
#pragma once
#include <cstdint>
#include <vector>

#include "graph/csr.hpp"
#include "graph/matcher.hpp"
#include "graph/plan.hpp"
#include "graph/populated.hpp"

namespace core::graph {

class LocalCliqueCounter {
 public:
  static constexpr std::uint32_t kMaxDegree = 4096;  // a 2 MiB bitmap

  // lower: lower_degrees(g); k >= 3 clique vertices.
  LocalCliqueCounter(const Graph& g, const LowerDegrees& lower, int k);

  bool fits(Vertex v) const { return lower_[v] <= kMaxDegree; }
  // The k-cliques whose largest id is v and whose second largest is local vertex i in [begin, end)
  // (positions in v's oriented prefix); fits(v) must hold.
  std::uint64_t count_root(Vertex v, std::uint32_t begin, std::uint32_t end);
  std::uint64_t count_root(Vertex v) { return count_root(v, 0, lower_[v]); }

 private:
  void build_rows(Vertex v, std::uint32_t rows);
  std::uint64_t extend(const std::uint64_t* cand, std::uint32_t words, int left, int depth);
  const std::uint64_t* row(std::uint32_t i) const { return bits_.data() + std::size_t{i} * words_; }

  const Graph& g_;
  const LowerDegrees& lower_;
  const int k_;
  PopulatedVector<std::uint32_t> pos_;  // graph vertex -> local id (kAbsent outside the current N+(v))
  PopulatedVector<std::uint8_t> marked_;  // triangles: 1 on the current N+(v) (below the counted range's end)
  PopulatedVector<std::uint64_t> bits_;   // the rows, words_ words each
  std::vector<std::uint64_t> cand_;   // one candidate bitmap per depth
  std::uint32_t words_ = 0;
};

// Whether the plan counts cliques with the restriction chain the local graph needs: a complete,
// unlabeled pattern of >= 3 vertices whose every level is bounded by all earlier levels.
bool is_clique_chain(const Plan& plan);

}  // namespace core::graph
