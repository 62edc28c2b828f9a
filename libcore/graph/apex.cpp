// Cone patterns counted in the neighbourhoods of their apex or the common neighbourhoods of their twin
// apexes (see apex.hpp).
#include "graph/apex.hpp"

#include <algorithm>
#include <limits>
#include <span>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "graph/cycle_tables.hpp"
#include "graph/set_ops.hpp"

namespace core::graph {

namespace {

constexpr Vertex kOutside = std::numeric_limits<Vertex>::max();

// Local graphs are counted in batches: the disjoint union of several by one count_with call (Q' is
// connected, so its embeddings in the union are those in the parts), where a call per graph cost ~2 us
// (most local graphs have a handful of vertices). With isolated vertices the factor (|H| - |Q'|)_k depends on
// the graph's size, so a batch then holds graphs of one size, and graphs of kAloneSize vertices or more are
// counted alone.
constexpr std::size_t kBatchSlots = std::size_t{1} << 15;  // vertices + edges of a batch before it is counted
constexpr std::size_t kAloneSize = 256;

struct Batch {
  std::vector<EdgeIndex> offsets{0};
  std::vector<Vertex> adj;
};

// Reused per thread: pos[x] = x's index in the set while its graph is built (kOutside otherwise), the
// intersections, the batches (by size with isolated vertices), and (twins) the common neighbours and the
// wedge walks.
struct alignas(64) LocalScratch {
  PopulatedVector<Vertex> pos;
  std::vector<Vertex> common;
  std::vector<Vertex> set;
  std::vector<Batch> batches;
  WedgeScratch wedges;
};

// Appends G[s] to the batch, vertex i being its first free id + i (s ascending, so the lists are too).
void append_induced(const Graph& g, std::span<const Vertex> s, LocalScratch& scr, Batch& out) {
  if (scr.pos.empty()) scr.pos.assign(g.n(), kOutside);
  const auto base = static_cast<Vertex>(out.offsets.size() - 1);
  for (std::size_t i = 0; i < s.size(); ++i) scr.pos[s[i]] = base + static_cast<Vertex>(i);
  scr.common.resize(s.size() + gzk::kSlack);  // the kernel's vector stores run past the result
  for (Vertex x : s) {
    const auto nb = g.neighbors(x);
    const std::size_t c = gzk::intersect(nb.data(), nb.size(), s.data(), s.size(), scr.common.data());
    for (std::size_t j = 0; j < c; ++j) out.adj.push_back(scr.pos[scr.common[j]]);
    out.offsets.push_back(out.adj.size());
  }
  for (Vertex x : s) scr.pos[x] = kOutside;
}

// G[s] alone.
Graph induced_graph(const Graph& g, std::span<const Vertex> s, LocalScratch& scr) {
  Batch b;
  append_induced(g, s, scr, b);
  Graph out;
  out.offsets = std::move(b.offsets);
  out.adj = std::move(b.adj);
  return out;
}

// N(x) ∩ N(y), ascending, in scr.set.
std::span<const Vertex> common_neighbours(const Graph& g, Vertex x, Vertex y, LocalScratch& scr) {
  const auto nx = g.neighbors(x), ny = g.neighbors(y);
  scr.set.resize(std::min(nx.size(), ny.size()) + gzk::kSlack);
  return {scr.set.data(), gzk::intersect(nx.data(), nx.size(), ny.data(), ny.size(), scr.set.data())};
}

[[noreturn]] void cone_overflow() { throw DataError("a cone pattern's partial sum exceeds 2^126"); }

// inj(Q, H) summed over the graphs H of the batch, all of `size` vertices when ap.isolated > 0 (any size
// otherwise): inj(Q', their union) (size - |Q'|)_k, Q' counted by ap.rest. The batch is emptied, its arrays
// kept.
unsigned __int128 batch_embeddings(Batch& b, std::size_t size, const ApexPlan& ap) {
  if (b.offsets.size() == 1) return 0;
  Graph u;
  u.offsets = std::move(b.offsets);
  u.adj = std::move(b.adj);
  unsigned __int128 inj = static_cast<unsigned __int128>(count_with(u, ap.rest, {})) * ap.rest.plan.automorphisms;
  b.offsets = u.offsets.release();
  b.adj = u.adj.release();
  b.offsets.assign(1, 0);
  b.adj.clear();
  const auto q = static_cast<std::size_t>(ap.rest.plan.pattern.size());
  for (int i = 0; i < ap.isolated; ++i)
    if (__builtin_mul_overflow(inj, static_cast<unsigned __int128>(size - q - i), &inj)) cone_overflow();
  return inj;
}

// Adds inj(Q, G[s]) to sum, through the thread's batches.
void add_local_graph(const Graph& g, std::span<const Vertex> s, const ApexPlan& ap, LocalScratch& scr,
                     unsigned __int128& sum) {
  const auto add = [&](unsigned __int128 x) {
    if (__builtin_add_overflow(sum, x, &sum)) cone_overflow();
  };
  if (ap.isolated && s.size() >= kAloneSize) {
    Batch alone;
    append_induced(g, s, scr, alone);
    return add(batch_embeddings(alone, s.size(), ap));
  }
  const std::size_t key = ap.isolated ? s.size() : 0;
  if (scr.batches.size() <= key) scr.batches.resize(ap.isolated ? kAloneSize : 1);
  Batch& b = scr.batches[key];
  append_induced(g, s, scr, b);
  if (b.offsets.size() + b.adj.size() >= kBatchSlots) add(batch_embeddings(b, key, ap));
}

// Counts what the thread's batches hold.
void flush_batches(const ApexPlan& ap, LocalScratch& scr, unsigned __int128& sum) {
  for (std::size_t key = 0; key < scr.batches.size(); ++key)
    if (__builtin_add_overflow(sum, batch_embeddings(scr.batches[key], key, ap), &sum)) cone_overflow();
}

// The fixed cost of one local graph in a batch, in plan units: with it the prices of q098 and q095 (twins) on
// as-22july06 and wiki-Vote came to 1.1-1.4 ns a unit.
constexpr double kPerLocalGraph = 100;
// Roots sampled for the price, and the effort of their local graphs' statistics (graph_stats): 16 of them at
// a sixteenth of the samples cost a few ms of planning on the hubs of email-Enron and wiki-Vote.
constexpr int kSamples = 16;
constexpr double kSampleEffort = 1.0 / 16;
// Twins: the pairs of one sampled root whose common neighbourhoods are built for the price (evenly spaced
// in its wedge ends), the rest of its pairs priced like them.
constexpr std::size_t kPairSamples = 32;

// The work of building G[N(h)], or (twins) of h's wedge walk below h: the weights roots are drawn by.
double root_work(const Graph& g, Vertex h, bool twins) {
  if (!twins) return neighbour_intersection_work(g, h, false);
  double w = g.degree(h);
  for (Vertex b : g.neighbors(h)) w += g.degree(b);
  return w;
}

// The building work of a local graph on the set s (its lists intersected with s).
double building_work(const Graph& g, std::span<const Vertex> s) {
  double w = 0;
  for (Vertex x : s) w += gzk::intersection_work(static_cast<double>(s.size()), g.degree(x));
  return w;
}

// One sampled root's price and its heaviest local graph.
struct RootPrice {
  double cost = 0;
  Graph heaviest;
  double heaviest_work = -1;
};

// h's neighbourhood graph: its building work and the graph.
RootPrice price_apex_root(const Graph& g, Vertex h, LocalScratch& scr) {
  RootPrice out;
  out.cost = out.heaviest_work = root_work(g, h, false);
  out.heaviest = induced_graph(g, g.neighbors(h), scr);
  return out;
}

// x's pairs: the wedge walk below x, and for each pair y with `need` common neighbours or more the
// intersection and building work of G[N(x) ∩ N(y)] (kPairSamples of them built, the others priced alike);
// the heaviest graph is that of the pair with the most common neighbours. Q''s counts are priced by the
// caller, in proportion to the pairs' squared common-neighbour counts (returned in *squares, the heaviest's
// in *heaviest_square).
RootPrice price_twin_root(const Graph& g, Vertex x, std::uint32_t need, LocalScratch& scr, double* squares,
                          double* heaviest_square) {
  RootPrice out;
  walk_wedges(g, x, x, scr.wedges);
  double steps = g.degree(x);
  std::vector<Vertex> pairs;
  Vertex heaviest = kOutside;
  *squares = 0;
  for (Vertex y : scr.wedges.ends) {
    const std::uint32_t c = scr.wedges.common[y];
    steps += c;
    if (c < need) continue;
    pairs.push_back(y);
    *squares += static_cast<double>(c) * c;
    if (heaviest == kOutside || c > scr.wedges.common[heaviest]) heaviest = y;
  }
  reset_wedges(scr.wedges);
  out.cost = kPairWalkStep * steps;
  if (pairs.empty()) return out;
  const std::size_t stride = (pairs.size() + kPairSamples - 1) / kPairSamples;
  double built = 0, sampled = 0;
  for (std::size_t i = 0; i < pairs.size(); i += stride, ++sampled) {
    const Vertex y = pairs[i];
    built += gzk::intersection_work(g.degree(x), g.degree(y)) + building_work(g, common_neighbours(g, x, y, scr));
  }
  out.cost += static_cast<double>(pairs.size()) * (kPerLocalGraph + built / sampled);
  const auto c = common_neighbours(g, x, heaviest, scr);
  out.heaviest_work = building_work(g, c);
  *heaviest_square = static_cast<double>(c.size()) * static_cast<double>(c.size());
  out.heaviest = induced_graph(g, c, scr);
  return out;
}

}  // namespace

int apex_vertex(const Pattern& p) {
  const int k = p.size();
  if (k < 4 || p.labeled() || p.edge_count() == k * (k - 1) / 2) return -1;
  for (int v = 0; v < k; ++v)
    if (p.degree(v) == k - 1) return v;
  return -1;
}

ConeRest cone_rest(const Pattern& p, const Cone& c) {
  std::uint32_t others = (1u << p.size()) - 1;
  others &= ~(1u << c.vertex);
  if (c.twin >= 0) others &= ~(1u << c.twin);
  std::vector<int> kept;
  ConeRest out;
  for (int v = 0; v < p.size(); ++v) {
    if (!((others >> v) & 1u)) continue;
    if (p.neighbor_mask(v) & others) kept.push_back(v);
    else ++out.isolated;
  }
  if (!kept.empty()) out.pattern = subpattern(p, kept);  // none: the empty pattern
  return out;
}

std::vector<Cone> cones(const Pattern& p) {
  const int k = p.size();
  std::vector<Cone> out;
  if (k < 4 || p.labeled()) return out;
  const auto admissible = [&](const Cone& c) {
    const ConeRest r = cone_rest(p, c);
    const bool tree = r.pattern.edge_count() < r.pattern.size();
    return r.pattern.size() >= 3 && r.pattern.connected() && (c.twin >= 0 || r.isolated == 0 || !tree);
  };
  if (const int a = apex_vertex(p); a >= 0 && admissible({a, -1})) out.push_back({a, -1});
  const std::uint32_t all = (1u << k) - 1;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b)
      if (!p.has_edge(a, b) && p.neighbor_mask(a) == (all & ~(1u << a) & ~(1u << b)) &&
          p.neighbor_mask(b) == p.neighbor_mask(a) && admissible({a, b}))
        return out.push_back({a, b}), out;
  return out;
}

