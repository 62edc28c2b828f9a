// The plan interpreter: nested loops over the levels of a Plan, candidate sets built by the
// plan's hoisted set operations (set_ops.hpp), upper bounds applied as prefixes of sorted
// lists, the last level (or an ordered pair of last levels) counted without materialising it,
// independent last pairs by inclusion-exclusion, from wedge tables under Plan::root_common, and
// independent tails of 3..6 levels by GraphPi's inclusion-exclusion over set partitions (Plan::iep).
// Counts are exact (64-bit).
// The graph must be the one the plan was made for: relabelled by degree for the intended
// orientation (any labelling gives the same counts, only the speed differs) and labeled when
// the pattern is.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "graph/csr.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"
#include "graph/populated.hpp"

namespace core::graph {

// With Plan::local_graph (or ExecOptions::local_graph on), cliques are counted in the roots' local
// graphs (local_graph.hpp).
std::uint64_t count_matches(const Graph& g, const Plan& plan, const ExecOptions& opt = {});

// Whether count_matches counts `plan` in the roots' local graphs under `opt`.
bool uses_local_graph(const Plan& plan, const ExecOptions& opt);

// Calls fn(match) for up to `limit` matches (match[p] = graph vertex of pattern vertex p), one
// call at a time; returns how many were reported.
using MatchFn = std::function<void(std::span<const Vertex>)>;
std::uint64_t list_matches(const Graph& g, const Plan& plan, const ExecOptions& opt, std::uint64_t limit,
                           const MatchFn& fn);

// A count per vertex or per CSR slot.
using CountTable = PopulatedVector<std::uint64_t>;

// The count of matches whose level-0 vertex is v, for every vertex v (summed, count_matches). Heavy roots run
// as several tasks (their level-1 candidates split as in count_matches), here and in count_per_edge.
CountTable count_per_root(const Graph& g, const Plan& plan, const ExecOptions& opt = {});

// For every edge (v, w) (index: its position in the CSR, offsets[v] + rank of w in N(v)), the
// count of matches whose levels 0 and 1 are v and w. Level 1 must be unbounded (no restriction) and
// the plan without Plan::root_common.
CountTable count_per_edge(const Graph& g, const Plan& plan, const ExecOptions& opt = {});

// The per-edge table with every edge's entry moved to its reverse: out[slot of (v, w)] = table[slot of (w, v)].
CountTable transposed_edge_table(const Graph& g, const CountTable& table, const ExecOptions& opt = {});

// The sum of weight(match) over every match; the plan must enumerate every level (no Plan::pairs,
// root_common or iep: made with Formula::never). weight is called from several threads at once. A sum
// past 2^128 - 1 is a DataError.
// The common neighbours of every edge's ends, one sorted list per CSR slot (offsets[a] + rank of b in N(a)):
// N(a) ∩ N(b), six entries per triangle (edge_common_lists, triangle_tables.hpp).
struct EdgeCommonLists {
  std::vector<EdgeIndex> first;  // 2 m + 1 prefix sums of t(a, b) over the slots
  std::vector<Vertex> vertices;
  std::span<const Vertex> at(EdgeIndex slot) const { return {vertices.data() + first[slot], first[slot + 1] - first[slot]}; }
};

// With `lists`, a set the plan builds as N(v_a) ∩ N(v_d) (a prefix of it), v_d picked from N(v_a) itself, is read
// from the edge's list instead of merged (q062's cut: N(5) ∩ N(4) for every root 1 that reaches the edge 5-4).
// With Plan::weigh_counts_last, weight is called once per match of the levels before the last, whose candidates
// are counted, and multiplied by their number; the last level's vertex and set are then not given.
struct WeighedMatch {
  std::span<const Vertex> vertices;  // [p]: the graph vertex of pattern vertex p
  // [p]: p's candidate set as its level built it, before the distinct vertices are excluded: for a level without
  // bounds or label, the common neighbours of its earlier neighbours' images (empty for the root).
  std::span<const std::span<const Vertex>> sets;
  // Plan::weigh_root_common: [x] = |N(v) ∩ N(x)| for every graph vertex x, v the root (level 0's vertex); else null.
  const std::uint32_t* root_common = nullptr;
  int thread = 0;  // the calling worker (0..opt.threads-1), for its own scratch state
};
using WeightFn = std::function<unsigned __int128(const WeighedMatch&)>;
unsigned __int128 sum_over_matches(const Graph& g, const Plan& plan, const ExecOptions& opt, const WeightFn& weight,
                                   const EdgeCommonLists* lists = nullptr);

// Whether `plan` builds a set N(v_a) ∩ N(v_d) (or a prefix of it) with v_d picked from N(v_a) and a >= 1, so that the
// same edge's merge recurs under several prefixes: where sum_over_matches gains from EdgeCommonLists.
bool merges_edge_common(const Plan& plan);

// LowerDegrees (parallel.hpp) of g, on up to `threads` threads.
LowerDegrees lower_degrees(const Graph& g, int threads = 1);
// g's: *opt.lower where the caller computed them once for the graph, else computed into `own`.
const LowerDegrees& lower_degrees(const Graph& g, const ExecOptions& opt, LowerDegrees& own);

// Throws UsageError when the plan cannot run on g (labels missing, too many vertices).
void check_plan_fits(const Graph& g, const Plan& plan);

}  // namespace core::graph
