// k-clique tables of pattern decomposition (decompose.hpp), k >= 4: for every edge (v, w) the k-cliques
// through it, for every vertex v those through v, from one pass over each root's local graph
// (local_graph.hpp; G2Miner's local graph search, Chen & Arvind, OSDI'22): every k-clique is found once,
// at its largest id, its last vertex as a bit of the last level's AND, and added to the counters of its
// k(k-1)/2 edges. Work: the local graphs' rows (a look-up per oriented neighbour of each root's oriented
// neighbours) plus k(k-1)/2 increments per clique, against count_per_edge's merge of the two full lists of
// every edge and enumeration below it (the rooted plan). These are the tables of a clique rooted at an edge or
// a vertex (K4 and a triangle on one edge, two K4s on an edge, a K4 with a pendant, ...); triangles are
// triangle_tables.hpp's.
#pragma once
#include <cstdint>
#include <span>

#include "graph/csr.hpp"
#include "graph/matcher.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"
#include "graph/triangle_tables.hpp"

namespace core::graph {

// The k-cliques through each oriented edge (w < v at first[v] + position of w in N+(v), oriented_edges.hpp),
// with the prefix sums `first` of the oriented degrees `lower`. Single process (opt.world_size 1). Threads add
// into private tables while they fit in private_bytes, atomically into one beyond that.
struct OrientedCliques {
  OrientedCliques() = default;
  OrientedCliques(OrientedCliques&&) = default;  // `lower` may view own_lower: moved, never copied
  OrientedCliques& operator=(OrientedCliques&&) = default;
  int k = 0;
  LowerDegrees own_lower;                // lower_degrees(g) unless the caller had them (ExecOptions::lower)
  std::span<const std::uint32_t> lower;  // |N+(v)|
  PopulatedVector<EdgeIndex> first;      // n + 1 prefix sums of lower
  PopulatedVector<std::uint64_t> c;
  unsigned __int128 cliques() const;     // the sum of c over the edges / (k(k-1)/2)
};
OrientedCliques oriented_clique_counts(const Graph& g, int k, const ExecOptions& opt,
                                       std::size_t private_bytes = kTrianglePrivateBytes);

// c(v, w) for every CSR slot (both directions), and for every vertex the k-cliques through it.
CountTable edge_clique_counts(const Graph& g, const OrientedCliques& oc);
CountTable vertex_clique_counts(const Graph& g, const OrientedCliques& oc);

// k >= 4 when `table` (a decomposition table: a rooted plan whose first `fixed` pattern vertices are the
// attachment) counts an unlabeled k-clique rooted at one vertex or at an edge, else 0. Its embeddings with
// the root at v are then (k-1)! times the cliques through v, with the root edge at (v, w) (k-2)! c(v, w).
int rooted_clique_size(const Plan& table, int fixed);

// The predicted cost of oriented_clique_counts in the plan cost model's units (merged elements): `clique`
// is the k-clique's plan (its local-graph cost and predicted matches).
double clique_table_cost(const GraphStats& stats, const Plan& clique);

}  // namespace core::graph
