// Restrictions, matching orders, set-operation schedules and the cost model (see plan.hpp).
#include "graph/plan.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "graph/set_ops.hpp"
#include "graph/triangle_tables.hpp"

namespace core::graph {

Induced parse_induced(const std::string& s) {
  if (s == "edge") return Induced::edge;
  if (s == "vertex") return Induced::vertex;
  throw UsageError("induced mode must be 'edge' or 'vertex', got '" + s + "'");
}

const char* to_string(Induced m) { return m == Induced::edge ? "edge" : "vertex"; }

Formula parse_formula(const std::string& s) {
  if (s == "auto") return Formula::by_cost;
  if (s == "off") return Formula::never;
  if (s == "on") return Formula::always;
  throw UsageError("formula must be 'auto', 'on' or 'off', got '" + s + "'");
}

const char* to_string(Formula f) { return f == Formula::by_cost ? "auto" : f == Formula::never ? "off" : "on"; }

namespace {

// GraphStats::walks from kWalkRoots roots drawn uniformly (every root when n <= kWalkRoots), or
// fewer once kWalkBudget list elements are visited (a root next to a hub of 10^6 neighbours); both
// scaled by graph_stats' effort (at least 4 roots).
constexpr std::uint64_t kWalkRoots = 64;
constexpr double kWalkBudget = 4e6;

GraphStats::Walks sample_walks(const Graph& g, Rng& rng, double effort) {
  const auto root_samples = static_cast<std::uint64_t>(std::max(4.0, std::round(kWalkRoots * effort)));
  const double budget = kWalkBudget * effort;
  GraphStats::Walks w;
  const Vertex n = g.n();
  if (n == 0) return w;
  const bool every = n <= root_samples;
  std::vector<std::uint8_t> seen(n, 0), in_a(n, 0);
  std::vector<Vertex> ends;
  const auto below = [&](Vertex v, Vertex a) {
    const auto nb = g.neighbors(v);
    return static_cast<double>(std::lower_bound(nb.begin(), nb.end(), a) - nb.begin());
  };
  double visited = 0;
  std::uint64_t roots = 0;
  for (; roots < (every ? n : root_samples) && visited < budget; ++roots) {
    const Vertex a = every ? static_cast<Vertex>(roots) : static_cast<Vertex>(rng.below(n));
    for (Vertex x : g.neighbors(a)) in_a[x] = 1;
    for (Vertex x : g.neighbors(a)) {
      visited += g.degree(x);
      w.wedge_walk_below += below(x, a) + 1;
      for (Vertex y : g.neighbors(x)) {
        if (in_a[y]) {
          w.triangle_scan_below += below(y, a) + 1;
          w.triangle_scan += static_cast<double>(g.degree(y));
        }
        if (y != a && !seen[y]) {
          seen[y] = 1;
          ends.push_back(y);
        }
      }
    }
    for (Vertex x : g.neighbors(a)) in_a[x] = 0;
    w.wedge_ends += static_cast<double>(ends.size());
    for (Vertex y : ends) {
      const auto nb = g.neighbors(y);
      w.wedge_end_scan += static_cast<double>(nb.size());
      w.wedge_end_scan_up += static_cast<double>(nb.end() - std::upper_bound(nb.begin(), nb.end(), a));
      w.wedge_ends_below += y < a ? 1 : 0;
      seen[y] = 0;
    }
    visited += static_cast<double>(ends.size());
    ends.clear();
  }
  for (double* x : {&w.wedge_ends, &w.wedge_end_scan, &w.wedge_end_scan_up, &w.wedge_walk_below, &w.wedge_ends_below,
                    &w.triangle_scan_below, &w.triangle_scan})
    *x /= static_cast<double>(roots);
  return w;
}

// GraphStats::triangles and four_cliques: every root v visited in a stratified order (a stride coprime to n through
// the degree-sorted ids) while the merged elements stay under kCliqueBudget x effort (2-3 ms); each clique counted
// at its largest vertex, from the lists below it (N-(v), the higher-degree neighbours, short on hub graphs). The
// samples of the benchmark's four graphs are within 7% (wiki-Vote) to 33% (astro-ph's 4-cliques) by seed, where the
// mean field's estimates of a 4-clique prefix are 2-175x off.
constexpr double kCliqueBudget = 1e6;

void count_cliques(const Graph& g, Rng& rng, double effort, GraphStats& s) {
  const Vertex n = g.n();
  s.triangles = s.four_cliques = 0;
  if (n == 0) return;
  std::uint64_t stride = static_cast<std::uint64_t>(0.6180339887 * n) | 1u;
  while (std::gcd(stride, static_cast<std::uint64_t>(n)) != 1) stride += 2;
  const std::uint64_t start = rng.below(n);
  const auto below = [&](Vertex v) {
    const auto nb = g.neighbors(v);
    return nb.first(static_cast<std::size_t>(std::lower_bound(nb.begin(), nb.end(), v) - nb.begin()));
  };
  std::vector<Vertex> common;
  double work = 0;
  std::uint64_t roots = 0;
  for (; roots < n && work < kCliqueBudget * effort; ++roots) {
    const auto v = static_cast<Vertex>((start + roots * stride) % n);
    const auto nv = below(v);
    for (Vertex a : nv) {
      const auto na = below(a);
      common.resize(std::min(nv.size(), na.size()) + gzk::kSlack);  // the kernel's vector stores run past the result
      common.resize(gzk::intersect(nv.data(), nv.size(), na.data(), na.size(), common.data()));
      work += static_cast<double>(nv.size() + na.size());
      s.triangles += static_cast<double>(common.size());
      for (Vertex b : common) {
        const auto nb = below(b);
        s.four_cliques += static_cast<double>(gzk::intersect_count(common.data(), common.size(), nb.data(), nb.size()));
        work += static_cast<double>(common.size() + nb.size());
      }
    }
  }
  const double scale = static_cast<double>(n) / static_cast<double>(roots);
  s.triangles *= scale;
  s.four_cliques *= scale;
}

}  // namespace

double neighbour_intersection_work(const Graph& g, Vertex v, bool oriented) {
  const auto nv = g.neighbors(v);
  double w = 0;
  for (Vertex b : nv) {
    if (oriented && b >= v) break;  // N+(v): the prefix
    w += gzk::intersection_work(static_cast<double>(nv.size()), g.degree(b));
  }
  return w;
}

GraphStats graph_stats(const Graph& g, std::uint64_t seed, double effort) {
  GraphStats s;
  s.graph = &g;
  s.n = g.n();
  s.m = static_cast<double>(g.m());
  s.max_degree = g.max_degree();
  double d2 = 0, dout = 0;
  for (Vertex v = 0; v < g.n(); ++v) {
    const auto nb = g.neighbors(v);
    const double d = static_cast<double>(nb.size());
    d2 += d * d;
    const double lower = static_cast<double>(std::lower_bound(nb.begin(), nb.end(), v) - nb.begin());
    dout += d * lower;
    // From each smaller neighbour a (the i-th of N(v)), the walks a-v-y go to the d - 1 - i ids above a.
    s.oriented_wedges += lower * (d - 1) - lower * (lower - 1) / 2;
  }
  const double ends = std::max(1.0, 2 * s.m);
  s.degree_biased = d2 / ends;
  s.out_degree_biased = std::max(1.0, dout / ends);
  // Closure: sample wedges centred at edge endpoints; count the closed ones.
  Rng rng(seed);
  int wedges = 0, closed = 0;
  const double tries = 20000 * effort, enough = 4000 * effort;
  for (int t = 0; t < tries && wedges < enough && !g.adj.empty(); ++t) {
    const EdgeIndex e = rng.below(g.adj.size());
    const Vertex v = g.adj[e];
    const auto nb = g.neighbors(v);
    if (nb.size() < 2) continue;
    const auto i = rng.below(nb.size()), j = rng.below(nb.size() - 1);
    const Vertex a = nb[i], b = nb[j >= i ? j + 1 : j];
    ++wedges;
    closed += g.has_edge(a, b) ? 1 : 0;
  }
  s.closure = std::clamp(wedges ? double(closed) / wedges : 0.0, 1e-3, 1.0);
  s.walks = sample_walks(g, rng, effort);
  count_cliques(g, rng, effort, s);
  if (g.labeled()) {
    for (auto l : g.labels) {
      if (static_cast<std::size_t>(l) >= s.label_fraction.size()) s.label_fraction.resize(l + 1, 0);
      s.label_fraction[l] += 1.0 / std::max(1.0, s.n);
    }
  }
  return s;
}

namespace {

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

double label_factor(const GraphStats& s, int label) {
  if (label < 0) return 1.0;
  if (static_cast<std::size_t>(label) >= s.label_fraction.size()) return 1e-6;
  return std::max(1e-6, s.label_fraction[label]);
}

// A plan in compact form, bit masks over levels: what the order explorer scores thousands of
// times without allocating; the winner is expanded into a Plan.
struct Schedule {
  int k = 0;
  Induced induced = Induced::edge;
  std::array<int, kMaxPatternSize> order{}, label{};
  std::array<std::uint32_t, kMaxPatternSize> adj{}, non{}, upper{};  // earlier levels only
  bool formulas = true;  // false: Formula::never, every level enumerated
  int iep = 0;           // Plan::iep