ApexPricing apex_pricing(const Graph& g, const ConeRest& rest, bool twins, Formula formula) {
  // sum over roots h of (the work of h's local graphs + Q''s predicted cost there), estimated from roots drawn
  // with probability proportional to their work w_h (importance sampling: each sample's cost / w_h, times
  // the total W); hubs, which carry most of the cost, are drawn first.
  ApexPricing out;
  const auto need = static_cast<std::uint32_t>(rest.pattern.size() + rest.isolated);
  std::vector<double> cumulative(g.n());
  double total = 0, eligible = 0;
  for (Vertex h = 0; h < g.n(); ++h) {
    const bool fits = g.degree(h) >= need;
    const double w = fits ? root_work(g, h, twins) : 0;
    total += w;
    eligible += fits ? 1 : 0;
    cumulative[h] = total;
  }
  if (total == 0) {
    out.rest = choose_count_plan(rest.pattern, Induced::edge, GraphStats{}, formula);
    return out;
  }
  Rng rng(1);
  LocalScratch scratch;
  double ratio_sum = 0, enumerated_sum = 0, heaviest = -1;
  for (int i = 0; i < kSamples; ++i) {
    const double x = rng.uniform() * total;
    const auto h = static_cast<Vertex>(
        std::min<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin(), g.n() - 1));
    const double w = cumulative[h] - (h ? cumulative[h - 1] : 0);
    if (w <= 0) continue;
    double squares = 1, heaviest_square = 1;
    RootPrice root = twins ? price_twin_root(g, h, need, scratch, &squares, &heaviest_square) : price_apex_root(g, h, scratch);
    if (root.heaviest_work < 0) {  // no pair with enough common neighbours
      ratio_sum += root.cost / w;
      continue;
    }
    const GraphStats stats = graph_stats(root.heaviest, 1, kSampleEffort);
    CountPlan cp = choose_count_plan(rest.pattern, Induced::edge, stats, formula);
    ratio_sum += (root.cost + cp.predicted_cost * squares / heaviest_square) / w;
    if (!twins && rest.isolated == 0)
      enumerated_sum += choose_plan(rest.pattern, Induced::edge, stats, formula).predicted_cost / w;
    if (root.heaviest_work > heaviest) {
      heaviest = root.heaviest_work;
      out.rest = std::move(cp);
    }
  }
  if (heaviest < 0) out.rest = choose_count_plan(rest.pattern, Induced::edge, GraphStats{}, formula);
  out.cost = total * ratio_sum / kSamples + (twins ? 0 : kPerLocalGraph * eligible);
  out.enumerated = total * enumerated_sum / kSamples;
  return out;
}

