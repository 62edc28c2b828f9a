// Pattern decomposition (DwarvesGraph, Chen & Arvind ASPLOS'22; G2Miner's dumbbell): counting a
// pattern P with a vertex cut set C without enumerating the product of its pieces.
//
// C induces a connected subpattern, and every connected component K_i of P - C has as its
// neighbours in C one vertex or two adjacent ones, A_i, or is a single vertex. For an embedding phi
// of P[C] (an injective, edge-preserving map to the graph), ext_i(phi(A_i)) = the embeddings of
// P[A_i + K_i] that map A_i to phi(A_i): a per-vertex or per-edge table (the gem's two hanging
// triangles: per-edge triangle counts), filled once by a rooted plan (symmetry broken by the
// pointwise stabiliser of A_i, times its order); for a single vertex attached to three or more cut
// vertices, or two non-adjacent ones, the common neighbours of phi(A_i), counted while phi is
// enumerated (K5 minus an edge with a pendant: the cut K4 enumerated from its triangle, whose common
// neighbours are counted once for the fourth vertex's every choice). Then
//   R = sum over embeddings phi of P[C] of prod_i ext_i(phi(A_i))
// counts the maps f: V(P) -> V(G) that preserve edges and are injective on C and on each
// A_i + K_i, but may send vertices of different pieces to one graph vertex. Grouping those maps
// by which vertices they identify (a partition pi whose blocks never hold two vertices of one
// piece) gives R = sum over pi of inj(P/pi), with P/pi the quotient pattern (the blocks' vertices
// merged; loop-free because no block holds two adjacent vertices) and inj the number of
// embeddings. So inj(P) = R - sum over pi != identity of inj(P/pi): every quotient has fewer vertices
// and is counted by its own best strategy (a plan, or a decomposition again), inj(Q) = count(Q)
// |Aut(Q)|; isomorphic quotients are counted once with their multiplicity. count(P) = inj(P) / |Aut(P)|.
// The disconnected cuts allowed are pair cuts: two non-adjacent vertices joined by paths of one,
// two or three inner vertices (the 4-cycle's diagonal; two vertices of the 5-, 6- and 7-cycle) or by
// edges whose both ends are adjacent to both (the tips of a diamond): R = sum over vertex pairs of
// c(a, b)^r1 p3(a, b)^r2 p4(a, b)^r3 e2(a, b)^r4, from walks (Decomposition::pair_cut); and edge-and-vertex
// cuts, an edge and a vertex joined to edges and vertices adjacent to all three (Decomposition::edge_vertex).
// R itself is enumerated up to H_C, the automorphisms of P that map C to C restricted to C (the
// product is constant on their orbits), and multiplied by |H_C|.
//
// Edge-induced, patterns of up to 7 vertices. The planner (choose_count_plan) scores every
// admissible cut against the plan of the whole pattern with the plan cost model and keeps the
// cheapest; Formula::always takes the cheapest cut wherever one exists and the plan has no
// inclusion-exclusion tail; Formula::never never decomposes.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/complete_split.hpp"
#include "graph/csr.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"