  int first(int t) const { return std::countr_zero(adj[t]); }
  // The inputs of target t's set up to depth d: equal signatures give equal sets.
  std::array<std::uint32_t, 4> signature(int t, int d) const {
    const std::uint32_t m = (2u << d) - 1;
    return {static_cast<std::uint32_t>(first(t)), adj[t] & m, induced == Induced::vertex ? non[t] & m : 0u,
            upper[t] & m};
  }
  // Calls f(SetOp) for the ops run at depth d, in the order the back-ends execute them.
  template <class F>
  void for_each_op(int d, F&& f) const {
    const bool vertex = induced == Induced::vertex;
    for (int t = d + 1; t < k; ++t) {
      const std::uint32_t bit = 1u << d;
      const bool changes = d == first(t) || (d > first(t) && ((adj[t] & bit) || (vertex && (non[t] & bit))));
      if (!changes) continue;
      int same = -1;
      for (int u = d + 1; u < t && same < 0; ++u)
        if (signature(u, d) == signature(t, d)) same = u;
      if (same >= 0) {
        f(SetOp{SetOp::Kind::alias, t, same});
      } else if (d == first(t)) {
        f(SetOp{SetOp::Kind::start, t, d});
        if (vertex)
          for (int j = 0; j < d; ++j)
            if ((non[t] >> j) & 1u) f(SetOp{SetOp::Kind::subtract, t, j});
      } else if (adj[t] & bit) {
        f(SetOp{SetOp::Kind::intersect, t, d});
      } else {
        f(SetOp{SetOp::Kind::subtract, t, d});
      }
    }
  }
  // See Plan::pairs.
  PairMode pairs() const {
    if (k < 3 || induced != Induced::edge || !formulas || iep) return PairMode::none;
    const int a = k - 2, b = k - 1;
    if (((adj[b] >> a) & 1u) || label[a] >= 0 || label[b] >= 0) return PairMode::none;
    if (!((upper[b] >> a) & 1u)) return PairMode::independent;
    if (adj[b] == adj[a] && upper[b] == (upper[a] | (1u << a))) return PairMode::ordered;
    return PairMode::none;
  }
  // The longest tail (>= 3 levels) that Plan::iep can count, 0 when none: pairwise non-adjacent
  // levels, edge-induced, at most gzk::kMaxIep, and every partial sum of the inclusion-exclusion
  // ((t-1)! max_degree^t) far inside the 128-bit range.
  int max_iep(const GraphStats& s) const {
    if (induced != Induced::edge || !formulas) return 0;
    int best = 0;
    double bits = 0;  // log2 (t-1)!
    for (int t = 2; t <= std::min(k - 1, gzk::kMaxIep); ++t) {
      const int level = k - t;
      bool independent = true;
      for (int j = level + 1; j < k; ++j) independent = independent && !((adj[j] >> level) & 1u);
      if (!independent) break;
      bits += std::log2(t - 1.0);
      if (bits + t * std::log2(s.max_degree + 2) > 120) break;
      if (t >= 3) best = t;
    }
    return best;
  }
  // A clique whose every level is bounded by all earlier ones (Plan::local_graph may count it).
  bool clique_chain() const {
    if (k < 3) return false;
    for (int t = 0; t < k; ++t) {
      const std::uint32_t earlier = (1u << t) - 1;
      if (label[t] >= 0 || adj[t] != earlier || upper[t] != earlier) return false;
    }
    return true;
  }
  bool edge(int x, int y) const { return x < y ? (adj[y] >> x) & 1u : (adj[x] >> y) & 1u; }
  // See candidate_member.
  int candidate_member(int t, int j) const {
    if (edge(t, j) || ((upper[t] >> j) & 1u)) return 0;
    if (label[t] >= 0) return -1;  // the set keeps one label: v_j may carry another
    for (int s = 0; s < t; ++s)
      if (s != j && (edge(s, t) ? !edge(j, s) : induced == Induced::vertex && edge(j, s))) return -1;
    return 1;
  }
  // See iep_shares.
  IepShares iep_share() const {
    const int first = k - iep;
    std::array<std::uint32_t, kMaxPatternSize> parents{}, bounds{};
    const std::uint32_t earlier = (1u << first) - 1;
    for (int i = 0; i < iep; ++i) {
      parents[i] = adj[first + i] & earlier;
      bounds[i] = upper[first + i] & earlier;
    }
    return iep_shares(iep, parents.data(), bounds.data(), label.data() + first);
  }
  // See Plan::iep_sized.
  std::uint32_t iep_sized() const {
    if (!iep) return 0;
    const int first = k - iep, d = first - 1;
    const IepShares share = iep_share();
    std::uint32_t read = 0;  // tail sets whose lists iep_count merges, filters by label or searches
    for (int m = 1; m < (1 << iep); ++m) {
      if ((m & (m - 1)) == 0 || share[m] != m) continue;
      const int low = m & -m, rest = share[m ^ low];
      read |= low | ((rest & (rest - 1)) == 0 ? rest : 0);
    }
    for (int i = 0; i < iep; ++i) {
      read |= label[first + i] >= 0 ? 1u << i : 0u;
      for (int j = 0; j < first; ++j) read |= candidate_member(first + i, j) < 0 ? 1u << i : 0u;
    }
    // The sets whose last op at depth d is an intersection can be counted instead, unless an alias of one is read;
    // an alias of a counted set takes its size.
    std::uint32_t sized = 0;
    for_each_op(d, [&](const SetOp& op) {
      if (op.kind == SetOp::Kind::intersect) sized |= 1u << (op.target - first);
    });
    for_each_op(d, [&](const SetOp& op) {
      if (op.kind == SetOp::Kind::alias && ((read >> (op.target - first)) & 1u)) sized &= ~(1u << (op.src - first));
    });
    sized &= ~read;
    for_each_op(d, [&](const SetOp& op) {
      if (op.kind == SetOp::Kind::alias && ((sized >> (op.src - first)) & 1u)) sized |= 1u << (op.target - first);
    });
    return sized;
  }
  // The depth after which the tail is counted: the last level's set at k-2, the pairs' at k-3, an
  // inclusion-exclusion tail's at k-iep-1.
  int counting_depth() const { return iep ? k - iep - 1 : pairs() != PairMode::none ? k - 3 : k - 2; }
  // The level whose set Plan::common_count may size, -1 when none: the counted set (the last level, the ordered
  // pair's S_{k-2}, or a tail set of Plan::iep counted by its size alone, Plan::iep_sized) is N(v_0) ∩ N(v_d), d
  // the counting depth >= 1, unbounded and unlabeled.
  int common_counted() const {
    if (induced != Induced::edge || !formulas) return -1;
    const int d = counting_depth();
    const std::uint32_t table_set = 1u | (1u << d), earlier = (2u << d) - 1;
    if (d < 1) return -1;
    if (iep) {
      const std::uint32_t sized = iep_sized();
      for (int t = d + 1; t < k; ++t)
        if (((sized >> (t - d - 1)) & 1u) && label[t] < 0 && adj[t] == table_set && !(upper[t] & earlier)) return t;
      return -1;
    }
    const PairMode pm = pairs();
    if (pm == PairMode::independent) return -1;
    const int t = d + 1;
    return label[t] < 0 && upper[t] == 0 && adj[t] == table_set ? t : -1;
  }
  // The pattern vertices of level l's earlier neighbours.
  std::uint32_t parents(int l) const {
    std::uint32_t out = 0;
    for (int j = 0; j < l; ++j)
      if ((adj[l] >> j) & 1u) out |= 1u << order[j];
    return out;
  }
  // See common_set_level (plan.hpp).
  int common_set_level(std::uint32_t set, bool counts_last) const {
    int best = -1;
    for (int l = 1; l < k - (counts_last ? 1 : 0); ++l) {
      const std::uint32_t p = parents(l);
      if ((p & ~set) == 0 && std::popcount(p) >= 2 && upper[l] == 0 && label[l] < 0 &&
          (best < 0 || std::popcount(p) > std::popcount(parents(best))))
        best = l;
    }
    return best;
  }
  // Whether Plan::root_common applies: A = N(v_0) ∩ N(v_d) unbounded, B fixed before d.
  bool root_common_applies() const {
    const int d = k - 3, a = k - 2, b = k - 1;
    if (d < 1 || pairs() != PairMode::independent) return false;
    return adj[a] == (1u | (1u << d)) && upper[a] == 0 && !(((adj[b] | upper[b]) >> d) & 1u);
  }
  // For independent pairs neither of whose sets is bounded by v_d, d = k-3 >= 1: the number of ops at depth d and
  // the tail sets they intersect with N(v_d) (bit 0: a's, bit 1: b's); {-1, 0} for any other plan.
  std::pair<int, std::uint32_t> pair_tail_ops() const {
    const int d = k - 3, a = k - 2, b = k - 1;
    if (d < 1 || pairs() != PairMode::independent || (((upper[a] | upper[b]) >> d) & 1u)) return {-1, 0};
    int ops = 0;
    std::uint32_t met = 0;
    for_each_op(d, [&](const SetOp& op) {
      ++ops;
      if (op.kind == SetOp::Kind::intersect) met |= 1u << (op.target - a);
    });
    return {ops, met};
  }
  // Whether Plan::marked_pairs applies: the only op at depth d = k-3 B's intersection with N(v_d).
  bool marked_pairs_applies() const { return pair_tail_ops() == std::pair<int, std::uint32_t>{1, 2u}; }
  // Whether Plan::tabled_pairs applies: the two ops at depth d = k-3 A's and B's intersections with N(v_d).
  bool tabled_pairs_applies() const { return pair_tail_ops() == std::pair<int, std::uint32_t>{2, 3u}; }
  // See marked_pairs_list_level.
  int marked_list_level() const {
    const std::uint32_t both = adj[k - 1] & adj[k - 3];
    return both ? std::countr_zero(both) : -1;
  }
  // See marked_pairs_s_is_list.
  bool marked_s_is_list() const {
    const int o = marked_list_level();
    return o >= 0 && (adj[k - 1] & ((1u << (k - 3)) - 1)) == (1u << o);
  }
};

// Restrictions of the stabiliser chain along the order, as upper-bound masks per level.
// `group` is scratch space (indices into autos).
void fill_restrictions(Schedule& s, const std::vector<Perm>& autos, const std::array<int, kMaxPatternSize>& level_of,
                       std::vector<std::uint32_t>& group) {
  group.resize(autos.size());
  for (std::size_t i = 0; i < autos.size(); ++i) group[i] = static_cast<std::uint32_t>(i);
  for (int l = 0; l < s.k && group.size() > 1; ++l) {
    const int v = s.order[l];
    std::uint32_t orbit = 0;
    for (auto gi : group) orbit |= 1u << autos[gi][v];
    orbit &= ~(1u << v);
    for (int u = 0; u < s.k; ++u)
      if ((orbit >> u) & 1u) s.upper[level_of[u]] |= 1u << l;  // id(u) < id(v)
    std::erase_if(group, [&](std::uint32_t gi) { return autos[gi][v] != v; });
  }
}

// The order's levels, labels and adjacency; no restrictions. level_of receives each vertex's level.
Schedule levels_of_order(const Pattern& p, Induced induced, const std::vector<int>& order,
                         std::array<int, kMaxPatternSize>& level_of) {
  Schedule s;
  s.k = p.size();
  s.induced = induced;
  level_of.fill(-1);
  if (static_cast<int>(order.size()) != s.k) throw UsageError("matching order has the wrong length");
  for (int l = 0; l < s.k; ++l) {
    if (order[l] < 0 || order[l] >= s.k || level_of[order[l]] >= 0) throw UsageError("matching order is not a permutation");
    level_of[order[l]] = l;
    s.order[l] = order[l];
    s.label[l] = p.label(order[l]);
  }
  for (int i = 1; i < s.k; ++i) {
    for (int j = 0; j < i; ++j) (p.has_edge(order[i], order[j]) ? s.adj[i] : s.non[i]) |= 1u << j;
    if (!s.adj[i]) throw UsageError("matching order: vertex " + std::to_string(order[i]) + " has no earlier neighbour");
  }
  return s;
}

Schedule make_schedule(const Pattern& p, Induced induced, const std::vector<int>& order, const std::vector<Perm>& autos,
                       std::vector<std::uint32_t>& scratch) {
  std::array<int, kMaxPatternSize> level_of{};
  Schedule s = levels_of_order(p, induced, order, level_of);
  fill_restrictions(s, autos, level_of, scratch);
  return s;
}

// A plan's schedule (restrictions from its levels; formulas on), for the questions both answer.
Schedule schedule_of(const Plan& plan) {
  std::array<int, kMaxPatternSize> level_of{};
  Schedule s = levels_of_order(plan.pattern, plan.induced, plan.order, level_of);
  for (int t = 0; t < s.k; ++t)
    for (int u : plan.levels[t].upper) s.upper[t] |= 1u << u;
  s.iep = plan.iep;
  return s;
}

// Whether levels 0..l are pairwise adjacent.
bool starts_with_clique(const Schedule& sc, int l) {
  if (sc.k <= l) return false;
  for (int j = 1; j <= l; ++j)
    if (sc.adj[j] != (1u << j) - 1) return false;
  return true;
}

// The partial matches of levels 0..l (l = 2, 3) where they are a clique and the stats count such cliques: each
// clique of the graph once per assignment of its vertices to the levels that keeps the restrictions among them,
// times the levels' label fractions; < 0 otherwise (the mean field's).
double clique_prefixes(const Schedule& sc, const GraphStats& s, int l) {
  const double cliques = l == 2 ? s.triangles : l == 3 ? s.four_cliques : -1;
  if (cliques < 0 || !starts_with_clique(sc, l)) return -1;
  std::array<int, 4> rank{0, 1, 2, 3};
  int kept = 0;
  do {
    bool ordered = true;
    for (int j = 1; j <= l; ++j)
      for (int i = 0; i < j; ++i)
        if ((sc.upper[j] >> i) & 1u) ordered = ordered && rank[j] < rank[i];
    kept += ordered ? 1 : 0;
  } while (std::next_permutation(rank.begin(), rank.begin() + l + 1));
  double labels = 1;
  for (int j = 0; j <= l; ++j) labels *= label_factor(s, sc.label[j]);
  return cliques * kept * labels;
}

// Predicted work: for every depth, the number of partial matches times the list lengths its
// set operations merge, plus the loops themselves. Lists bounded by an adjacent earlier vertex
// are oriented (the short prefix of higher-degree neighbours).
// With pairs, *root_common (when given) says whether the root table of Plan::root_common is the
// cheaper way to count them; for a clique chain *local_graph whether the roots' local graphs are
// (Plan::local_graph: per root, its rows cost one look-up, kLookup merged elements' worth, per
// oriented neighbour of each level-1 candidate; per deeper partial match one AND of D/64 words
// replaces a merge; triangles: the marked vertices of each level-1 vertex's prefix counted, without
// the interpreter's per-level steps). The cost returned is that of the cheaper way.
constexpr double kLookup = 1.0;
// The interpreter's step into a level below 1 per partial match (candidate bounds, distinct checks,
// the next level's set operations dispatched), in merged elements: measured ~8 (tailed triangle on
// wiki-Vote: 1.8 M level-3 steps cost more than the level-2 merges).
constexpr double kStep = 8.0;
// Plan::marked_pairs: a byte mark read or written at a vertex taken from a list. Priced as a scattered step
// (kPairWalkStep, 4), astro-ph's q081 and q088 kept their merges (6.3 and 5.5 s against 4.0 and 2.0 marked); at 2
// one pattern measured leaves a faster cut for the marks, q046 on wiki-Vote (4.0 -> 10.4 s; GraphPi > 60 s).
constexpr double kMarkStep = 2.0;
// With Plan::common_count possible, *common_count (when given) says whether it is cheaper: per root the same
// table, per prefix a look-up for the merge that builds the counted set.
// *level_matches (when given): [d] the partial matches of levels 0..d (those before a counting formula).
double predict_cost(const Schedule& sc, const GraphStats& s, bool* root_common = nullptr, bool* local_graph = nullptr,
                    double* matches = nullptr, bool* common_count = nullptr,
                    std::array<double, kMaxPatternSize>* level_matches = nullptr, bool* marked_pairs = nullptr) {
  const int k = sc.k;
  std::array<double, kMaxPatternSize> size{};
  double prefixes = s.n * label_factor(s, sc.label[0]);
  if (level_matches) (*level_matches)[0] = prefixes;
  double total = prefixes;
  double prefixes_before = prefixes;  // partial matches of the levels before the current depth
  const bool pairs = sc.pairs() != PairMode::none;
  if (root_common) *root_common = false;
  if (local_graph) *local_graph = false;
  if (common_count) *common_count = false;
  if (marked_pairs) *marked_pairs = false;
  const int counted = sc.common_counted();
  // The root tables of Plan::root_common and Plan::common_count: every root walks its wedges twice (fill, clear).
  const double root_tables = 4 * s.m * s.degree_biased * label_factor(s, sc.label[0]);
  // The change Plan::common_count makes: the tables, less per prefix the merge that builds the counted set
  // (a look-up and the membership tests instead); its steps and look-ups priced as scattered (kPairWalkStep),
  // as the pair cuts it competes with (K_{2,2} with a joined edge: at one unit a step it took the plan that
  // is 1.0-5.2x slower than the pair cut on the four graphs of the benchmark).
  double common_delta = 0;
  const auto choose_common = [&](double direct) {
    const bool common = counted >= 0 && common_delta < 0;
    if (common_count) *common_count = common;
    return common ? direct + common_delta : direct;
  };
  const bool clique = sc.clique_chain();
  const double words = std::max(1.0, s.out_degree_biased / 64);
  double local = total;  // the same loops with Plan::local_graph
  for (int d = 0; d + 1 < k; ++d) {
    double work = 1.0;
    double a_work = 0;  // at depth k-3: the work of building the set of level k-2
    double counted_work = 0;  // at depth counted-1: the work of building the counted set
    double b_before = 0;      // at depth k-3: the size of b's set before its op there (Plan::marked_pairs' S)
    sc.for_each_op(d, [&](const SetOp& op) {
      const double before = work;
      if (op.target == k - 1) b_before = size[op.target];
      const std::uint32_t up = sc.upper[op.target];
      const bool oriented = (up >> op.src) & 1u;
      const bool bounded = (up & ((2u << d) - 1)) != 0;
      const double len = oriented ? s.out_degree_biased : s.degree_biased * (bounded ? 0.5 : 1.0);
      switch (op.kind) {
        case SetOp::Kind::start:
          size[op.target] = len;
          work += 2;
          break;
        case SetOp::Kind::intersect:
          work += size[op.target] + len;
          size[op.target] = std::min(size[op.target], len) * s.closure;
          break;
        case SetOp::Kind::subtract:
          work += size[op.target] + len;
          size[op.target] *= (1 - s.closure);
          break;
        case SetOp::Kind::alias:
          size[op.target] = size[op.src];
          work += 1;
          break;
      }
      if (op.target == k - 2) a_work += work - before;
      if (op.target == counted) counted_work += work - before;
    });
    if (counted >= 0 && d == sc.counting_depth()) common_delta = kPairWalkStep * (root_tables + prefixes) - prefixes * (counted_work - 4);
    if (sc.iep && d == k - sc.iep - 1) {
      // Per prefix: the tail sets filtered, then one merge per distinct intersection of two or
      // more of them (iep_shares: equal or nested sets share theirs), then 3^t products.
      const int t = sc.iep, first = k - t;
      const IepShares share = sc.iep_share();
      std::array<double, 1 << gzk::kMaxIep> est{};
      double iep_work = std::pow(3.0, t);
      for (int i = 0; i < t; ++i) {
        est[1 << i] = size[first + i];
        iep_work += size[first + i] * 0.25;
      }
      for (int m = 1; m < (1 << t); ++m) {
        if ((m & (m - 1)) == 0) continue;
        if (share[m] != m) {
          est[m] = est[share[m]];
          continue;
        }
        const int low = m & -m, rest = m ^ low;
        iep_work += est[low] + est[rest];
        est[m] = std::min(est[low], est[rest]) * s.closure;
      }
      // The table of a tail set sized alone is taken where it saves work, but the plan keeps the cost of merging
      // that set: the mean-field model underprices the merges left beside the table (q049 on as-22july06: a hub's
      // list merged per wedge; priced below its decomposition with the table, it took 1.6 s against 0.53 s).
      const double cost = total + prefixes * (work + iep_work);
      choose_common(cost);
      return cost;
    }
    if (pairs && d == k - 3) {
      const double direct = total + prefixes * (work + size[k - 2] + size[k - 1]);
      double cost = direct;
      if (!sc.root_common_applies()) {
        cost = choose_common(direct);
      } else {
        // The tables: the root's, and every prefix of levels 0..d-1 walks the neighbours of B (of B ∩
        // N(v_0), merged first, when b is not adjacent to the root) twice; per prefix, table look-ups and
        // membership tests.
        const bool filtered = !(sc.adj[k - 1] & 1u);
        const double b = size[k - 1] * (filtered ? s.closure : 1.0);
        const double filter = filtered ? size[k - 1] + s.degree_biased : 0.0;
        const double tables = root_tables + prefixes_before * (filter + 2 * b * s.degree_biased);
        const double common = total + tables + prefixes * (work - a_work + 4);
        if (root_common) *root_common = common < direct;
        cost = std::min(direct, common);
      }
      if (sc.marked_pairs_applies()) {
        // Per prefix of levels 0..d-1, A and S marked and cleared; per x = v_d, a binary search for the edge's
        // slot and the scan of its list (a fraction closure of N(x)), or without lists the scan of N(x):
        // scattered reads.
        const double lists = sc.marked_list_level() >= 0 ? edge_common_lists_cost(s, kTriangleListBytes)
                                                         : std::numeric_limits<double>::infinity();
        const double scan = std::isfinite(lists)
                                ? s.closure * std::max(0.0, s.degree_biased - 1) + std::log2(s.degree_biased + 1)
                                : s.degree_biased;
        const double s_marks = std::isfinite(lists) && sc.marked_s_is_list() ? 0.0 : b_before;
        const double marked = total + (std::isfinite(lists) ? lists : 0.0) +
                              prefixes_before * kMarkStep * 2 * (size[k - 2] + s_marks) +
                              prefixes * (kMarkStep * scan + 4);
        if (marked < cost) {
          if (marked_pairs) *marked_pairs = true;
          if (root_common) *root_common = false;
          if (common_count) *common_count = false;
          cost = marked;
        }
      }
      return cost;
    }
    total += prefixes * work;
    const int next = d + 1;
    // Level 1 ranges over the root's list: 2m (m when the root bounds it: the oriented prefixes)
    // prefixes in all. The lists merged later are size-biased (a vertex reached along an edge), the
    // count of level-1 vertices per root is not: n * degree_biased overpriced every plan with a
    // per-root loop over a full neighbourhood (per-vertex tables: ~14x on email-Enron).
    const double roots_list = (sc.upper[1] & 1u) ? s.m / std::max(1.0, s.n) : 2 * s.m / std::max(1.0, s.n);
    double cand = (d == 0 ? roots_list : size[next]) * label_factor(s, sc.label[next]);
    // Each bound not already applied through an oriented list halves the candidates.
    const std::uint32_t unoriented = sc.upper[next] & ~(std::uint32_t(1) << sc.first(next));
    cand *= std::pow(0.5, std::popcount(unoriented));
    // Per level-1 vertex a look-up per oriented neighbour: the rows, or for triangles the marked count.
    if (clique && d == 0) local += prefixes * (2 + cand * s.out_degree_biased * kLookup);
    if (clique && d > 0 && k > 3) local += prefixes * (words + 1);
    prefixes_before = prefixes;
    const double cliques = clique_prefixes(sc, s, next);
    prefixes = cliques >= 0 ? std::max(cliques, 1e-9) : prefixes * std::max(cand, 1e-9);
    if (level_matches) (*level_matches)[next] = prefixes;
    if (d + 2 < k) {
      total += prefixes * (d == 0 ? 1 : kStep);
      local += prefixes;
    }
  }
  if (matches) *matches = prefixes;
  if (clique && local < total) {
    if (local_graph) *local_graph = true;
    return local;
  }
  return choose_common(total);
}

// The number of automorphisms fixing the vertices of levels 0..levels-1 pointwise.
std::uint64_t stabiliser_order(const std::vector<Perm>& autos, const Schedule& sc, int levels) {
  return static_cast<std::uint64_t>(std::count_if(autos.begin(), autos.end(), [&](const Perm& a) {
    for (int l = 0; l < levels; ++l)
      if (a[sc.order[l]] != sc.order[l]) return false;
    return true;
  }));
}

// The formulas of one order: the cheapest tail (Formula::by_cost: none too, as a pair formula can
// cost more than enumerating the last level) or the longest (always) among pairs/root tables and
// inclusion-exclusion tails; none for Formula::never.
Schedule with_formula(Schedule sc, Formula formula, const GraphStats& stats, double* cost) {
  sc.formulas = formula != Formula::never;
  sc.iep = 0;
  const int longest = sc.max_iep(stats);
  double best = predict_cost(sc, stats);
  if (formula == Formula::always && longest) {
    sc.iep = longest;
    best = predict_cost(sc, stats);
  } else if (formula == Formula::by_cost) {
    int best_t = 0;
    for (int t = 3; t <= longest; ++t) {
      sc.iep = t;
      const double c = predict_cost(sc, stats);
      if (c < best) {
        best = c;
        best_t = t;
      }
    }
    sc.iep = best_t;
    if (!best_t && sc.pairs() != PairMode::none) {
      Schedule plain = sc;
      plain.formulas = false;
      const double c = predict_cost(plain, stats);
      if (c < best) {
        best = c;
        sc = plain;
      }
    }
  }
  if (cost) *cost = best;
  return sc;
}

Plan expand(const Pattern& p, const Schedule& sc, const std::vector<Perm>& autos, const GraphStats& stats) {
  const std::uint64_t automorphisms = autos.size();
  const int k = sc.k;
  Plan plan;
  plan.pattern = p;
  plan.induced = sc.induced;
  plan.order.assign(sc.order.begin(), sc.order.begin() + k);
  plan.automorphisms = automorphisms;
  plan.levels.resize(k);
  // less[a] bit b: id at level a < id at level b is implied (transitively) by the restrictions.
  std::array<std::uint32_t, kMaxPatternSize> less = sc.upper;
  for (int m = 0; m < k; ++m)
    for (int a = 0; a < k; ++a)
      if ((less[a] >> m) & 1u) less[a] |= less[m];
  for (int i = 0; i < k; ++i) {
    Level& L = plan.levels[i];
    L.vertex = sc.order[i];
    L.label = sc.label[i];
    for (int j = 0; j < i; ++j) {
      if ((sc.upper[i] >> j) & 1u) {
        L.upper.push_back(j);
        plan.restrictions.emplace_back(sc.order[j], sc.order[i]);
      }
      if (((sc.non[i] >> j) & 1u) && !((less[i] >> j) & 1u) && !((less[j] >> i) & 1u)) L.distinct.push_back(j);
    }
    sc.for_each_op(i, [&](const SetOp& op) { L.ops.push_back(op); });
  }
  std::sort(plan.restrictions.begin(), plan.restrictions.end());
  plan.pairs = sc.pairs();
  plan.iep = sc.iep;
  if (sc.iep) plan.iep_redundancy = stabiliser_order(autos, sc, k - sc.iep);
  plan.predicted_cost =
      predict_cost(sc, stats, &plan.root_common, &plan.local_graph, &plan.predicted_matches, &plan.common_count, nullptr,
                   &plan.marked_pairs);
  plan.predicted_calls = plan.predicted_matches;
  plan.orders_considered = 1;
  return plan;
}

// What counting the common neighbours of each set in `sets` adds to a weighed enumeration by sc: per match a
// look-up, and per partial match of the level placing the set's last vertex, the merge of the set's whole lists
// (the following matches of that prefix look the count up), from the set a level built of the common neighbours of
// part of it (common_set_level), none where an earlier set is the same. partial[l]: predict_cost's partial matches
// of levels 0..l; `matches` estimates the full matches: the mean field gives orders of one pattern estimates 100x
// apart (K4 with three vertices bounded), so the caller takes the largest over its orders (`matches`: the weight's
// calls, fewer where the last level is counted: counts_last). The sets of the root and one other vertex are instead
// looked up in the root's wedge table where the tables and the scattered look-ups cost less than their merges
// (root_table set).
double counted_sets_cost(const Schedule& sc, const GraphStats& s, std::span<const CountedSet> sets,
                         const std::array<double, kMaxPatternSize>& partial, double matches, bool counts_last,
                         bool& root_table) {
  double merged = 0, looked_up = 0, cost = 0;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const std::uint32_t set = sets[i].vertices;
    const bool lookup = sets[i].any_label && std::popcount(set) == 2 && ((set >> sc.order[0]) & 1u);
    int last = 0;
    for (int l = 0; l < sc.k; ++l)
      if ((set >> sc.order[l]) & 1u) last = l;
    // The merges left after the largest part built by a level (its set's size estimated as its merges'), none
    // where an earlier set is the same.
    const int level = sc.common_set_level(set, counts_last);
    const int built = level < 0 ? 1 : std::popcount(sc.parents(level));
    const auto earlier = sets.first(i);
    const bool again = std::any_of(earlier.begin(), earlier.end(), [&](const CountedSet& e) { return e.vertices == set; });
    // Two or more merges per match are not taken: the estimates of the matches are least reliable there (r26, a K5
    // cut merging four and five hub lists per match on as-22july06, was priced below its plan and took 11x longer).
    const int weighed_last = sc.k - (counts_last ? 2 : 1);  // the level whose every partial match is weighed
    if (!again && std::popcount(set) - built >= 2 && last == weighed_last) return std::numeric_limits<double>::infinity();
    double size = s.degree_biased, merge = 0;
    for (int j = 1; j < std::popcount(set) && !again; ++j) {
      if (j >= built) merge += gzk::intersection_work(size, s.degree_biased);
      size = std::min(size, s.degree_biased) * s.closure;
    }
    const double merges = last == weighed_last ? matches : std::min(partial[last], matches);
    cost += matches * kLookup;
    (lookup ? merged : cost) += merges * merge;
    if (lookup) looked_up += matches * kPairWalkStep;
  }
  // The root tables as Plan::common_count's: every root walks its wedges twice (fill, clear).
  const double tables = kPairWalkStep * 4 * s.m * s.degree_biased * label_factor(s, sc.label[0]);
  root_table = looked_up > 0 && tables + looked_up < merged;
  return cost + (root_table ? tables + looked_up : merged);
}

}  // namespace

