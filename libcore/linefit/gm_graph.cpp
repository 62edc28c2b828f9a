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

GmGraph gm_balanced_graph(const Points& pts, const Line& line, double sigma, int k, int ties) {
  check_fit_input(pts, "GM certificate graph");
  const int n = static_cast<int>(pts.size());
  k = std::max(1, std::min(k, n - 1));
  if (ties <= 0) ties = k;
  const double s2 = sigma * sigma;
  std::vector<double> force(n);
  std::vector<int> spine, leaves, all(n);
  std::iota(all.begin(), all.end(), 0);
  for (int i = 0; i < n; ++i) {
    const double e = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
    const double s = s2 / (s2 + e * e);
    force[i] = s * s * e;
    (s >= 0.5 ? spine : leaves).push_back(i);
  }
  if (static_cast<int>(spine.size()) < std::max(k, ties) + 1) {
    GmGraph g = gm_band_graph(balanced_order(all, force), k);
    g.name = "balanced " + g.name;
    return g;
  }
  const std::vector<int> S = balanced_order(spine, force);
  const int L = static_cast<int>(S.size()), nl = static_cast<int>(leaves.size());
  GmGraph g = gm_band_graph(S, k);
  g.n = n;
  g.name = "balanced " + g.name + " + " + std::to_string(nl) + " tied points";
  std::vector<std::array<int, 2>> chain(g.edges.begin(), g.edges.begin() + (L - 1)), rest(g.edges.begin() + (L - 1), g.edges.end());
  g.edges = std::move(chain);
  for (int t = 0; t < nl; ++t) {  // tree edge of each tied point first, its other k - 1 edges after
    const int st = static_cast<int>(static_cast<long long>(t) * (L - ties + 1) / nl);
    g.edges.push_back({S[st], leaves[t]});
    for (int j = 1; j < ties; ++j) rest.push_back({S[st + j], leaves[t]});
    std::vector<int> clique(S.begin() + st, S.begin() + st + ties);
    clique.push_back(leaves[t]);
    g.cliques.push_back(std::move(clique));
  }
  g.edges.insert(g.edges.end(), rest.begin(), rest.end());
  return g;
}

}  // namespace core::linefit
