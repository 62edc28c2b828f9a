// GraphZero-style matching plans. For a pattern P and a matching order (each vertex adjacent to
// an earlier one), restrictions come from the stabiliser chain of Aut(P) along the order
// (Grochow-Kellis symmetry breaking): at each level the vertex v must have a larger graph id than
// every other vertex of its orbit under the pointwise stabiliser of the earlier levels, so each
// subgraph is found exactly once, and all restrictions bound a later vertex from above by an
// earlier one. With degree-ordered vertex ids (relabel_by_degree), a bound by an adjacent earlier
// vertex turns its neighbour list into the short prefix of higher-degree neighbours (generalised
// orientation). Candidate sets are built by set operations hoisted to the earliest level where
// their inputs are known. The schedule explorer enumerates orders up to symmetry (only the
// lexicographically smallest order of each Aut(P)-class) and keeps the one of least predicted cost; where that
// order starts with a 4-clique, the four levels that start it are those the graph's counted triangles and 4-cliques
// price least (GraphStats::four_cliques).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/csr.hpp"
#include "graph/pattern.hpp"

namespace core::graph {

enum class Induced { edge, vertex };
Induced parse_induced(const std::string& s);  // "edge" | "vertex", else UsageError
const char* to_string(Induced m);

// Statistics of the (relabelled) data graph that the cost model needs.
struct GraphStats {
  // The graph these describe (graph_stats sets it; valid while that graph lives): plans that price
  // themselves by sampling it (apex.hpp) read it; null for stats made by hand.
  const Graph* graph = nullptr;
  double n = 0, m = 0;
  double degree_biased = 0;      // mean degree of an edge endpoint, sum d^2 / 2m
  double out_degree_biased = 0;  // mean count of smaller-id neighbours of an edge endpoint
  double closure = 0;            // P(a ~ b | a, b neighbours of one vertex), sampled wedges
  std::vector<double> label_fraction;  // fraction of vertices per label (labeled graphs)
  double max_degree = 0;               // bounds the inclusion-exclusion terms (Plan::iep)
  // Wedges from a root a, per root (mean over sampled roots; exact when every root is sampled): the
  // work of a pair cut's passes (Decomposition::pair_cut), which hub graphs make far smaller than
  // the walk counts (a hub's neighbours reach the same vertices again and again).
  struct Walks {
    double wedge_ends = 0;         // distinct y != a with a wedge a-w-y
    double wedge_end_scan = 0;     // sum over those y of deg(y)
    double wedge_end_scan_up = 0;  // sum over those y of |N(y) above a|
    // The steps of sum_pair_edges (a pair cut with joined edges) from a: its wedge walk below a (per
    // neighbour w, |N(w) below a| + 1), that walk's distinct ends, and per ordered triangle a-x-y the
    // part of N(y) below a (+ 1). Hubs make these far smaller than the walk and triangle counts that
    // degree and closure predict (as-22july06: 12x fewer scan steps), or larger (wiki-Vote: 2x).
    double wedge_walk_below = 0;
    double wedge_ends_below = 0;
    double triangle_scan_below = 0;
    // Per ordered triangle a-x-y, deg(y): the scans of a's joined pairs over every b (tip diamond tables).
    double triangle_scan = 0;
  } walks;
  // The walks a-w-y with w, y > a (exact): the steps of the passes that find each 4-cycle once at
  // its smallest vertex (cycle_tables.hpp, the 4-cycle's pair cut).
  double oriented_wedges = 0;
  // The triangles and 4-cliques of the graph, counted at their largest vertex from every root while that stays
  // under a budget, else from the roots counted until then (a stratified sample, scaled to all); < 0: not counted
  // (stats made by hand). The orders whose first four levels are a clique are ranked with as many partial matches
  // at levels 2 and 3 as these say, which the mean field's closure per level underestimates on hub graphs
  // (as-22july06's 4-cliques: by 2x to 175x by order).
  double triangles = -1, four_cliques = -1;
};
// One step of a walk that updates or reads a counter in an n-sized array at a scattered place (pair cuts,
// root wedge tables), in the plan cost model's units. Measured on the 5-cycle's pair cut (as-22july06,
// wiki-Vote, email-Enron, astro-ph): 3-5.6 ns per step, against 0.6-9 ns per unit of the enumerating plans
// (their model errs by graph); 4 keeps the pair cut on all four graphs, where it is 1.9-12x faster (the old
// price, m d (2 + d) steps at 1 unit, was 3-18x the steps taken and enumerated on as-22july06).
constexpr double kPairWalkStep = 4;

// The kernel's work (gzk::intersection_work) for N(b) ∩ N(v) over v's neighbours b, or only over those with
// smaller ids (oriented): building rows or neighbourhood graphs from those intersections.
double neighbour_intersection_work(const Graph& g, Vertex v, bool oriented);

// effort scales the samples (wedges for the closure, walk budget): < 1 for quick estimates of many graphs.
GraphStats graph_stats(const Graph& g, std::uint64_t seed = 1, double effort = 1);

// One step building a later level's candidate set. alias reuses the set another target built at
// the same depth from identical inputs and bounds (common subexpression), src naming that target.
struct SetOp {
  enum class Kind : std::uint8_t { start, intersect, subtract, alias };
  Kind kind;
  int target;  // level whose candidate set this builds
  int src;     // level whose neighbour list is used (alias: the target whose set is reused)
};

enum class PairMode : std::uint8_t { none, independent, ordered };

struct Level {
  int vertex = 0;              // pattern vertex matched here
  int label = -1;              // required graph label, -1 for none
  std::vector<int> upper;      // earlier levels j with id(this) < id(j)
  std::vector<int> distinct;   // earlier levels whose vertex may equal a candidate: check !=
  std::vector<SetOp> ops;      // run after this level's vertex is chosen (targets are later)
};

struct Plan {
  Pattern pattern;
  Induced induced = Induced::edge;
  std::vector<int> order;                            // order[level] = pattern vertex
  std::vector<Level> levels;
  std::vector<std::pair<int, int>> restrictions;     // (a, b) pattern vertices: id(b) < id(a)
  std::uint64_t automorphisms = 1;
  double predicted_cost = 0;
  // The cost model's estimate of the matches (partial matches of the last level; set only when no
  // counting formula ends the plan).
  double predicted_matches = 0;
  // The weight's calls in a weighed enumeration (sum_over_matches), each a step it adds: the matches, or with
  // weigh_counts_last the partial matches of the level before the last.
  double predicted_calls = 0;
  std::uint64_t orders_considered = 0;
  // Closed-form counting of the last two levels a, b (edge-induced, unlabeled, b not adjacent to
  // a), right after level size()-3 is chosen. independent: no restriction between them, pairs
  // = |A||B| - |A ∩ B| (GraphPi's inclusion-exclusion for two vertices); ordered: b has a's
  // neighbours and bounds plus id(b) < id(a), so both range over one set S and pairs = C(|S|, 2).
  PairMode pairs = PairMode::none;
  // With independent pairs where a's set is exactly N(v_0) ∩ N(v_{k-3}) (no bounds) and b's set
  // B is fixed before level k-3 (no list or bound of level k-3): for x = v_{k-3}, |A| = |N(v_0) ∩
  // N(x)| comes from a table filled once per root by walking the wedges v_0-w-x, and |A ∩ B| =
  // |B' ∩ N(x)| from a table filled once per B (before the loop over level k-3) by walking the
  // neighbours of B' = B ∩ N(v_0) (B itself when b is adjacent to the root: root_common_filters_b);
  // no set is built or intersected per 3-vertex prefix. Chosen by the cost model when the tables
  // are cheaper than the intersections.
  bool root_common = false;
  // With independent pairs whose sets are fixed before level d = k-3 but for B's one intersection with N(x),
  // x = v_d, the only op at depth d (marked_pairs_applies): once per prefix of levels 0..d-1 the vertices of A
  // and of B's set before that op, S, are marked in a byte table; per x, one scan of N(x) against the marks
  // gives |B| = |S ∩ N(x)| and |A ∩ B|, and neither B nor A ∩ B is merged (q088: per wheel hub 5 and rim edge
  // 3-4, 1 ranges over N(5) ∩ N(3) and B = N(5) ∩ N(4) ∩ N(1)). S lies in N(v_o) for the level o that
  // marked_pairs_list_level names (-1: none adjacent to d), so count_matches scans the edge list N(v_o) ∩ N(x)
  // instead (EdgeCommonLists), where the lists fit. Chosen by the cost model; count_matches' interpreter only
  // (the JIT and the per-root and per-edge tables count the pairs per x).
  bool marked_pairs = false;
  // With independent pairs whose two ops at depth d = k-3 are A's and B's intersections with N(x), x = v_d, neither
  // set bounded by x (tabled_pairs_applies): once per prefix of levels 0..d-1, with S_A and S_B the sets before those
  // ops, one table holds |S_A ∩ N(y)|, |S_B ∩ N(y)| and |S_A ∩ S_B ∩ N(y)| for every y below x's bound, filled by
  // walking the neighbours of S_A and S_B (sets of common neighbours, where they are small, walk fewer lists than
  // the candidates x they would otherwise be merged with); per x three look-ups give |A|, |B| and |A ∩ B|, and
  // neither set is built (the
  // prism: per path 0-1-4 of its order, 2 in N(0) ∩ N(1) ∩ N(5) and 3 in N(0) ∩ N(4) ∩ N(5) for every 5 in N(4);
  // astro-ph 15.6 -> 6.7 s). Not priced by the cost model (on a hub graph the common neighbours walked are hubs):
  // raced (plan_race.hpp). count_matches' interpreter only, as marked_pairs; on a graph with a degree of
  // kPairTableDegreeLimit or more the pairs are merged.
  bool tabled_pairs = false;
  // The counted set (the last level's, with ordered pairs the pair's S, or an inclusion-exclusion tail set sized
  // alone, iep_sized) is exactly N(v_0) ∩ N(v_d) for the level d after which it is counted (d >= 1; unbounded,
  // unlabeled): its size is common(v_0, v_d) from the same per-root wedge table as root_common's |A|, less the
  // earlier vertices in it, and no list is merged per prefix (a tree of squares through an edge: q050's fan
  // tables; q089's N(3) ∩ N(4)). Chosen by the cost model (common_counted_level).
  bool common_count = false;
  // Inclusion-exclusion tail (GraphPi, Zhang et al. SC'20): the last `iep` (>= 3) levels are
  // pairwise non-adjacent and unlabeled or labeled alike; right after level size()-iep-1 is chosen
  // their candidate sets (the earlier levels' vertices and other labels removed) give the number of
  // injective tuples from intersection sizes (gzk::iep_count) instead of enumeration. The
  // restrictions among these levels are not applied: without them every subgraph is found exactly
  // iep_redundancy times, the order of the automorphism subgroup fixing the earlier levels'
  // vertices (the stabiliser chain leaves one coset of it), and each prefix's count is divided by it.
  // Restrictions bounding a tail vertex by an earlier one stay (they truncate its set). 0: none.
  int iep = 0;
  std::uint64_t iep_redundancy = 1;
  // Cliques counted in each root's local graph (local_graph.hpp: the oriented neighbourhood as
  // bitmap rows, the last level a popcount): for a complete unlabeled pattern whose every level is
  // bounded by all earlier ones, chosen by the cost model when the rows are cheaper than merging
  // lists (count_matches only, which ExecOptions::local_graph can override; listing, the JIT and
  // the per-root/per-edge tables run the levels).
  bool local_graph = false;
  // A weighed enumeration (sum_over_matches) fills each root's wedge table, c(v_0, x) = |N(v_0) ∩ N(x)| for every
  // x, and passes it to the weight (WeighedMatch::root_common): the common neighbours of the root and one other
  // vertex (a CountedSet of any label) are looked up, not merged per match (choose_plan_in_group).
  bool weigh_root_common = false;
  // The last level's vertex does not enter the weight (choose_plan_in_group's `weighed`): a weighed enumeration
  // counts its candidates, as count_matches does, and weighs each partial match once, times that count.
  bool weigh_counts_last = false;

