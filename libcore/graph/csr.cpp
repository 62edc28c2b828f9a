// CSR construction and degree-ordered relabelling (see csr.hpp). Input edges may contain any
// 64-bit ids, in any order and direction; the result has sorted, duplicate-free neighbour lists.
#include "graph/csr.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "common/threads.hpp"
#include "graph/large_vector.hpp"
#include "graph/parallel.hpp"

namespace core::graph {

bool Graph::has_edge(Vertex u, Vertex v) const {
  if (degree(u) > degree(v)) std::swap(u, v);
  const auto nb = neighbors(u);
  return std::binary_search(nb.begin(), nb.end(), v);
}

std::uint32_t Graph::max_degree() const {
  std::uint32_t d = 0;
  for (Vertex v = 0; v < n(); ++v) d = std::max(d, degree(v));
  return d;
}

Graph build_graph(std::vector<RawEdge> edges, CleanReport* report) {
  CleanReport r;
  r.input_edges = edges.size();
  std::vector<RawEdge> directed;
  directed.reserve(edges.size() * 2);
  for (const auto& [u, v] : edges) {
    r.max_input_id = std::max({r.max_input_id, u, v});
    if (u == v) {
      ++r.self_loops;
      continue;
    }
    directed.emplace_back(u, v);
    directed.emplace_back(v, u);
  }
  edges.clear();
  edges.shrink_to_fit();
  std::sort(directed.begin(), directed.end());
  const std::size_t before = directed.size();
  directed.erase(std::unique(directed.begin(), directed.end()), directed.end());
  r.duplicates = (before - directed.size()) / 2;

  // Compaction: sources in ascending order are exactly the vertices that occur (lists are symmetric).
  std::vector<std::uint64_t> original_ids;
  for (std::size_t i = 0; i < directed.size(); ++i)
    if (i == 0 || directed[i].first != directed[i - 1].first) original_ids.push_back(directed[i].first);
  const auto id_of = [&](std::uint64_t orig) {
    return static_cast<Vertex>(std::lower_bound(original_ids.begin(), original_ids.end(), orig) -
                               original_ids.begin());
  };
  const std::size_t n = original_ids.size();
  std::vector<EdgeIndex> offsets(n + 1, 0);
  std::vector<Vertex> adj(directed.size());
  for (std::size_t i = 0; i < directed.size(); ++i) {
    const Vertex u = id_of(directed[i].first);
    offsets[u + 1]++;
    adj[i] = id_of(directed[i].second);  // sorted by (u, v) and id_of is monotone
  }
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  Graph g;
  g.offsets = std::move(offsets);
  g.adj = std::move(adj);
  g.original_ids = std::move(original_ids);
  r.vertices = n;
  r.edges = g.m();
  if (report) *report = r;
  return g;
}

Graph relabel_by_degree(const Graph& g, int threads) {
  const Vertex n = g.n();
  std::vector<Vertex> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](Vertex a, Vertex b) { return g.degree(a) > g.degree(b); });
  std::vector<Vertex> rank(n);
  for (Vertex i = 0; i < n; ++i) rank[order[i]] = i;
  Graph h;
  std::vector<EdgeIndex> offsets(n + 1, 0);
  std::vector<std::uint64_t> original_ids(n);
  if (g.labeled()) h.labels.resize(n);
  for (Vertex i = 0; i < n; ++i) {
    const Vertex v = order[i];
    offsets[i + 1] = offsets[i] + g.degree(v);
    original_ids[i] = g.original_ids[v];
    if (g.labeled()) h.labels[i] = g.labels[v];
  }
  h.offsets = std::move(offsets);
  h.original_ids = std::move(original_ids);
  h.adj = large_vector<Vertex>(g.adj.size());
  // The lists, renamed and sorted, in parallel (each vertex alone).
  constexpr Vertex kChunk = 4096;
  parallel_chunks(threads > 0 ? threads : core::thread_count(), (std::uint64_t{n} + kChunk - 1) / kChunk,
                  [&](int, std::uint64_t c) {
                    const Vertex end = static_cast<Vertex>(std::min<std::uint64_t>(n, (c + 1) * kChunk));
                    for (Vertex i = static_cast<Vertex>(c * kChunk); i < end; ++i) {
                      Vertex* out = h.adj.data() + h.offsets[i];
                      for (Vertex w : g.neighbors(order[i])) *out++ = rank[w];
                      std::sort(h.adj.data() + h.offsets[i], out);
                    }
                  });
  return h;
}

std::string check_structure(const Graph& g) {
  if (g.offsets.empty() || g.offsets.front() != 0 || g.offsets.back() != g.adj.size())
    return "offsets do not span the adjacency array";
  const std::size_t n = g.offsets.size() - 1;
  if (g.original_ids.size() != n) return "one original id per vertex expected";
  for (std::size_t v = 0; v < n; ++v)
    if (g.offsets[v] > g.offsets[v + 1]) return "offsets decrease at vertex " + std::to_string(v);
  // Each list strictly ascending, in range, loop-free; then symmetry in one pass: visiting u in ascending order,
  // the next unmatched entry of every upper neighbour v's list must be u (v's entries below v are exactly the
  // u < v that list v, in ascending order).
  std::vector<EdgeIndex> next(g.offsets.begin(), g.offsets.end() - 1);
  for (std::size_t u = 0; u < n; ++u) {
    const auto list = g.neighbors(static_cast<Vertex>(u));
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (list[i] >= n) return "vertex " + std::to_string(u) + " lists an id out of range";
      if (list[i] == u) return "self-loop at vertex " + std::to_string(u);
      if (i > 0 && list[i] <= list[i - 1]) return "the list of vertex " + std::to_string(u) + " is not strictly ascending";
    }
    const auto lower_end = static_cast<EdgeIndex>(std::lower_bound(list.begin(), list.end(), static_cast<Vertex>(u)) -
                                                  list.begin()) + g.offsets[u];
    if (next[u] != lower_end) return "an edge of vertex " + std::to_string(u) + " is missing its reverse";
    for (std::size_t i = lower_end - g.offsets[u]; i < list.size(); ++i) {
      const Vertex v = list[i];
      if (next[v] >= g.offsets[v + 1] || g.adj[next[v]] != u)
        return "edge " + std::to_string(u) + "-" + std::to_string(v) + " is missing its reverse";
      ++next[v];
    }
  }
  return "";
}

std::string describe(const CleanReport& r) {
  std::ostringstream os;
  os << r.input_edges << " input edges -> " << r.vertices << " vertices, " << r.edges
     << " undirected edges (dropped " << r.self_loops << " self-loops, " << r.duplicates
     << " duplicate edges; ids compacted from max " << r.max_input_id << ")";
  return os.str();
}

}  // namespace core::graph
