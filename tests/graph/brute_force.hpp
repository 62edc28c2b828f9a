// The test oracle: counts pattern occurrences by trying every injective map of pattern vertices
// to graph vertices and dividing by the number of automorphisms, both found by plain
// enumeration with an adjacency matrix. Slow and obviously right; for graphs of a few dozen
// vertices only.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "graph/csr.hpp"
#include "graph/pattern.hpp"

namespace core::graph::test {

inline std::uint64_t brute_force_count(const Graph& g, const Pattern& p, bool vertex_induced) {
  const int n = static_cast<int>(g.n()), k = p.size();
  std::vector<std::vector<char>> a(n, std::vector<char>(n, 0));
  for (int u = 0; u < n; ++u)
    for (Vertex w : g.neighbors(u)) a[u][w] = 1;
  const auto label_ok = [&](int pv, int gv) { return !p.labeled() || g.labels[gv] == p.labels()[pv]; };
  // Injective maps f with f(edge) an edge (and f(non-edge) a non-edge when vertex-induced).
  std::vector<int> f(k);
  std::vector<char> used(n, 0);
  std::uint64_t maps = 0;
  auto rec = [&](auto&& self, int i) -> void {
    if (i == k) {
      ++maps;
      return;
    }
    for (int x = 0; x < n; ++x) {
      if (used[x] || !label_ok(i, x)) continue;
      bool ok = true;
      for (int j = 0; j < i && ok; ++j) {
        if (p.has_edge(i, j)) ok = a[x][f[j]];
        else if (vertex_induced) ok = !a[x][f[j]];
      }
      if (!ok) continue;
      f[i] = x;
      used[x] = 1;
      self(self, i + 1);
      used[x] = 0;
    }
  };
  rec(rec, 0);
  // |Aut(P)| by trying all permutations.
  std::vector<int> perm(k);
  std::iota(perm.begin(), perm.end(), 0);
  std::uint64_t aut = 0;
  do {
    bool ok = true;
    for (int u = 0; u < k && ok; ++u) {
      ok = p.label(u) == p.label(perm[u]);
      for (int v = 0; v < k && ok; ++v) ok = p.has_edge(u, v) == p.has_edge(perm[u], perm[v]);
    }
    aut += ok ? 1 : 0;
  } while (std::next_permutation(perm.begin(), perm.end()));
  return maps / aut;
}

}  // namespace core::graph::test
