// Cone patterns counted in the neighbourhoods of their apex (see apex.hpp).
#include "graph/apex.hpp"

#include <algorithm>
#include <limits>

#include "common/rng.hpp"
#include "graph/set_ops.hpp"

namespace core::graph {

namespace {

constexpr Vertex kOutside = std::numeric_limits<Vertex>::max();

// Reused per thread: pos[x] = x's index in N(h) while h is built (kOutside otherwise), the intersection.
struct alignas(64) NeighbourhoodScratch {
  PopulatedVector<Vertex> pos;
  std::vector<Vertex> common;
};

// G[N(h)], vertex i being N(h)[i].
Graph neighbourhood_graph(const Graph& g, Vertex h, NeighbourhoodScratch& s) {
  const auto nh = g.neighbors(h);
  if (s.pos.empty()) s.pos.assign(g.n(), kOutside);
  for (std::size_t i = 0; i < nh.size(); ++i) s.pos[nh[i]] = static_cast<Vertex>(i);
  std::vector<EdgeIndex> offsets(nh.size() + 1, 0);
  std::vector<Vertex> adj;
  s.common.resize(nh.size() + gzk::kSlack);  // the kernel's vector stores run past the result
  for (std::size_t i = 0; i < nh.size(); ++i) {
    const auto nb = g.neighbors(nh[i]);
    const std::size_t c = gzk::intersect(nb.data(), nb.size(), nh.data(), nh.size(), s.common.data());
    for (std::size_t j = 0; j < c; ++j) adj.push_back(s.pos[s.common[j]]);  // ascending: N(h)'s order
    offsets[i + 1] = adj.size();
  }
  for (Vertex x : nh) s.pos[x] = kOutside;
  Graph out;
  out.offsets = std::move(offsets);
  out.adj = std::move(adj);
  return out;
}

// The count of Q in one neighbourhood graph, in plan units per sampled neighbourhood's fixed costs
// (a count_with call, its tables' allocations): measured ~2 us.
constexpr double kPerNeighbourhood = 2000;
// Neighbourhoods sampled for the price, and the effort of their statistics (graph_stats): 16 of them at a
// sixteenth of the samples cost a few ms of planning on the hubs of email-Enron and wiki-Vote.
constexpr int kSamples = 16;
constexpr double kSampleEffort = 1.0 / 16;

}  // namespace

int apex_vertex(const Pattern& p) {
  const int k = p.size();
  if (k < 4 || p.labeled() || p.edge_count() == k * (k - 1) / 2) return -1;
  for (int v = 0; v < k; ++v)
    if (p.degree(v) == k - 1) return v;
  return -1;
}

ApexPricing apex_pricing(const Graph& g, const Pattern& rest, Formula formula) {
  // sum over h of (work to build G[N(h)] + Q's predicted cost there), estimated from neighbourhoods drawn
  // with probability proportional to their building work w_h (importance sampling: each sample's
  // cost / w_h, times the total W); hubs' neighbourhoods, which carry most of the cost, are drawn first.
  ApexPricing out;
  std::vector<double> cumulative(g.n());
  double total = 0, eligible = 0;
  for (Vertex h = 0; h < g.n(); ++h) {
    const bool fits = g.degree(h) >= static_cast<std::uint32_t>(rest.size());
    const double w = fits ? neighbour_intersection_work(g, h, false) : 0;
    total += w;
    eligible += fits ? 1 : 0;
    cumulative[h] = total;
  }
  if (total == 0) {
    out.rest = choose_count_plan(rest, Induced::edge, GraphStats{}, formula);
    return out;
  }
  Rng rng(1);
  NeighbourhoodScratch scratch;
  double ratio_sum = 0, enumerated_sum = 0, heaviest = -1;
  for (int i = 0; i < kSamples; ++i) {
    const double x = rng.uniform() * total;
    const auto h = static_cast<Vertex>(
        std::min<std::size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin(), g.n() - 1));
    const double w = cumulative[h] - (h ? cumulative[h - 1] : 0);
    if (w <= 0) continue;
    const Graph nh = neighbourhood_graph(g, h, scratch);
    const GraphStats stats = graph_stats(nh, 1, kSampleEffort);
    CountPlan cp = choose_count_plan(rest, Induced::edge, stats, formula);
    ratio_sum += (w + cp.predicted_cost) / w;
    enumerated_sum += choose_plan(rest, Induced::edge, stats, formula).predicted_cost / w;
    if (w > heaviest) {
      heaviest = w;
      out.rest = std::move(cp);
    }
  }
  out.cost = total * ratio_sum / kSamples + kPerNeighbourhood * eligible;
  out.enumerated = total * enumerated_sum / kSamples;
  return out;
}

__int128 apex_embedding_share(const Graph& g, const ApexPlan& ap, const ExecOptions& opt) {
  const auto k = static_cast<std::uint32_t>(ap.rest.plan.pattern.size());
  const auto aut = static_cast<__int128>(ap.rest.plan.automorphisms);
  std::vector<NeighbourhoodScratch> scratch(opt.threads);
  // Tasks of about equal building work: the hubs' neighbourhoods (the first ids of a degree-ordered graph)
  // one per task, so no thread is left with all of them.
  std::vector<std::uint64_t> work(g.n());
  for (Vertex h = 0; h < g.n(); ++h)
    work[h] = 1 + (g.degree(h) < k ? 0 : static_cast<std::uint64_t>(neighbour_intersection_work(g, h, false)));
  const RootSplit chunks = chunk_roots(work, opt.threads * opt.world_size);
  struct alignas(64) Sum {
    __int128 embeddings = 0;
  };
  std::vector<Sum> sums(opt.threads);
  parallel_roots(g.n(), opt, [&](int th, Vertex begin, Vertex end) {
    for (Vertex h = begin; h < end; ++h) {
      if (g.degree(h) < k) continue;
      const Graph nh = neighbourhood_graph(g, h, scratch[th]);
      sums[th].embeddings += static_cast<__int128>(count_with(nh, ap.rest, {})) * aut;  // < 2^64 x 7! each
    }
  }, nullptr, &chunks);
  __int128 total = 0;
  for (const Sum& s : sums) total += s.embeddings;
  return total;
}

}  // namespace core::graph
