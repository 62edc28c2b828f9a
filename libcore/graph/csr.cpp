// CSR construction and degree-ordered relabelling (see csr.hpp). Input edges may contain any
// 64-bit ids, in any order and direction; the result has sorted, duplicate-free neighbour lists.
#include "graph/csr.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "common/threads.hpp"
#include "graph/large_vector.hpp"
#include "graph/parallel.hpp"
#include "graph/sort_ids.hpp"

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
  threads = threads > 0 ? threads : core::thread_count();
  const std::uint32_t max_degree = g.max_degree();
  // The new order: a stable counting sort by decreasing degree. Vertices are cut into `blocks` consecutive
  // ranges, each counting its degrees in its own table (at most about n / 4 entries in all), so that ranges of
  // one degree are placed block after block, ids ascending within each: ties stay in id order.
  const auto blocks = static_cast<int>(std::clamp<std::uint64_t>(n / (4 * (std::uint64_t{max_degree} + 1)), 1, threads));
  const auto block_begin = [&](std::uint64_t b) { return static_cast<Vertex>(b * n / blocks); };
  const std::size_t width = std::size_t{max_degree} + 1;
  std::vector<std::uint32_t> at(blocks * width, 0);  // per block and degree: its count, then its next position
  parallel_chunks(threads, blocks, [&](int, std::uint64_t b) {
    std::uint32_t* count = at.data() + b * width;
    for (Vertex v = block_begin(b); v < block_begin(b + 1); ++v) ++count[g.degree(v)];
  });
  // first[d]: where degree d's vertices begin in the new order; the lists before them hold base[d] entries.
  std::vector<Vertex> first(width);
  std::vector<EdgeIndex> base(width);
  {
    Vertex pos = 0;
    EdgeIndex entries = 0;
    for (std::size_t d = width; d-- > 0;) {
      first[d] = pos;
      base[d] = entries;
      for (int b = 0; b < blocks; ++b) {
        const std::uint32_t c = at[b * width + d];
        at[b * width + d] = pos;
        pos += c;
        entries += EdgeIndex{c} * d;
      }
    }
  }
  // Each vertex's place i: its rank, the new offsets (within a degree, lists follow at equal steps), original
  // ids and labels.
  Graph h;
  std::vector<Vertex> order(n), rank(n);
  std::vector<EdgeIndex> offsets(std::size_t{n} + 1);
  std::vector<std::uint64_t> original_ids(n);
  if (g.labeled()) h.labels.resize(n);
  offsets[n] = g.adj.size();
  parallel_chunks(threads, blocks, [&](int, std::uint64_t b) {
    std::uint32_t* next = at.data() + b * width;
    for (Vertex v = block_begin(b); v < block_begin(b + 1); ++v) {
      const std::uint32_t d = g.degree(v);
      const Vertex i = next[d]++;
      order[i] = v;
      rank[v] = i;
      offsets[i] = base[d] + EdgeIndex{i - first[d]} * d;
      original_ids[i] = g.original_ids[v];
      if (g.labeled()) h.labels[i] = g.labels[v];
    }
  });
  at = std::vector<std::uint32_t>();
  h.offsets = std::move(offsets);
  h.original_ids = std::move(original_ids);
  h.adj = large_vector<Vertex>(g.adj.size());
  // The lists, renamed and sorted (sort_ids), in parallel: tasks of consecutive vertices of about 2^16 entries
  // (a heavier vertex alone), so the first tasks, the hubs, are not one thread's tail.
  constexpr EdgeIndex kTaskEntries = EdgeIndex{1} << 16;
  std::vector<Vertex> task_start{0};
  while (task_start.back() < n) {
    const EdgeIndex until = h.offsets[task_start.back()] + kTaskEntries;
    const auto next = static_cast<Vertex>(std::upper_bound(h.offsets.begin() + task_start.back() + 1, h.offsets.end(), until) -
                                          h.offsets.begin() - 1);
    task_start.push_back(std::max<Vertex>(next, task_start.back() + 1));
  }
  const int bits = id_bits(n);
  std::vector<std::vector<Vertex>> scratch(threads);
  parallel_chunks(threads, task_start.size() - 1, [&](int t, std::uint64_t task) {
    for (Vertex i = task_start[task]; i < task_start[task + 1]; ++i) {
      Vertex* const list = h.adj.data() + h.offsets[i];
      Vertex* out = list;
      for (Vertex w : g.neighbors(order[i])) *out++ = rank[w];
      sort_ids(list, out, bits, scratch[t]);
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