  int size() const { return static_cast<int>(levels.size()); }
  // Stable digest of pattern, mode, order, restrictions and ops (names JIT cache entries).
  std::string hash() const;
  nlohmann::json to_json() const;
  // The plan as text: structure_text() (pattern, order, restrictions, levels, formulas) and the
  // predicted cost. The JIT embeds only the structure, so a kernel's source, and thus its cache
  // entry, does not change with the cost the plan race re-estimates on every run.
  std::string structure_text() const;
  std::string to_text() const;
};


// Whether the vertex of earlier level j lies in level t's complete candidate set, as far as the pattern
// decides it: 0 no (adjacent to t, whose set lies in its list, or bounding t), 1 yes when below t's bound
// (adjacent to every earlier neighbour of t, whose lists are intersected, and vertex-induced to no
// earlier non-neighbour, whose lists are subtracted; t unlabeled), -1 unknown (search).
int candidate_member(const Plan& plan, int t, int j);

// Whether Plan::marked_pairs may be set on `plan` (see there).
bool marked_pairs_applies(const Plan& plan);
// Whether Plan::tabled_pairs may be set on `plan` (see there).
bool tabled_pairs_applies(const Plan& plan);
// Plan::tabled_pairs packs its three counts in 21 bits each: they reach the largest degree at most.
constexpr std::size_t kPairTableDegreeLimit = std::size_t{1} << 21;
// For Plan::marked_pairs: an earlier level o < k-3 adjacent to level b = k-1 and to level k-3 (the lowest), so that
// b's set before level k-3 lies in N(v_o) and N(v_o) ∩ N(v_{k-3}) is an edge's list; -1 when there is none.
int marked_pairs_list_level(const Plan& plan);
// For Plan::marked_pairs: whether b's set before level k-3 is N(v_o) itself (o = marked_pairs_list_level, b's only
// earlier neighbour before k-3), so that B is a prefix of the edge's list, not marked.
bool marked_pairs_s_is_list(const Plan& plan);

// For a root_common plan, whether b's set B must be intersected with N(v_0) before its table is
// filled (b not adjacent to the root, so B need not lie in N(v_0)).
bool root_common_filters_b(const Plan& plan);

// The level whose set Plan::common_count sizes (size()-1, size()-2 with ordered pairs, or a tail level of
// Plan::iep in iep_sized), -1 where it does not apply.
int common_counted_level(const Plan& plan);

// The level of a plan (made with Formula::never) whose candidate set, as built, is the common neighbours of the
// most pattern vertices of `set` (a mask): its earlier neighbours, two or more, all lie in `set`, and it has no
// bounds or label (the earliest of the largest); -1 when none. The common neighbours of `set` are that set
// (WeighedMatch::sets) merged with the lists of the rest. Never the last level of a Plan::weigh_counts_last plan,
// whose set is counted, not built.
int common_set_level(const Plan& plan, std::uint32_t set);

// For a Plan::iep plan, bit i for each tail level size()-iep+i whose set only gzk::iep_count's sizes need (no
// intersection merges its list, no label filters it, no earlier vertex is searched in it) and whose last op, an
// intersection at the counting depth, is therefore counted, not written (or that aliases such a set).
std::uint32_t iep_sized(const Plan& plan);

// Bit j for each distinct earlier level j of t that candidate_member puts in t's set: a count of the
// set subtracts its vertex (when below the bound) without a search.
std::uint32_t certain_members(const Plan& plan, int t);

// For a Plan::iep tail: an earlier level whose vertex may lie in tail sets and must not be counted there,
// removed_from bit i naming tail level size()-iep+i, member[i] = candidate_member of that level.
struct IepRemoval {
  int level = 0;
  std::uint32_t removed_from = 0;
  std::array<std::int8_t, kMaxPatternSize> member{};
};
std::vector<IepRemoval> iep_removals(const Plan& plan);

// For a Plan::iep tail of t sets, each the intersection of its earlier neighbours' lists below its earlier bounds
// (parents[i], bounds[i]: masks over the levels before the tail) filtered by labels[i] (-1: none): per mask m of
// the tail sets, the smallest mask whose sets intersect to the same set (equal, or nested: N(3) ∩ N(4) ∩ N(5) lies
// in N(3) ∩ N(4), so their intersection is the first), which gzk::iep_count reuses instead of merging again.
using IepShares = std::array<std::uint8_t, 64>;
IepShares iep_shares(int t, const std::uint32_t* parents, const std::uint32_t* bounds, const int* labels);
IepShares iep_shares(const Plan& plan);

// Whether counting formulas replace the enumeration of the last levels (Plan::pairs,
// Plan::root_common, Plan::iep): by the cost model, never (enumerate; list), or always where the
// pattern's tail allows (the longest inclusion-exclusion tail of each order; tests and benchmarks).
enum class Formula : std::uint8_t { by_cost, never, always };
Formula parse_formula(const std::string& s);  // "auto" | "off" | "on", else UsageError
const char* to_string(Formula f);

// How make_plan decides Plan::root_common and Plan::common_count: by the cost model, or forced where they apply
// (tests).
enum class RootCommon : std::uint8_t { by_cost, never, where_applicable };

// Builds the plan for one given order (restrictions, ops, distinct checks, cost).
Plan make_plan(const Pattern& p, Induced induced, const std::vector<int>& order, const GraphStats& stats,
               RootCommon root_common = RootCommon::by_cost, Formula formula = Formula::by_cost);

// The predicted cost of sum_over_matches with `plan` (made with Formula::never): its enumeration,
// whose last level is only counted, plus an interpreter step and a weight call per call (Plan::predicted_calls; a
// decomposition's cut enumerated with its tables: the 2-path cut of the fork on as-22july06 weighs
// 2.5e7 matches, 0.22 CPU s, which the count alone priced at 2e5). `terms`: the weight's evaluations per call (a
// cut enumerated under a group larger than its weight's, Decomposition::cut_images).
double weighed_cost(const Plan& plan, double terms = 1);

// Enumerates connected orders up to symmetry (and for each, the counting formulas `formula`
// allows) and returns the cheapest plan; with Formula::always, the cheapest of those whose tail
// counted by a formula is longest. Every plan is priced in the mean field (stats without their clique counts);
// where the cheapest order starts with a 4-clique, so does the plan, with the four levels the counts price least.
Plan choose_plan(const Pattern& p, Induced induced, const GraphStats& stats, Formula formula = Formula::by_cost);

// choose_plan with symmetry broken by `group` (a subgroup of Aut(p), identity first) instead of
// Aut(p), over the orders that start with the vertices `prefix`. Each match is then found once per
// orbit of `group`, and Plan::automorphisms is |group|. With `group` the pointwise stabiliser of
// the prefix, the count of matches with prefix (v, w) times |group| is the number of embeddings
// mapping the prefix to (v, w) (the per-vertex and per-edge tables of pattern decomposition).
// `counted_sets` (Formula::never): a weighed enumeration (sum_over_matches) whose weight counts the common neighbours
// of each set's images (a decomposition's components of one vertex attached to three or more cut vertices, or two
// non-adjacent ones): each order is priced with a look-up per match and a merge of the set's lists per partial
// match of the level placing its last vertex added, which predicted_cost includes; an order that would merge two
// or more lists per match is not taken (predicted_cost is infinite where every order would). A set of the root and
// one other vertex, of any label, is priced as a look-up in the root's wedge table instead, where that is cheaper
// (Plan::weigh_root_common). `weighed` (a mask of p's vertices): the vertices the weight reads; an order whose last
// vertex is unlabeled and not among them weighs its partial matches before that level, whose candidates are counted
// (Plan::weigh_counts_last). With counted sets or such vertices, the orders are chosen with the weight's calls
// priced (Plan::predicted_matches: the calls).
struct CountedSet {
  std::uint32_t vertices = 0;  // a mask of p's vertices
  bool any_label = true;       // the counted vertex is unlabeled (all common neighbours count)
};
Plan choose_plan_in_group(const Pattern& p, const std::vector<Perm>& group, Induced induced, const GraphStats& stats,
                          Formula formula, const std::vector<int>& prefix = {},
                          std::span<const CountedSet> counted_sets = {}, std::uint32_t weighed = ~0u);

}  // namespace core::graph