double weighed_cost(const Plan& plan, double terms) {
  return plan.predicted_cost + kStep * terms * plan.predicted_calls;
}

namespace {

// The stats without the counted cliques: the plans' prices stay in the mean field that the decompositions, apexes
// and races were measured in (counted there, they took plans 1.2-8x slower: a K4 cut weighed per image, q074 and
// q086 on as-22july06, q059 on email-Enron, s005's pendant path on as-22july06), while the counted cliques rank
// the orders of one plain plan.
GraphStats mean_field(const GraphStats& stats) {
  GraphStats s = stats;
  s.triangles = s.four_cliques = -1;
  return s;
}

}  // namespace

Plan make_plan(const Pattern& p, Induced induced, const std::vector<int>& order, const GraphStats& stats,
               RootCommon root_common, Formula formula) {
  const auto autos = automorphisms(p);
  std::vector<std::uint32_t> scratch;
  const GraphStats priced = mean_field(stats);
  const Schedule sc = with_formula(make_schedule(p, induced, order, autos, scratch), formula, priced, nullptr);
  Plan plan = expand(p, sc, autos, priced);
  if (root_common != RootCommon::by_cost) {
    plan.root_common = root_common == RootCommon::where_applicable && sc.root_common_applies();
    plan.common_count = root_common == RootCommon::where_applicable && sc.common_counted() >= 0;
    plan.marked_pairs = false;
  }
  return plan;
}

