// The 4-cycles through each vertex or edge from the smallest-vertex walks (see cycle_tables.hpp).
#include "graph/cycle_tables.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "common/errors.hpp"

namespace core::graph {

int rooted_cycle_length(const Plan& table, int fixed) {
  const Pattern& p = table.pattern;
  const int k = p.size();
  if (p.labeled() || table.induced != Induced::edge || k < 4 || k > 5 || p.edge_count() != k || !p.connected())
    return 0;
  for (int v = 0; v < k; ++v)
    if (std::popcount(p.neighbor_mask(v)) != 2) return 0;
  if (fixed == 1 || (fixed == 2 && k == 4 && p.has_edge(0, 1))) return k;
  return 0;
}

void walk_wedges(const Graph& g, Vertex a, Vertex bound, WedgeScratch& s) {
  if (s.common.empty()) s.common.assign(g.n(), 0);
  for (Vertex w : g.neighbors(a))
    for (Vertex y : g.neighbors(w)) {
      if (y >= bound) break;
      if (y != a && s.common[y]++ == 0) s.ends.push_back(y);
    }
}

void walk_upper_wedges(const Graph& g, Vertex a, WedgeScratch& s) {
  if (s.common.empty()) s.common.assign(g.n(), 0);
  const auto na = g.neighbors(a);
  for (auto w = std::upper_bound(na.begin(), na.end(), a); w != na.end(); ++w) {
    const auto nw = g.neighbors(*w);
    for (auto y = nw.end(); y != nw.begin() && *(y - 1) > a;)
      if (s.common[*--y]++ == 0) s.ends.push_back(*y);
  }
}

void reset_wedges(WedgeScratch& s) {
  for (Vertex y : s.ends) s.common[y] = 0;
  s.ends.clear();
}

CountTable four_cycle_table(const Graph& g, bool per_edge, const ExecOptions& opt) {
  if (opt.world_size != 1) throw std::logic_error("cycle tables are computed in one process");
  // Bounds: through an edge v-w at most (deg(v) - 1)(deg(w) - 1) cycles; through a vertex v at most
  // deg(v) x 2m embeddings.
  if (!per_edge && static_cast<double>(g.max_degree()) * static_cast<double>(g.adj.size()) >= 0x1p63)
    throw DataError("the 4-cycles through a vertex may exceed 2^64 - 1 (counts are exact or an error)");
  const Vertex n = g.n();
  CountTable table(per_edge ? g.adj.size() : n, 0);
  std::vector<WedgeScratch> scratch(opt.threads);  // c+(a, y) of the current root a
  // Entries of other roots' vertices and edges are shared between threads.
  const bool shared = opt.threads > 1;
  const auto add = [&](std::size_t i, std::uint64_t x) {
    if (shared) std::atomic_ref<std::uint64_t>(table[i]).fetch_add(x, std::memory_order_relaxed);
    else table[i] += x;
  };
  parallel_roots(n, opt, [&](int t, Vertex begin, Vertex end) {
    WedgeScratch& s = scratch[t];
    for (Vertex a = begin; a < end; ++a) {
      walk_upper_wedges(g, a, s);
      if (s.ends.empty()) continue;
      const auto na = g.neighbors(a);
      const std::size_t up = static_cast<std::size_t>(std::upper_bound(na.begin(), na.end(), a) - na.begin());
      // The slots of N(w) above a, as (first, end) offsets into adj.
      const auto above = [&](Vertex w) {
        const auto nw = g.neighbors(w);
        const auto from = std::upper_bound(nw.begin(), nw.end(), a) - nw.begin();
        return std::pair{g.offsets[w] + static_cast<EdgeIndex>(from), g.offsets[w + 1]};
      };
      for (std::size_t i = up; i < na.size(); ++i) {  // each walk a-w-y: c+(a, y) - 1 cycles
        const auto [from, to] = above(na[i]);
        std::uint64_t through_w = 0;
        for (EdgeIndex j = from; j < to; ++j) {
          const std::uint64_t x = s.common[g.adj[j]] - 1;
          through_w += x;
          if (per_edge && x) add(j, x);  // the edge w-y
        }
        if (through_w) add(per_edge ? g.offsets[a] + i : na[i], through_w);  // a-w, or w
      }
      std::uint64_t through_a = 0;
      for (Vertex y : s.ends) {
        const std::uint64_t c = s.common[y], cycles = c * (c - 1) / 2;
        if (!per_edge && cycles) {
          through_a += cycles;
          add(y, cycles);
        }
      }
      if (through_a) add(a, through_a);
      reset_wedges(s);
    }
  });
  if (!per_edge) {
    for (auto& x : table) x *= 2;  // both directions round each cycle
    return table;
  }
  // Each cycle's edge was counted at one of its two slots: both get the sum. For a fixed u < v the
  // slots (u, v) follow u's smaller neighbours in increasing v, as v grows.
  const auto lower = lower_degrees(g);
  std::vector<EdgeIndex> next(n);
  for (Vertex u = 0; u < n; ++u) next[u] = g.offsets[u] + lower[u];
  for (Vertex v = 0; v < n; ++v)
    for (EdgeIndex s = g.offsets[v]; s < g.offsets[v] + lower[v]; ++s) {
      const EdgeIndex r = next[g.adj[s]]++;
      table[s] = table[r] = table[s] + table[r];
    }
  return table;
}

}  // namespace core::graph
