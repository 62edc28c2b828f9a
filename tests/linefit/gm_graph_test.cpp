// Constraint graphs of the GM QCQP (gm_graph.hpp): band and block graphs and their cliques, the
// balanced order's bounded partial sums, the balanced certificate graphs' structure, validation errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <utility>

#include "common/errors.hpp"
#include "linefit/gm.hpp"
#include "linefit/gm_graph.hpp"
#include "line_data.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::linefit;
using fixtures::line_data;

TEST_CASE("band graphs: edges, cliques, spanning tree first") {
  const GmGraph chain = gm_chain_graph(7);
  CHECK(chain.edges.size() == 6);
  CHECK(chain.cliques.size() == 6);
  chain.validate();
  const GmGraph all = gm_all_pairs_graph(7);
  CHECK(all.edges.size() == 21);
  CHECK(all.cliques.size() == 1);
  all.validate();
  std::vector<int> order = {3, 0, 6, 1, 5, 2, 4};
  const GmGraph band = gm_band_graph(order, 3);
  CHECK(band.edges.size() == 6 + 5 + 4);
  CHECK(band.cliques.size() == 4);  // windows of 4 consecutive points
  band.validate();
  for (int e = 0; e < 6; ++e) CHECK(band.edges[e] == std::array<int, 2>{order[e], order[e + 1]});
  const GmTree t = gm_spanning_tree(band);
  CHECK(t.order.front() == 3);
  CHECK(t.parent[3] == -1);
  CHECK(t.depth[4] == 6);
}

TEST_CASE("balanced order: every partial sum within the largest force of zero (forces summing to zero)") {
  const std::vector<double> f = {0.5, -0.1, 0.3, -0.7, 0.2, -0.4, 0.1, 0.1};  // sums to 0
  std::vector<int> items(f.size());
  std::iota(items.begin(), items.end(), 0);
  const std::vector<int> o = balanced_order(items, f);
  CHECK(o.size() == f.size());
  double sum = 0.0, worst = 0.0;
  for (int i : o) worst = std::max(worst, std::abs(sum += f[i]));
  CHECK(worst <= 0.7 + 1e-12);
  std::vector<int> sorted = o;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == items);
}

TEST_CASE("balanced certificate graph: chain spine with low-weight leaves; blocks on the interleaved order") {
  const Points p = line_data(80, 0.25, 0.05, 2);
  const double sigma = 0.5;
  const Line line = irls_gm(p, sigma).line;
  std::vector<bool> spine(80, false);
  int n_low = 0;
  for (int i = 0; i < 80; ++i) {
    const double e = line.a * p.x[i] + line.b * p.y[i] - line.c;
    spine[i] = sigma * sigma / (sigma * sigma + e * e) >= 0.5;
    n_low += !spine[i];
  }
  REQUIRE(n_low > 5);
  const GmGraph chain = gm_balanced_graph(p, line, sigma, 1);
  chain.validate();
  CHECK(chain.edges.size() == 79);  // a tree
  std::vector<int> degree(80, 0);
  for (const auto& [u, v] : chain.edges) {
    CHECK((spine[u] || spine[v]));  // no edge between two low-weight points
    ++degree[u], ++degree[v];
  }
  for (int i = 0; i < 80; ++i)
    if (!spine[i]) CHECK(degree[i] == 1);  // leaves
  // Interleaved order: a permutation, low-weight points never two in a row while spine points remain.
  const std::vector<int> order = gm_interleaved_order(p, line, sigma);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(80);
  std::iota(all.begin(), all.end(), 0);
  CHECK(sorted == all);
  for (int a = 0; a + 1 < 80; ++a) CHECK((spine[order[a]] || spine[order[a + 1]]));
  const GmGraph blocks = gm_balanced_graph(p, line, sigma, 3);
  blocks.validate();
  CHECK(blocks.cliques.size() == 26);  // 27 blocks of 3 (the last of 2), cliques of consecutive pairs
  const GmGraph plain = gm_block_graph(all, 3);
  plain.validate();
  // every pair at distance <= 3 in the order is an edge (blocks of b contain band b)
  std::set<std::pair<int, int>> e;
  for (const auto& [u, v] : plain.edges) e.insert({std::min(u, v), std::max(u, v)});
  for (int a = 0; a < 80; ++a)
    for (int d = 1; d <= 3 && a + d < 80; ++d) CHECK(e.count({a, a + d}) == 1);
}

TEST_CASE("graph validation names the broken invariant") {
  GmGraph g = gm_chain_graph(4);
  g.validate();
  GmGraph few = g;
  few.edges.pop_back();
  CHECK_THROWS_WITH_AS(few.validate(), doctest::Contains("cannot connect"), DataError);
  GmGraph cycle = g;
  cycle.edges = {{0, 1}, {1, 2}, {2, 0}, {2, 3}};
  cycle.cliques = {{0, 1, 2}, {2, 3}};
  CHECK_THROWS_WITH_AS(cycle.validate(), doctest::Contains("not a spanning tree"), DataError);
  GmGraph twice = g;
  twice.edges.push_back({1, 0});
  CHECK_THROWS_WITH_AS(twice.validate(), doctest::Contains("repeats"), DataError);
  GmGraph loose = g;
  loose.cliques = {{0, 1, 2}, {2, 3}};
  CHECK_THROWS_WITH_AS(loose.validate(), doctest::Contains("non-adjacent"), DataError);
  GmGraph uncovered = g;
  uncovered.cliques = {{0, 1}, {2, 3}};
  CHECK_THROWS_WITH_AS(uncovered.validate(), doctest::Contains("in no clique"), DataError);
  GmGraph bad = g;
  bad.edges[1] = {1, 7};
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("not a pair of points"), DataError);
}