Plan choose_plan(const Pattern& p, Induced induced, const GraphStats& stats, Formula formula) {
  if (!p.connected()) throw UsageError("pattern is not connected");
  return choose_plan_in_group(p, automorphisms(p), induced, stats, formula);
}

Plan choose_plan_in_group(const Pattern& p, const std::vector<Perm>& autos, Induced induced, const GraphStats& stats,
                          Formula formula, const std::vector<int>& prefix,
                          std::span<const CountedSet> counted_sets, std::uint32_t weighed) {
  const int k = p.size();
  Schedule best;
  double best_cost = std::numeric_limits<double>::infinity();
  int best_tail = -1;  // Formula::always: the longest tail counted by a formula wins, then the cost
  std::uint64_t considered = 0;
  const std::uint32_t vertices = (1u << k) - 1;
  const bool weigh = !counted_sets.empty() || (weighed & vertices) != vertices;  // orders priced with the weight's calls
  // Every order is priced in the mean field. Where a plain plan's cheapest order starts with a 4-clique, the orders
  // that start with one are ranked again with the graph's triangles and 4-cliques counted (GraphStats): the four
  // levels of the cheapest of them start the plan, the rest of its order the mean field's cheapest after them, at
  // the mean field's price and estimate of matches of its own first choice (which decompositions, apexes and races
  // were measured against). Orders that close a 4-clique later keep the mean field's estimate there, so they are
  // not compared with counted ones; nor are the levels after the clique (the counted prefixes weigh the mean
  // field's per-prefix terms against its per-level ones as they were never measured: q086 on astro-ph took pairs
  // 1.9x slower than its marked pairs so).
  const GraphStats priced = mean_field(stats);
  const bool rank_cliques = !weigh && stats.four_cliques >= 0;
  Schedule clique_best;
  int clique_tail = -1;
  double clique_cost = std::numeric_limits<double>::infinity();
  // Whether sc (an order's schedule with its formula) beats the best so far, which it then becomes.
  const auto takes = [&](const Schedule& sc, double cost, int& tail_so_far, double& cost_so_far) {
    const int tail = formula != Formula::always ? 0 : sc.iep ? sc.iep : sc.pairs() != PairMode::none ? 2 : 0;
    if (tail < tail_so_far || (tail == tail_so_far && cost >= cost_so_far)) return false;
    tail_so_far = tail;
    cost_so_far = cost;
    return true;
  };
  // With counted_sets, the orders (their plan cost and partial matches per level) priced once the largest estimate
  // of the full matches is known.
  struct CountedOrder {
    Schedule sc;
    double cost;
    std::array<double, kMaxPatternSize> partial;
  };
  std::vector<CountedOrder> counted;
  double full = 0;
  std::vector<int> order;
  std::vector<std::uint32_t> scratch;
  std::uint32_t used = 0;
  // stab: indices of the automorphisms fixing the current prefix pointwise.
  auto extend = [&](auto&& self, const std::vector<std::uint32_t>& stab) -> void {
    const int l = static_cast<int>(order.size());
    if (l == k) {
      double cost = 0;
      const Schedule base = make_schedule(p, induced, order, autos, scratch);
      const Schedule sc = with_formula(base, formula, priced, &cost);
      ++considered;
      if (weigh) {
        CountedOrder& c = counted.emplace_back(CountedOrder{sc, cost, {}});
        predict_cost(sc, priced, nullptr, nullptr, nullptr, nullptr, &c.partial);
        full = std::max(full, c.partial[k - 1]);
        return;
      }
      if (takes(sc, cost, best_tail, best_cost)) best = sc;
      if (rank_cliques && starts_with_clique(base, 3)) {
        double with_cliques = 0;
        const Schedule ranked = with_formula(base, formula, stats, &with_cliques);
        if (takes(ranked, with_cliques, clique_tail, clique_cost)) clique_best = ranked;
      }
      return;
    }
    std::uint32_t reach = 0;
    for (int v : order) reach |= p.neighbor_mask(v);
    for (int x = 0; x < k; ++x) {
      if ((used >> x) & 1u) continue;
      if (l > 0 && !((reach >> x) & 1u)) continue;
      if (l < static_cast<int>(prefix.size()) && x != prefix[l]) continue;
      // Keep x only when it is the smallest vertex of its orbit under the stabiliser of the prefix:
      // then the order is the lexicographically smallest of its Aut(P)-class.
      bool smallest = true;
      for (auto gi : stab) smallest = smallest && autos[gi][x] >= x;
      if (!smallest) continue;
      std::vector<std::uint32_t> next;
      for (auto gi : stab)
        if (autos[gi][x] == x) next.push_back(gi);
      order.push_back(x);
      used |= 1u << x;
      self(self, next);
      used &= ~(1u << x);
      order.pop_back();
    }
  };
  std::vector<std::uint32_t> all(autos.size());
  for (std::size_t i = 0; i < autos.size(); ++i) all[i] = static_cast<std::uint32_t>(i);
  extend(extend, all);
  // Where no order counts the sets at a finite price, the cheapest plan, priced infinite.
  double counted_cost = 0, best_total = std::numeric_limits<double>::infinity(), best_calls = 0;
  bool root_table = false, counts_last = false;
  for (const auto& [sc, cost, partial] : counted) {
    // The weight's calls: every match, or with the last level counted its prefixes with candidates, as many fewer
    // as the order's own estimates say.
    const bool last = !((weighed >> sc.order[k - 1]) & 1u) && sc.label[k - 1] < 0;
    const double calls = !last || partial[k - 1] <= 0 ? full : std::min(full, partial[k - 2] * full / partial[k - 1]);
    bool table = false;
    const double c = counted_sets_cost(sc, priced, counted_sets, partial, calls, last, table);
    const double total = cost + c + kStep * calls;
    if (total < best_total || (total == best_total && cost < best_cost)) {
      best_total = total;
      best_cost = cost;
      counted_cost = c;
      best_calls = calls;
      root_table = table;
      counts_last = last;
      best = sc;
    }
  }
  Plan plan = expand(p, best, autos, priced);
  if (rank_cliques && clique_tail == best_tail && starts_with_clique(best, 3) &&
      !std::equal(best.order.begin(), best.order.begin() + 4, clique_best.order.begin())) {
    const std::vector<int> start(clique_best.order.begin(), clique_best.order.begin() + 4);
    const Plan mean_field_pick = std::exchange(plan, choose_plan_in_group(p, autos, induced, priced, formula, start));
    plan.predicted_cost = mean_field_pick.predicted_cost;
    plan.predicted_matches = mean_field_pick.predicted_matches;
    plan.predicted_calls = mean_field_pick.predicted_calls;
  }
  plan.orders_considered = considered;
  if (weigh) {
    plan.predicted_cost += counted_cost;
    // The order's own estimate of its matches (as weighed_cost prices other plans), scaled as its calls were.
    if (full > 0) plan.predicted_calls = plan.predicted_matches * best_calls / full;
    plan.weigh_root_common = root_table;
    plan.weigh_counts_last = counts_last;
  }
  return plan;
}

