// Parallel-constraint graphs of the lifted GM QCQP (see gm_graph.hpp): validation, the spanning
// tree, band graphs on an ordering and the balanced certificate graph at a line.
#include "linefit/gm_graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <unordered_set>

#include "common/errors.hpp"

namespace core::linefit {

namespace {

std::int64_t edge_key(int n, int u, int v) {
  return static_cast<std::int64_t>(std::min(u, v)) * n + std::max(u, v);
}

int find_root(std::vector<int>& up, int v) {
  while (up[v] != v) v = up[v] = up[up[v]];
  return v;
}

}  // namespace

void GmGraph::validate() const {
  auto fail = [this](const std::string& what) { throw DataError("GM constraint graph '" + name + "': " + what); };
  if (n < 2) fail("needs at least 2 points, got " + std::to_string(n));
  if (edges.size() + 1 < static_cast<std::size_t>(n))
    fail(std::to_string(edges.size()) + " edges cannot connect " + std::to_string(n) + " points");
  std::unordered_set<std::int64_t> seen;
  std::vector<int> up(n);
  std::iota(up.begin(), up.end(), 0);
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto [u, v] = edges[e];
    if (u < 0 || v < 0 || u >= n || v >= n || u == v)
      fail("edge " + std::to_string(e) + " (" + std::to_string(u) + ", " + std::to_string(v) + ") is not a pair of points");
    if (!seen.insert(edge_key(n, u, v)).second) fail("edge " + std::to_string(e) + " repeats an earlier edge");
    if (e + 1 < static_cast<std::size_t>(n)) {
      const int ru = find_root(up, u), rv = find_root(up, v);
      if (ru == rv) fail("the first n - 1 edges are not a spanning tree (edge " + std::to_string(e) + " closes a cycle)");
      up[ru] = rv;
    }
  }
  std::vector<std::vector<int>> member(n);
  for (std::size_t c = 0; c < cliques.size(); ++c) {
    const auto& q = cliques[c];
    for (std::size_t a = 0; a < q.size(); ++a) {
      if (q[a] < 0 || q[a] >= n) fail("clique " + std::to_string(c) + " names point " + std::to_string(q[a]));
      member[q[a]].push_back(static_cast<int>(c));
      for (std::size_t b = a + 1; b < q.size(); ++b)
        if (!seen.count(edge_key(n, q[a], q[b])))
          fail("clique " + std::to_string(c) + " has the non-adjacent points " + std::to_string(q[a]) + ", " + std::to_string(q[b]));
    }
  }
  for (int v = 0; v < n; ++v)
    if (member[v].empty()) fail("point " + std::to_string(v) + " is in no clique");
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const auto& mu = member[edges[e][0]];
    const auto& mv = member[edges[e][1]];
    if (std::none_of(mu.begin(), mu.end(), [&mv](int c) { return std::find(mv.begin(), mv.end(), c) != mv.end(); }))
      fail("edge " + std::to_string(e) + " is in no clique");
  }
}

GmTree gm_spanning_tree(const GmGraph& g) {
  std::vector<std::vector<std::pair<int, int>>> adj(g.n);  // (neighbour, edge)
  for (int e = 0; e + 1 < g.n; ++e) {
    adj[g.edges[e][0]].emplace_back(g.edges[e][1], e);
    adj[g.edges[e][1]].emplace_back(g.edges[e][0], e);
  }
  GmTree t;
  t.parent.assign(g.n, -1);
  t.parent_edge.assign(g.n, -1);
  t.depth.assign(g.n, 0);
  const int root = g.edges[0][0];
  t.order.push_back(root);
  std::vector<char> done(g.n, 0);
  done[root] = 1;
  for (std::size_t k = 0; k < t.order.size(); ++k) {
    const int v = t.order[k];
    for (const auto& [w, e] : adj[v])
      if (!done[w]) {
        done[w] = 1;
        t.parent[w] = v;
        t.parent_edge[w] = e;
        t.depth[w] = t.depth[v] + 1;
        t.order.push_back(w);
      }
  }
  if (static_cast<int>(t.order.size()) != g.n) throw DataError("GM constraint graph '" + g.name + "': not connected");
  return t;
}

GmGraph gm_band_graph(const std::vector<int>& order, int k) {
  GmGraph g;
  g.n = static_cast<int>(order.size());
  k = std::max(1, std::min(k, g.n - 1));
  g.name = k == 1 ? "chain" : "band " + std::to_string(k);
  for (int d = 1; d <= k; ++d)
    for (int a = 0; a + d < g.n; ++a) g.edges.push_back({order[a], order[a + d]});
  for (int a = 0; a == 0 || a + k < g.n; ++a)
    g.cliques.emplace_back(order.begin() + a, order.begin() + std::min(g.n, a + k + 1));
  return g;
}

GmGraph gm_chain_graph(int n) {
  std::vector<int> order(std::max(0, n));
  std::iota(order.begin(), order.end(), 0);
  GmGraph g = gm_band_graph(order, 1);
  g.name = "chain (data order)";
  return g;
}

