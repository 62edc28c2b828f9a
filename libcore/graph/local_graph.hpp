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
// Edge tables (clique_tables.hpp): with `edge_slots` the rows also keep, for each bit, the oriented-edge
// slot of that edge (rows are built for every root, whatever its degree), and add_edge_cliques walks the
// k-cliques of a root's local graph down to the last level's bits, adding each clique to the counter of
// each of its k(k-1)/2 edges (the root's own edges summed per local vertex first).
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

  // lower: lower_degrees(g); k >= 3 clique vertices (k >= 4 with edge_slots).
  LocalCliqueCounter(const Graph& g, const LowerDegrees& lower, int k, bool edge_slots = false);

  bool fits(Vertex v) const { return lower_[v] <= kMaxDegree; }
  // The k-cliques whose largest id is v and whose second largest is local vertex i in [begin, end)
  // (positions in v's oriented prefix); fits(v) must hold.
  std::uint64_t count_root(Vertex v, std::uint32_t begin, std::uint32_t end);
  std::uint64_t count_root(Vertex v) { return count_root(v, 0, lower_[v]); }
  // With edge_slots: for every k-clique whose largest id is v, +1 at t[first[x] + position of y in N+(x)]
  // for each of its edges x-y, y < x (first: prefix sums of the oriented degrees). kAtomic: t is shared
  // with other threads.
  template <bool kAtomic>
  void add_edge_cliques(Vertex v, std::uint64_t* t, const EdgeIndex* first);

 private:
  void build_rows(Vertex v, std::uint32_t rows, const EdgeIndex* first = nullptr);
  std::uint64_t extend(const std::uint64_t* cand, std::uint32_t words, int left, int depth);
  template <bool kAtomic>
  void tally(const std::uint64_t* cand, std::uint32_t words, int left, int depth, std::uint64_t* t);
  template <bool kAtomic>
  void tally_last(const std::uint64_t* cand, std::uint32_t words, int depth, std::uint64_t* t);
  // The oriented-edge slot of local edge i-j, j < i (edge_slots).
  EdgeIndex slot(std::uint32_t i, std::uint32_t j) const;
  const std::uint64_t* row(std::uint32_t i) const { return bits_.data() + std::size_t{i} * words_; }

  const Graph& g_;
  const LowerDegrees& lower_;
  const int k_;
  PopulatedVector<std::uint32_t> pos_;  // graph vertex -> local id (kAbsent outside the current N+(v))
  PopulatedVector<std::uint8_t> marked_;  // triangles: 1 on the current N+(v) (below the counted range's end)
  PopulatedVector<std::uint64_t> bits_;   // the rows, words_ words each
  std::vector<std::uint64_t> cand_;   // one candidate bitmap per depth
  std::uint32_t words_ = 0;
  // edge_slots: per row, the slots of its bits in bit order from row_first_[i], and per row word the bits
  // of the row's earlier words (rank_); the root's edges' counts per local vertex (root_); the local
  // vertices chosen so far (chosen_).
  bool edge_slots_ = false;
  PopulatedVector<EdgeIndex> slots_;
  std::vector<std::uint32_t> row_first_, rank_;
  std::vector<std::uint64_t> root_;
  std::vector<std::uint32_t> chosen_;
};

// Whether the plan counts cliques with the restriction chain the local graph needs: a complete,
// unlabeled pattern of >= 3 vertices whose every level is bounded by all earlier levels.
bool is_clique_chain(const Plan& plan);

}  // namespace core::graph