int candidate_member(const Plan& plan, int t, int j) { return schedule_of(plan).candidate_member(t, j); }

int common_counted_level(const Plan& plan) { return schedule_of(plan).common_counted(); }

bool marked_pairs_applies(const Plan& plan) {
  return plan.pairs == PairMode::independent && schedule_of(plan).marked_pairs_applies();
}

bool tabled_pairs_applies(const Plan& plan) {
  return plan.pairs == PairMode::independent && schedule_of(plan).tabled_pairs_applies();
}

int marked_pairs_list_level(const Plan& plan) { return schedule_of(plan).marked_list_level(); }

bool marked_pairs_s_is_list(const Plan& plan) { return schedule_of(plan).marked_s_is_list(); }

int common_set_level(const Plan& plan, std::uint32_t set) {
  return schedule_of(plan).common_set_level(set, plan.weigh_counts_last);
}

std::uint32_t iep_sized(const Plan& plan) { return schedule_of(plan).iep_sized(); }

std::uint32_t certain_members(const Plan& plan, int t) {
  std::uint32_t certain = 0;
  for (int j : plan.levels[t].distinct) certain |= candidate_member(plan, t, j) == 1 ? 1u << j : 0u;
  return certain;
}

std::vector<IepRemoval> iep_removals(const Plan& plan) {
  const int first = plan.size() - plan.iep;
  std::vector<IepRemoval> out;
  for (int j = 0; j < first; ++j) {
    IepRemoval r;
    r.level = j;
    for (int i = 0; i < plan.iep; ++i) {
      r.member[i] = static_cast<std::int8_t>(candidate_member(plan, first + i, j));
      if (r.member[i] != 0) r.removed_from |= 1u << i;
    }
    if (r.removed_from) out.push_back(r);
  }
  return out;
}