GmGraph gm_all_pairs_graph(int n) {
  std::vector<int> order(std::max(0, n));
  std::iota(order.begin(), order.end(), 0);
  GmGraph g = gm_band_graph(order, n - 1);
  g.name = "all pairs";
  return g;
}

std::vector<int> balanced_order(const std::vector<int>& items, const std::vector<double>& force) {
  std::vector<int> pos, neg;
  for (int i : items) (force[i] > 0.0 ? pos : neg).push_back(i);
  auto by_magnitude = [&force](int a, int b) { return std::abs(force[a]) > std::abs(force[b]); };
  std::sort(pos.begin(), pos.end(), by_magnitude);
  std::sort(neg.begin(), neg.end(), by_magnitude);
  std::vector<int> out;
  out.reserve(items.size());
  std::size_t p = 0, q = 0;
  double sum = 0.0;
  while (p < pos.size() || q < neg.size()) {
    const bool take_pos = q == neg.size() || (p < pos.size() && sum <= 0.0);
    const int i = take_pos ? pos[p++] : neg[q++];
    out.push_back(i);
    sum += force[i];
  }
  return out;
}

GmGraph gm_block_graph(const std::vector<int>& order, int b) {
  GmGraph g;
  g.n = static_cast<int>(order.size());
  b = std::max(1, std::min(b, g.n));
  g.name = "blocks of " + std::to_string(b);
  const int nb = (g.n + b - 1) / b;
  auto block = [&](int j) { return std::vector<int>(order.begin() + j * b, order.begin() + std::min(g.n, (j + 1) * b)); };
  for (int a = 0; a + 1 < g.n; ++a) g.edges.push_back({order[a], order[a + 1]});
  for (int j = 0; j < nb; ++j) {  // pairs inside block j, then between blocks j and j + 1, chain pairs skipped
    const int lo = j * b, hi = std::min(g.n, (j + 1) * b), hi2 = std::min(g.n, (j + 2) * b);
    for (int a = lo; a < hi; ++a)
      for (int c = a + 2; c < hi2; ++c) g.edges.push_back({order[a], order[c]});
  }
  for (int j = 0; j == 0 || j + 1 < nb; ++j) {
    std::vector<int> clique = block(j);
    if (j + 1 < nb) {
      const std::vector<int> next = block(j + 1);
      clique.insert(clique.end(), next.begin(), next.end());
    }
    g.cliques.push_back(std::move(clique));
  }
  return g;
}

namespace {

// Offset forces s_i^2 e_i at a line, the spine (s_i >= 1/2, in balanced order) and the others.
struct SpineSplit {
  std::vector<double> force;
  std::vector<int> spine, low;
};
SpineSplit spine_split(const Points& pts, const Line& line, double sigma) {
  check_fit_input(pts, "GM certificate graph");
  const int n = static_cast<int>(pts.size());
  const double s2 = sigma * sigma;
  SpineSplit sp;
  sp.force.resize(n);
  std::vector<int> spine;
  for (int i = 0; i < n; ++i) {
    const double e = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
    const double s = s2 / (s2 + e * e);
    sp.force[i] = s * s * e;
    (s >= 0.5 ? spine : sp.low).push_back(i);
  }
  sp.spine = balanced_order(spine, sp.force);
  return sp;
}

// Position in the spine (L points) after which low-weight point t of nl goes: floor((t + 1/2) L / nl).
std::size_t spread(std::size_t t, std::size_t L, std::size_t nl) { return (2 * t + 1) * L / (2 * nl); }

}  // namespace

std::vector<int> gm_interleaved_order(const Points& pts, const Line& line, double sigma) {
  const SpineSplit sp = spine_split(pts, line, sigma);
  const std::size_t L = sp.spine.size(), nl = sp.low.size();
  std::vector<int> out;
  out.reserve(L + nl);
  std::size_t t = 0;
  for (std::size_t a = 0; a < L; ++a) {
    out.push_back(sp.spine[a]);
    while (t < nl && spread(t, L, nl) <= a) out.push_back(sp.low[t++]);
  }
  while (t < nl) out.push_back(sp.low[t++]);
  return out;
}

GmGraph gm_balanced_graph(const Points& pts, const Line& line, double sigma, int b) {
  if (b >= 2) {
    GmGraph g = gm_block_graph(gm_interleaved_order(pts, line, sigma), b);
    g.name = "balanced " + g.name;
    return g;
  }
  const SpineSplit sp = spine_split(pts, line, sigma);
  if (sp.spine.size() < 2) {
    GmGraph g = gm_band_graph(gm_interleaved_order(pts, line, sigma), 1);
    g.name = "balanced chain";
    return g;
  }
  const std::size_t L = sp.spine.size(), nl = sp.low.size();
  GmGraph g = gm_band_graph(sp.spine, 1);
  g.n = static_cast<int>(L + nl);
  g.name = "balanced chain + " + std::to_string(nl) + " tied points";
  for (std::size_t t = 0; t < nl; ++t) {
    const int at = sp.spine[std::min(spread(t, L, nl), L - 1)];
    g.edges.push_back({at, sp.low[t]});
    g.cliques.push_back({at, sp.low[t]});
  }
  return g;
}

}  // namespace core::linefit