namespace core::graph {

struct Decomposition;
struct ApexPlan;

// How one pattern is counted: by `plan` (always set: also the enumerating plan of a decomposed
// pattern, for reports), or by `decomposition`, `apex` or `complete_split` when one is set.
struct CountPlan {
  Plan plan;
  std::shared_ptr<const Decomposition> decomposition;
  std::shared_ptr<const ApexPlan> apex;
  std::optional<CompleteSplit> complete_split;  // a k-clique joined to r independent vertices (complete_split.hpp)
  double predicted_cost = 0;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

struct Decomposition {
  Pattern pattern;
  std::vector<int> cut;  // the pattern vertices of C; cut_plan's vertex i is cut[i]
  Plan cut_plan;         // P[C], every level enumerated, symmetry broken by H_C or by K = Aut(P[C])
  // With K (the cut's own symmetry, which its tables break: q074's K4 weighed by a degree and an edge's triangles),
  // each match m stands for its K-orbit: the weight is summed over m composed with each of these left coset
  // representatives r of H_C in K (cut index i weighed at the vertex of r[i]), and the sum is multiplied by
  // |H_C| = |K| / |cut_images|. Empty: H_C. Only without components counted in the cut.
  std::vector<Perm> cut_images;
  std::uint64_t cut_weight_multiplier() const {
    return cut_images.empty() ? cut_plan.automorphisms : cut_plan.automorphisms / cut_images.size();
  }
  struct Component {
    std::vector<int> vertices;  // K_i (pattern vertices)
    std::vector<int> attach;    // A_i, its neighbours in C: one vertex, or two adjacent ones (ordered)
    int table = 0;              // index into tables: components mapped onto each other by Aut(P) share one
    // A single vertex attached to three or more cut vertices or to two non-adjacent ones (ascending): no table
    // (table = -1); ext(phi(A_i)) = the common neighbours of phi(A_i) (of the vertex's label), counted while the
    // cut is enumerated: from the candidate set of a cut level whose earlier neighbours lie in A_i
    // (common_set_level), once per change of phi(A_i) (the cut plan's order is chosen with these counts priced).
    bool common = false;
  };
  std::vector<Component> components;
  // Rooted plans of P[A_i + K_i] (vertices 0 (,1) = A_i), group = the pointwise stabiliser of A_i:
  // per-vertex tables (count_per_root) or per-edge ones (count_per_edge).
  std::vector<Plan> tables;
  // Per table: filled rooted at (attach[1], attach[0]) of its components, then transposed (an edge's table
  // whose plan is cheaper from its second end).
  std::vector<bool> reversed;
  struct Quotient {
    std::uint64_t multiplicity = 0;  // partitions giving a quotient isomorphic to plan's pattern
    CountPlan plan;
  };
  std::vector<Quotient> quotients;
  // A pair cut: two non-adjacent vertices a, b whose components (two or more; unlabeled) are paths
  // between them, common_power of one inner vertex (a common neighbour: K_{2,r}, the 4-cycle for
  // r = 2), path3_power of two (a-x-y-b: the 6-cycle is two, the 5-cycle one of each) and
  // path4_power of three (a-x-y-z-b: the 7-cycle is one of two and one of three). R = sum over
  // ordered pairs a != b of c(a, b)^common_power p3(a, b)^path3_power p4(a, b)^path4_power, c the
  // number of common neighbours, p3 and p4 of paths (all vertices distinct), all symmetric: per
  // root a, c(a, .) from wedge walks, p3(a, b) = sum over y in N(b) - a of c(a, y), less deg(b) - 1
  // when b ~ a (the walks a-b-y-b), p4 from p3 likewise (sum_pair_long_paths); over b on one side
  // of a, doubled; the 4-cycle's R (common_power 2 alone) from its cycles counted at their smallest
  // vertex (sum_pair_four_cycles); no cut plan or tables. edge_power (with common neighbours and paths of
  // two inner vertices only): components that are an edge x-y with x and y adjacent to both a and b (a
  // diamond's tips a, b), e2(a, b) = the ordered adjacent pairs in N(a) ∩ N(b), per root a from its
  // triangles a-x-y and the lists N(y) marked by N(x) (sum_pair_edges; p3 there for b below a). All 0: a
  // connected cut.
  int common_power = 0;
  int path3_power = 0;
  int path4_power = 0;
  int edge_power = 0;
  // One more component (with paths of one or two inner vertices and joined edges only): a path a-x-y-b with a
  // pendant on x or y (s005 of the 7-vertex sample: a diamond's tips joined by such a path), weighed by
  // V(a, b) = W(a, b) + W(b, a), W(a, b) = sum over paths a-x-y-b of (deg(x) - 2 - [x ~ b]), both
  // orientations at once, from a second wedge walk weighed by degrees and edge triangle counts
  // (decompose.cpp's PendantPaths); R is then summed once per unordered pair, not doubled.
  bool pendant_path = false;
  // One more component (with common neighbours and joined edges only): a joined edge x-y with a cap z adjacent to
  // x, y and one cut vertex, a (s018 of the 7-vertex sample: K4 a-x-y-z beside a joined edge). Weighed by Z(a, b) =
  // sum over the ordered adjacent pairs (x, y) in N(a) ∩ N(b) of |N(a) ∩ N(x) ∩ N(y) - b|, which is not symmetric:
  // R is summed over every ordered pair (sum_pair_edges, from walks that reach every b).
  bool capped_edge = false;
  bool pair_cut() const {
    return common_power + path3_power + path4_power + edge_power > 0 || pendant_path || capped_edge;
  }
  // A cut of a triangle b-x-y with a pendant a at b, whose components are all single vertices counted in the cut,
  // power_x of them at (a, x) and power_y at (a, y) (unlabeled; x and y as the pattern numbers them): R = sum over
  // a, b in N(a) and the ordered adjacent pairs (x, y) in N(b) - a of c(a, x)^power_x c(a, y)^power_y, per root a
  // c(a, .) from one wedge walk and the edges among each N(b) listed once (triangle_edge_lists), instead of the
  // cut's weighed enumeration with a merge per match (`0-2,0-3,1-2,1-4,2-5,3-4,3-5,4-5` at the cut 2-5, 3-4-5).
  struct PendantTriangle {
    int a = -1, b = -1, x = -1, y = -1;
    int power_x = 0, power_y = 0;
  };
  std::optional<PendantTriangle> pendant_triangle;
  // A cut of an edge x-y and a vertex z adjacent to neither, whose components are `commons` single vertices and
  // `edges` >= 1 edges, every one of their vertices adjacent to x, y and z (s023 of the 7-vertex sample: two K4s on
  // the edge x-y, z joined to the four others): R from per-edge scatters (complete_split.hpp's
  // edge_vertex_cut_sum), no cut plan or tables.
  struct EdgeVertex {
    int commons = 0, edges = 0;
  };
  std::optional<EdgeVertex> edge_vertex;
  // R from a pass of its own (a pair cut, an edge-and-vertex cut): no cut plan, no tables.
  bool own_pass() const { return pair_cut() || edge_vertex; }
};

// A cone pattern counted through its apex or twin apexes (apex.hpp): `vertex` is adjacent to every other
// pattern vertex, and so is `twin` (-1: none), which is not adjacent to `vertex`; `rest` counts the others
// with an edge among them (Q') in each graph vertex's neighbourhood, or each pair's common neighbourhood, and
// `isolated` others without one are chosen among the remaining vertices there.
struct ApexPlan {
  int vertex = -1;
  int twin = -1;
  int isolated = 0;
  CountPlan rest;
};

// Whether component c's table is filled by its rooted plan (count_per_root, count_per_edge), having no pass of its
// own: the tables a race's sample fills over its share of the roots (ExecOptions::sampled_tables).
bool rooted_plan_table(const Decomposition& d, const Decomposition::Component& c);

// P[vertices], vertex i of the result being vertices[i] (labels kept).
Pattern subpattern(const Pattern& p, const std::vector<int>& vertices);

// The cheapest way to count p (see above); plain choose_plan for vertex-induced counting.
CountPlan choose_count_plan(const Pattern& p, Induced induced, const GraphStats& stats,
                            Formula formula = Formula::by_cost);

// d with its cut enumerated under the cut's own automorphisms Aut(P[C]) instead of H_C, each match weighed in its
// images (Decomposition::cut_images); none where a component is counted in the cut, the cut is summed directly, or
// Aut(P[C]) is not larger than H_C or more than 24 times. The planner takes it where it is priced lower.
std::optional<Decomposition> with_cut_images(const Decomposition& d, const GraphStats& stats);

// The decomposition at every admissible cut of p (edge-induced), in the order of the cuts' vertex
// masks; quotients are counted by their best strategy. Empty when p has no admissible cut.
std::vector<CountPlan> decompositions(const Pattern& p, const GraphStats& stats, Formula formula = Formula::by_cost);

// The decomposition at p's first edge-and-vertex cut (Decomposition::edge_vertex), if it has one and stats counted
// the graph's 4-cliques; the other cuts are not planned.
std::optional<CountPlan> edge_vertex_decomposition(const Pattern& p, const GraphStats& stats);

// p counted through each of its cone forms (apex.hpp: an apex, twin apexes), each priced by sampled local
// graphs, when `stats` know their graph (graph_stats); none for other patterns. The planner takes one where it
// is the cheapest way. *enumerated (when given): the apex's sampled neighbourhoods' price of enumerating p from
// it (ApexPricing), 0 without an apex form.
std::vector<CountPlan> cone_count_plans(const Pattern& p, const GraphStats& stats, Formula formula = Formula::by_cost,
                                        double* enumerated = nullptr);

// The number of matches under `cp` (the same as count_matches of any plan of the pattern).
// Exact or a DataError when it exceeds 2^64 - 1. Single process (opt.world_size 1).
std::uint64_t count_with(const Graph& g, const CountPlan& cp, const ExecOptions& opt);

// Counts one plan's matches over opt's share of the roots (count_matches, or a compiled kernel).
using PlanCounter = std::function<std::uint64_t(const Plan&, const ExecOptions&)>;
// This rank's share of the embeddings (matches x |Aut|) of cp's pattern: summed over opt's ranks, exactly
// count x |Aut|. The relaxed sum R and the plans of the quotients (counted by count_plan, default
// count_matches) are split over the ranks; the components' tables are filled whole on every rank. A share
// may be negative (R - quotients of a part of the roots).
__int128 embedding_share(const Graph& g, const CountPlan& cp, const ExecOptions& opt, const PlanCounter& count_plan = {});
// The count from all ranks' shares: exact, a DataError when it exceeds 2^64 - 1.
std::uint64_t count_from_shares(const CountPlan& cp, std::span<const __int128> shares);

}  // namespace core::graph
