// Triangle tables from one oriented pass (see triangle_tables.hpp).
#include "graph/triangle_tables.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "graph/oriented_edges.hpp"
#include "graph/set_ops.hpp"

namespace core::graph {

namespace {

constexpr std::uint32_t kTrash = 1;  // found[0]: the misses

}  // namespace

OrientedTriangles oriented_triangle_counts(const Graph& g, const ExecOptions& opt, std::size_t private_bytes) {
  if (opt.world_size != 1) throw std::logic_error("triangle tables are computed in one process");
  OrientedTriangles oc;
  const Vertex n = g.n();
  oc.lower = lower_degrees(g, opt, oc.own_lower);
  oc.first.resize(std::size_t{n} + 1);
  for (Vertex v = 0; v < n; ++v) oc.first[v + 1] = oc.first[v] + oc.lower[v];
  // Per thread: pos[x] = 1 + the position of x in N+(v) while v is the root (0: not in N+(v)), and
  // found[1 + i] the triangles through the edge to N+(v)[i] (added to t once per root); found[0]
  // takes the increments of the misses, so the scan has no branch.
  struct alignas(64) Scratch {
    PopulatedVector<std::uint32_t> pos;
    std::vector<std::uint32_t> found;
  };
  std::vector<Scratch> scratch(opt.threads);
  // Another root's row (the edge u-w) is shared between threads.
  ThreadCounters<std::uint32_t> counts(oc.first[n], opt.threads, private_bytes);
  const Vertex* adj = g.adj.data();
  const std::uint32_t* lower = oc.lower.data();
  const EdgeIndex* first = oc.first.data();
  const auto roots = [&]<bool kAtomic>(int th, Vertex begin, Vertex end) {
    Scratch& s = scratch[th];
    if (s.pos.empty()) s.pos.assign(n, 0);
    std::uint32_t* t = counts.of(th);
    std::uint32_t* pos = s.pos.data();
    for (Vertex v = begin; v < end; ++v) {
      const Vertex* nv = adj + g.offsets[v];
      const std::uint32_t d = lower[v];
      if (d < 2) continue;
      if (s.found.size() < d + kTrash) s.found.resize(d + kTrash);
      std::uint32_t* found = s.found.data();
      std::fill_n(found, d + kTrash, 0);
      for (std::uint32_t i = 0; i < d; ++i) pos[nv[i]] = i + kTrash;
      // u = nv[i] scans N+(u): every marked w < u closes the triangle v > u > w.
      for (std::uint32_t i = 1; i < d; ++i) {
        const Vertex u = nv[i];
        const Vertex* nu = adj + g.offsets[u];
        std::uint32_t* tu = t + first[u];
        std::uint32_t through_vu = 0;
        for (std::uint32_t e = 0, du = lower[u]; e < du; ++e) {
          const std::uint32_t p = pos[nu[e]];
          const std::uint32_t hit = p != 0;
          through_vu += hit;
          ++found[p];  // edge v-w
          if constexpr (kAtomic) {
            if (hit) std::atomic_ref<std::uint32_t>(tu[e]).fetch_add(1, std::memory_order_relaxed);
          } else {
            tu[e] += hit;  // edge u-w
          }
        }
        found[i + kTrash] += through_vu;
      }
      std::uint32_t* tv = t + first[v];
      for (std::uint32_t i = 0; i < d; ++i) {
        if constexpr (kAtomic) {
          if (found[i + kTrash]) std::atomic_ref<std::uint32_t>(tv[i]).fetch_add(found[i + kTrash], std::memory_order_relaxed);
        } else {
          tv[i] += found[i + kTrash];
        }
        pos[nv[i]] = 0;
      }
    }
  };
  parallel_roots(n, opt, [&](int th, Vertex begin, Vertex end) {
    if (counts.atomic()) roots.template operator()<true>(th, begin, end);
    else roots.template operator()<false>(th, begin, end);
  });
  oc.t = counts.take();
  return oc;
}

std::uint64_t OrientedTriangles::triangles() const {
  std::uint64_t sum = 0;
  for (std::uint32_t x : t) sum += x;
  return sum / 3;
}

CountTable edge_triangle_counts(const Graph& g, const ExecOptions& opt, std::size_t private_bytes) {
  return edge_triangle_counts(g, oriented_triangle_counts(g, opt, private_bytes));
}

CountTable edge_triangle_counts(const Graph& g, const OrientedTriangles& oc) {
  return symmetric_edge_table<std::uint32_t>(g, oc.lower, oc.first, oc.t);
}

CountTable vertex_triangle_counts(const Graph& g, const ExecOptions& opt, std::size_t private_bytes) {
  return vertex_triangle_counts(g, oriented_triangle_counts(g, opt, private_bytes));
}

CountTable vertex_triangle_counts(const Graph& g, const OrientedTriangles& oc) {
  return vertex_table<std::uint32_t>(g, oc.lower, oc.first, oc.t, 2);  // each triangle through v holds two of its edges
}

bool is_rooted_triangle(const Plan& table, int fixed) {
  const Pattern& p = table.pattern;
  return (fixed == 1 || fixed == 2) && p.size() == 3 && p.edge_count() == 3 && !p.labeled() &&
         table.induced == Induced::edge;
}

double triangle_table_cost(const GraphStats& s) {
  // Marking and clearing N+(v) and adding the per-edge sums (4 m), per element of N+(u) for every
  // oriented edge a look-up and two increments (the branch-free scan: measured ~3x the marked
  // triangle count's look-up), and copying the lower slots to the upper ones (2 m).
  const double lookups = s.m * s.out_degree_biased;
  return 6 * s.m + 3 * lookups;
}

std::optional<TriangleEdges> triangle_edge_lists(const Graph& g, const ExecOptions& opt, std::size_t max_bytes) {
  if (opt.world_size != 1) throw std::logic_error("triangle tables are computed in one process");
  const Vertex n = g.n();
  TriangleEdges te;
  te.first.assign(std::size_t{n} + 1, 0);
  std::vector<PopulatedVector<std::uint8_t>> marks(opt.threads);
  // emit(x, y) for every edge among N(b), y < x.
  const auto scan = [&](int th, Vertex b, const auto& emit) {
    auto& in_b = marks[th];
    if (in_b.empty()) in_b.assign(n, 0);
    const auto nb = g.neighbors(b);
    for (Vertex x : nb) in_b[x] = 1;
    for (Vertex x : nb)
      for (Vertex y : g.neighbors(x)) {
        if (y >= x) break;
        if (in_b[y]) emit(x, y);
      }
    for (Vertex x : nb) in_b[x] = 0;
  };
  parallel_roots(n, opt, [&](int th, Vertex begin, Vertex end) {
    for (Vertex b = begin; b < end; ++b) scan(th, b, [&](Vertex, Vertex) { ++te.first[b + 1]; });
  });
  for (Vertex b = 0; b < n; ++b) te.first[b + 1] += te.first[b];
  if (te.first[n] > max_bytes / (2 * sizeof(Vertex))) return std::nullopt;
  te.ends.resize(2 * te.first[n]);
  parallel_roots(n, opt, [&](int th, Vertex begin, Vertex end) {
    for (Vertex b = begin; b < end; ++b) {
      Vertex* out = te.ends.data() + 2 * te.first[b];
      scan(th, b, [&](Vertex x, Vertex y) {
        *out++ = x;
        *out++ = y;
      });
    }
  });
  return te;
}

std::optional<EdgeCommonLists> edge_common_lists(const Graph& g, const ExecOptions& opt, std::size_t max_bytes) {
  if (opt.world_size != 1) throw std::logic_error("triangle tables are computed in one process");
  const std::size_t slots = g.adj.size();
  if ((slots + 1) * sizeof(EdgeIndex) > max_bytes) return std::nullopt;  // before the counts' own 8 bytes a slot
  const CountTable t = edge_triangle_counts(g, opt);
  EdgeCommonLists lists;
  const std::uint64_t entries = std::accumulate(t.begin(), t.end(), std::uint64_t{0});
  if ((slots + 1) * sizeof(EdgeIndex) + entries * sizeof(Vertex) > max_bytes) return std::nullopt;
  lists.first.resize(slots + 1);
  lists.first[0] = 0;
  for (std::size_t s = 0; s < slots; ++s) lists.first[s + 1] = lists.first[s] + t[s];
  lists.vertices.resize(entries);
  std::vector<std::vector<Vertex>> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int th, Vertex begin, Vertex end) {
    auto& out = scratch[th];
    for (Vertex a = begin; a < end; ++a) {
      const auto na = g.neighbors(a);
      for (std::size_t i = 0; i < na.size(); ++i) {
        const EdgeIndex slot = g.offsets[a] + i;
        if (lists.first[slot + 1] == lists.first[slot]) continue;
        const auto nb = g.neighbors(na[i]);
        out.resize(std::min(na.size(), nb.size()) + gzk::kSlack);
        const std::size_t n = gzk::intersect(na.data(), na.size(), nb.data(), nb.size(), out.data());
        std::copy_n(out.data(), n, lists.vertices.data() + lists.first[slot]);
      }
    }
  });
  return lists;
}

double edge_common_lists_cost(const GraphStats& s, std::size_t max_bytes) {
  const double entries = 2 * s.closure * s.m * std::max(0.0, s.degree_biased - 1);  // 6 per triangle
  if (4 * entries + 8 * (2 * s.m + 1) > static_cast<double>(max_bytes)) return std::numeric_limits<double>::infinity();
  return triangle_table_cost(s) + 2 * s.m * 2 * s.degree_biased;
}

double triangle_edge_lists_cost(const GraphStats& s) {
  // Per pass N(b) marked and cleared for every b (4 m) and per x in N(b) its list below x (2 m d+).
  return 2 * (4 * s.m + 2 * s.m * s.out_degree_biased);
}

}  // namespace core::graph