IepShares iep_shares(int t, const std::uint32_t* parents, const std::uint32_t* bounds, const int* labels) {
  static_assert(std::tuple_size_v<IepShares> == (1u << gzk::kMaxIep));
  constexpr int kConflict = -2;  // two labels: an empty intersection
  struct Key {
    std::uint32_t parents = 0, bounds = 0;
    int label = -1;
    bool operator==(const Key&) const = default;
  };
  std::array<Key, 1 << gzk::kMaxIep> key{};
  IepShares share{};
  for (int m = 1; m < (1 << t); ++m) {
    const int i = std::countr_zero(static_cast<unsigned>(m));
    const Key& rest = key[m & (m - 1)];
    Key& k = key[m];
    k.parents = rest.parents | parents[i];
    k.bounds = rest.bounds | bounds[i];
    k.label = labels[i] < 0 ? rest.label : rest.label == -1 || rest.label == labels[i] ? labels[i] : kConflict;
    if (rest.label == kConflict) k.label = kConflict;
    share[m] = static_cast<std::uint8_t>(m);
    for (int s = 1; s < m; ++s)
      if (key[s] == k) {
        share[m] = static_cast<std::uint8_t>(s);
        break;
      }
  }
  return share;
}

IepShares iep_shares(const Plan& plan) {
  const int t = plan.iep, first = plan.size() - t;
  std::array<std::uint32_t, kMaxPatternSize> parents{}, bounds{};
  std::array<int, kMaxPatternSize> labels{};
  for (int i = 0; i < t; ++i) {
    const Level& L = plan.levels[first + i];
    for (int j = 0; j < first; ++j)
      if (plan.pattern.has_edge(plan.order[j], L.vertex)) parents[i] |= 1u << j;
    for (int u : L.upper)
      if (u < first) bounds[i] |= 1u << u;
    labels[i] = L.label;
  }
  return iep_shares(t, parents.data(), bounds.data(), labels.data());
}

