// The 4-cycles through each vertex or edge from the smallest-vertex walks, the 5-cycles through each
// edge from the paths of three edges, the 4-cycles with a pendant through each edge from full wedge
// walks (see cycle_tables.hpp).
#include "graph/cycle_tables.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
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
  if (fixed == 1 || (fixed == 2 && p.has_edge(0, 1))) return k;
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

void walk_three_paths(const Graph& g, Vertex a, PathScratch& s) {
  if (s.p3.empty()) s.p3.assign(g.n(), 0);
  walk_wedges(g, a, g.n(), s.wedges);
  for (Vertex y : s.wedges.ends)
    for (Vertex z : g.neighbors(y)) {
      if (z == a) continue;
      if (s.p3[z] == 0) s.p3_ends.push_back(z);
      s.p3[z] += s.wedges.common[y];
    }
  for (Vertex z : g.neighbors(a)) s.p3[z] -= g.degree(z) - 1;  // the walks a-z-y-z are not paths
}

void reset_three_paths(PathScratch& s) {
  for (Vertex z : s.p3_ends) s.p3[z] = 0;
  s.p3_ends.clear();
  reset_wedges(s.wedges);
}

void symmetrise_edge_table(const Graph& g, const ExecOptions& opt, CountTable& table) {
  // For a fixed u < v the slots (u, v) follow u's smaller neighbours in increasing v, as v grows.
  LowerDegrees own_lower;
  const auto& lower = lower_degrees(g, opt, own_lower);
  std::vector<EdgeIndex> next(g.n());
  for (Vertex u = 0; u < g.n(); ++u) next[u] = g.offsets[u] + lower[u];
  for (Vertex v = 0; v < g.n(); ++v)
    for (EdgeIndex s = g.offsets[v]; s < g.offsets[v] + lower[v]; ++s) {
      const EdgeIndex r = next[g.adj[s]]++;
      table[s] = table[r] = table[s] + table[r];
    }
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
  symmetrise_edge_table(g, opt, table);  // each cycle's edge was counted at one of its two slots
  return table;
}

CountTable five_cycle_edge_table(const Graph& g, const OrientedTriangles& ot, const ExecOptions& opt) {
  if (opt.world_size != 1) throw std::logic_error("cycle tables are computed in one process");
  // p3(a, z) < d^2 and S(b) < d^3 (d the largest degree).
  if (std::pow(static_cast<double>(g.max_degree()), 3) >= 0x1p63)
    throw DataError("the 5-cycles through an edge may exceed 2^64 - 1 (counts are exact or an error)");
  const CountTable tri = vertex_triangle_counts(g, ot);
  CountTable table(g.adj.size(), 0);
  std::vector<PathScratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    PathScratch& s = scratch[t];
    for (Vertex a = begin; a < end; ++a) {
      const auto na = g.neighbors(a);
      const auto up = std::upper_bound(na.begin(), na.end(), a);
      if (up == na.end()) continue;  // every edge of a is filled from its other end
      walk_three_paths(g, a, s);
      for (auto b = up; b != na.end(); ++b) {
        std::uint64_t paths = 0;  // S(b)
        for (Vertex z : g.neighbors(*b)) paths += s.p3[z];
        const std::uint64_t c = s.wedges.common[*b];
        table[g.offsets[a] + static_cast<EdgeIndex>(b - na.begin())] =
            paths - 2 * (tri[*b] - c) - c * (g.degree(*b) - 2);
      }
      reset_three_paths(s);
    }
  });
  symmetrise_edge_table(g, opt, table);
  return table;
}

int rooted_square_pendant(const Plan& table, int fixed) {
  const Pattern& p = table.pattern;
  if (fixed != 2 || p.labeled() || table.induced != Induced::edge || p.size() != 5 || p.edge_count() != 5) return 0;
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t root = 1u << r, other = 1u << (1 - r);
    const std::uint32_t xs = p.neighbor_mask(r) & ~other, ys = p.neighbor_mask(1 - r) & ~root;
    if (std::popcount(xs) != 1 || std::popcount(ys) != 1 || xs == ys) continue;
    const int x = std::countr_zero(xs), y = std::countr_zero(ys);
    const std::uint32_t zs = 0b11111u & ~(root | other | xs | ys);
    if (p.neighbor_mask(x) == (root | ys | zs) && p.neighbor_mask(y) == (other | xs) &&
        p.neighbor_mask(std::countr_zero(zs)) == xs)
      return r + 1;
  }
  return 0;
}

CountTable square_pendant_edge_table(const Graph& g, bool pendant_at_second, const ExecOptions& opt) {
  if (opt.world_size != 1) throw std::logic_error("cycle tables are computed in one process");
  const double d = static_cast<double>(g.max_degree());
  if (d * d * d >= 0x1p63)
    throw DataError("the 4-cycles with a pendant through an edge may exceed 2^64 - 1 (counts are exact or an error)");
  CountTable table(g.adj.size(), 0);  // each slot written once, by one root
  struct alignas(64) Scratch {
    WedgeScratch wedges;                 // c(a, y) for y != a
    PopulatedVector<std::uint8_t> in_a;  // N(a) marked
  };
  std::vector<Scratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    Scratch& s = scratch[t];
    if (s.in_a.empty()) s.in_a.assign(g.n(), 0);
    for (Vertex a = begin; a < end; ++a) {
      walk_wedges(g, a, g.n(), s.wedges);
      const auto na = g.neighbors(a);
      for (Vertex b : na) s.in_a[b] = 1;
      for (std::size_t i = 0; i < na.size(); ++i) {
        const Vertex b = na[i];
        std::uint64_t sum = 0;
        for (Vertex c : g.neighbors(b)) {
          const std::uint64_t others = s.wedges.common[c] - 1;  // c != a: b is one of c(a, c)
          if (c != a && others) sum += others * (g.degree(c) - 2 - s.in_a[c]);
        }
        if (pendant_at_second) {
          table[g.offsets[a] + i] = sum;
        } else {
          const auto nb = g.neighbors(b);
          table[g.offsets[b] + static_cast<EdgeIndex>(std::lower_bound(nb.begin(), nb.end(), a) - nb.begin())] = sum;
        }
      }
      for (Vertex b : na) s.in_a[b] = 0;
      reset_wedges(s.wedges);
    }
  });
  return table;
}

}  // namespace core::graph
