// The parallel-constraint graph of the lifted Geman-McClure QCQP (gm_qcqp.hpp): an edge (u, v)
// stands for z_u || z_v (three antisymmetric constraints z_u z_v^T - z_v z_u^T = 0). Every connected
// graph gives a QCQP whose feasible set contains all lifts of lines and whose cost is the GM cost on
// them, so a certificate on any such graph proves global optimality; the graph only decides how tight
// the relaxation is and what the certificate costs. Measured (scripts/bench/gm_tightness.sh, noise
// 0.05, sigma 0.5 and 1, outliers 0 / 10 / 30%, 3 seeds per cell, every IRLS optimum confirmed by
// exhaustive search; counts certified of 3):
// - the chain in data order routes each point's offset force through all points before it (a random
//   walk, O(sqrt N) per link): at most 1/3 from N = 100, 0/3 at N = 300 and 1000, even without outliers;
// - the chain in balanced order (signs of the offset forces alternating, partial sums bounded by the
//   largest force), low-weight points as leaves: 3/3 without outliers at sigma 1 up to N = 1000 (and
//   N = 1e5 in gm_certificate.sh), 0/3 at sigma 0.5 from N = 100, 0/3 with outliers from N = 100: a
//   tree is not enough there;
// - blocks of 4 on the balanced order, low-weight points spread evenly: 3/3 in every cell up to
//   N = 300 but one (N = 100, 30%, sigma 0.5: 2/3); at N = 1000 3/3 clean, 2/3 and 3/3 with 10%,
//   0/3 with 30% outliers: the redundancy needed grows with N and the outlier fraction. In data order
//   blocks of 4 fall to 0/3-2/3 at N = 300-1000, so the order matters beyond the block size;
// - all pairs (O(N^2) constraints): tight in all 36 runs at N = 10 and 30.
// Invariants (validate()): the first n - 1 edges form a spanning tree (stationary multipliers route
// the forces along it; each other edge closes a cycle), and `cliques` (sets of points) cover every
// edge and point, each clique's points pairwise adjacent, so hub + cliques is the chordal pattern of
// the Lagrangian used by the chordal ADMM (an elimination order in which each point's earlier
// neighbours form a clique makes the pattern chordal; the builders below produce one).
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

struct GmGraph {
  int n = 0;                               // points
  std::vector<std::array<int, 2>> edges;   // (u, v): z_u || z_v
  std::vector<std::vector<int>> cliques;   // cover of the edges by pairwise-adjacent point sets
  std::string name;                        // "chain", "band 3 (balanced)", ...
  // DataError naming the broken invariant.
  void validate() const;
};

// A spanning tree (the first n - 1 edges) rooted at edges[0][0]: parent and parent edge of each point
// (-1 at the root) and an order with every parent before its children.
struct GmTree {
  std::vector<int> parent, parent_edge, depth, order;
};
GmTree gm_spanning_tree(const GmGraph& g);

// Band of width k on an ordering of the points: order[a] -- order[a + d] for 1 <= d <= k (the
// distance-1 edges first: the chain). gm_band_graph(identity, 1) is the data-order chain and
// k >= n - 1 gives all pairs.
GmGraph gm_band_graph(const std::vector<int>& order, int k);
GmGraph gm_chain_graph(int n);
GmGraph gm_all_pairs_graph(int n);

// Greedy balanced order of signed forces: the next element has the sign opposite to the running sum
// (largest magnitudes first), so every partial sum is bounded by the largest |force| plus the sum.
std::vector<int> balanced_order(const std::vector<int>& items, const std::vector<double>& force);

// Blocks of b consecutive points of an ordering, each point constrained with every point of its own
// and the neighbouring blocks: cliques B_j u B_{j+1} (2b points), separators one block. It contains
// band b and costs the chordal conversion far fewer split variables per point than band b (one
// separator per block instead of one per point). Chain edges first (the spanning tree).
GmGraph gm_block_graph(const std::vector<int>& order, int b);

// The balanced order at a line with the low-weight points (s_i < 1/2) spread evenly between the spine
// points (balanced order of the offset forces), for gm_block_graph.
std::vector<int> gm_interleaved_order(const Points& pts, const Line& line, double sigma);

// The certificate graph at a line. b >= 2: gm_block_graph(gm_interleaved_order(...), b). b = 1: the
// spine (points with weight s_i = sigma^2 / (sigma^2 + e_i^2) >= 1/2, i.e. |e_i| <= sigma) as a chain
// in balanced order of the offset forces s_i^2 e_i, each other point a leaf tied to one spine point
// (spread evenly), so no point with a small weight carries the spine's forces.
GmGraph gm_balanced_graph(const Points& pts, const Line& line, double sigma, int b);

}  // namespace core::linefit