bool root_common_filters_b(const Plan& plan) {
  return !plan.pattern.has_edge(plan.order.front(), plan.order.back());
}

std::string Plan::hash() const {
  std::ostringstream os;
  os << "gzplan-v3|" << pattern.to_string() << "|" << to_string(induced) << "|";
  for (const Level& L : levels) {
    os << "L" << L.vertex << ":" << L.label << ":";
    for (int u : L.upper) os << "u" << u;
    for (int u : L.distinct) os << "d" << u;
    for (const SetOp& op : L.ops) os << "o" << int(op.kind) << "." << op.target << "." << op.src;
    os << ";";
  }
  os << "pairs" << static_cast<int>(pairs) << (root_common ? "r" : "") << (marked_pairs ? "m" : "")
     << (tabled_pairs ? "t" : "") << (common_count ? "c" : "")
     << (weigh_root_common ? "w" : "") << (weigh_counts_last ? "l" : "");
  if (iep) os << "iep" << iep << "/" << iep_redundancy;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(os.str())));
  return hex;
}

nlohmann::json Plan::to_json() const {
  nlohmann::json j;
  j["pattern"] = pattern.to_string();
  j["pattern_vertices"] = pattern.size();
  j["induced"] = to_string(induced);
  j["order"] = order;
  nlohmann::json r = nlohmann::json::array();
  for (const auto& [a, b] : restrictions) r.push_back({{"smaller", b}, {"larger", a}});
  j["restrictions"] = r;
  j["automorphisms"] = automorphisms;
  j["predicted_cost"] = predicted_cost;
  j["orders_considered"] = orders_considered;
  nlohmann::json lv = nlohmann::json::array();
  static const char* kinds[] = {"start", "intersect", "subtract", "alias"};
  for (const Level& L : levels) {
    nlohmann::json o = nlohmann::json::array();
    for (const SetOp& op : L.ops) o.push_back({{"op", kinds[int(op.kind)]}, {"target", op.target}, {"src", op.src}});
    lv.push_back({{"vertex", L.vertex}, {"label", L.label}, {"below", L.upper}, {"distinct_from", L.distinct}, {"ops", o}});
  }
  j["levels"] = lv;
  j["pairs"] = pairs == PairMode::none ? "none" : pairs == PairMode::independent ? "independent" : "ordered";
  j["root_common"] = root_common;
  j["marked_pairs"] = marked_pairs;
  j["tabled_pairs"] = tabled_pairs;
  j["common_count"] = common_count;
  j["weigh_root_common"] = weigh_root_common;
  j["weigh_counts_last"] = weigh_counts_last;
  j["local_graph"] = local_graph;
  if (iep) {
    std::vector<int> vertices(order.end() - iep, order.end());
    j["iep"] = {{"levels", iep}, {"vertices", vertices}, {"redundancy", iep_redundancy}};
  } else {
    j["iep"] = nullptr;
  }
  j["formula"] = iep ? "inclusion-exclusion" : root_common ? "pairs-root-tables" : pairs == PairMode::none ? "none" : "pairs";
  j["hash"] = hash();
  return j;
}