__int128 apex_embedding_share(const Graph& g, const ApexPlan& ap, const ExecOptions& opt) {
  const bool twins = ap.twin >= 0;
  const auto need = static_cast<std::uint32_t>(ap.rest.plan.pattern.size() + ap.isolated);
  std::vector<LocalScratch> scratch(opt.threads);
  // Tasks of about equal work: the hubs (the first ids of a degree-ordered graph) one per task, so no thread
  // is left with all of them.
  std::vector<std::uint64_t> work(g.n());
  for (Vertex h = 0; h < g.n(); ++h)
    work[h] = 1 + (g.degree(h) < need ? 0 : static_cast<std::uint64_t>(root_work(g, h, twins)));
  const RootSplit chunks = chunk_roots(work, opt.threads * opt.world_size);
  struct alignas(64) Sum {
    unsigned __int128 embeddings = 0;
  };
  std::vector<Sum> sums(opt.threads);
  parallel_roots(g.n(), opt, [&](int th, Vertex begin, Vertex end) {
    LocalScratch& s = scratch[th];
    unsigned __int128& sum = sums[th].embeddings;
    for (Vertex h = begin; h < end; ++h) {
      if (g.degree(h) < need) continue;
      if (!twins) {
        add_local_graph(g, g.neighbors(h), ap, s, sum);
        continue;
      }
      walk_wedges(g, h, h, s.wedges);
      for (Vertex y : s.wedges.ends)
        if (s.wedges.common[y] >= need) add_local_graph(g, common_neighbours(g, h, y, s), ap, s, sum);
      reset_wedges(s.wedges);
    }
    flush_batches(ap, s, sum);
  }, nullptr, &chunks);
  unsigned __int128 total = 0;
  for (const Sum& s : sums)
    if (__builtin_add_overflow(total, s.embeddings, &total)) cone_overflow();
  if (twins && __builtin_add_overflow(total, total, &total)) cone_overflow();  // the pairs (y, x) alike
  if (total >> 126) cone_overflow();
  return static_cast<__int128>(total);
}

}  // namespace core::graph