std::string Plan::structure_text() const {
  std::ostringstream os;
  static const char* kinds[] = {"S := N", "S &= N", "S -= N", "S := S"};
  os << "pattern " << pattern.to_string() << " (" << to_string(induced) << "-induced, |Aut| = " << automorphisms
     << ")\norder:";
  for (int v : order) os << " " << v;
  os << "\nrestrictions:";
  if (restrictions.empty()) os << " none";
  for (const auto& [a, b] : restrictions) os << " id(" << b << ")<id(" << a << ")";
  os << "\n";
  for (int l = 0; l < size(); ++l) {
    const Level& L = levels[l];
    os << "level " << l << ": vertex " << L.vertex;
    if (L.label >= 0) os << " label " << L.label;
    for (int u : L.upper) os << ", below level " << u;
    for (int u : L.distinct) os << ", != level " << u;
    for (const SetOp& op : L.ops) os << "; S" << op.target << " " << (kinds[int(op.kind)] + 2) << "(level " << op.src << ")";
    os << "\n";
  }
  if (pairs == PairMode::independent) os << "last two levels counted in closed form: |A||B| - |A & B|\n";
  if (root_common)
    os << "|A| = |N(level 0) & N(level " << size() - 3 << ")| and |A & B| = |B & N(level " << size() - 3
       << ")| from wedge tables, A not built\n";
  if (marked_pairs) {
    const int d = size() - 3, o = marked_pairs_list_level(*this);
    os << "A and S" << size() - 1 << " marked before level " << d << "; |B| and |A & B| counted in a scan of ";
    if (o >= 0) os << "N(level " << o << ") & N(level " << d << ") (edge lists where they fit, else ";
    os << "N(level " << d << ")" << (o >= 0 ? ")" : "") << ", B not built\n";
    if (marked_pairs_s_is_list(*this))
      os << "S" << size() - 1 << " = N(level " << o << "): with the lists, B is the list below its bound, S not marked\n";
  }
  if (tabled_pairs) {
    const int d = size() - 3;
    os << "|A|, |B| and |A & B| looked up per level-" << d << " vertex x in a table of |S" << size() - 2
       << " & N(x)|, |S" << size() - 1 << " & N(x)| and |S" << size() - 2 << " & S" << size() - 1
       << " & N(x)| filled before level " << d << ", A and B not built\n";
  }
  if (pairs == PairMode::ordered) os << "last two levels counted in closed form: |S|(|S|-1)/2\n";
  if (common_count) {
    const int t = common_counted_level(*this);
    const int d = schedule_of(*this).counting_depth();
    os << "|S" << t << "| = |N(level 0) & N(level " << d << ")| from the root's wedge table, S" << t << " not built\n";
  }
  if (weigh_root_common) os << "the root's wedge table, |N(level 0) & N(x)| for every x, passed to the weight\n";
  if (weigh_counts_last) os << "weighed per match of the first " << size() - 1 << " levels, times the last level's count\n";
  if (iep) {
    os << "last " << iep << " levels (pairwise non-adjacent) counted by inclusion-exclusion over their candidate sets, "
       << "restrictions among them dropped, divided by " << iep_redundancy << "\n";
    const std::uint32_t sized = iep_sized(*this);
    for (int i = 0; i < iep; ++i)
      if ((sized >> i) & 1u) os << "S" << size() - iep + i << " sized, not built\n";
  }
  if (local_graph)
    os << "cliques counted in each root's local graph: its oriented neighbours as bitmap rows, the last level a "
          "popcount\n";
  return os.str();
}

std::string Plan::to_text() const {
  std::ostringstream os;
  os << structure_text() << "predicted cost " << predicted_cost << " (" << orders_considered << " orders considered)\n";
  return os.str();
}

}  // namespace core::graph
