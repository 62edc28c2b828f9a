// Tables over the oriented edges (triangle_tables.hpp, clique_tables.hpp): the edge v-w with w < v at
// first[v] + the position of w in N+(v) (the smaller-id prefix of N(v), lower[v] long; first the prefix
// sums of lower), and their CSR-wide form (both directions of an edge, one slot each) and per-vertex sums.
#pragma once
#include <cstdint>
#include <span>

#include "graph/csr.hpp"
#include "graph/matcher.hpp"

namespace core::graph {

// x(v, w) for every CSR slot (offsets[v] + rank of w in N(v)); both directions hold the oriented edge's value.
template <class T>
CountTable symmetric_edge_table(const Graph& g, std::span<const std::uint32_t> lower, std::span<const EdgeIndex> first,
                                std::span<const T> oriented) {
  // Each oriented edge's value goes to its lower slot (v, w < v) and to (w, v): for a fixed w the larger
  // neighbours v come in increasing order, as they follow the prefix in w's sorted list.
  CountTable t(g.adj.size());
  PopulatedVector<EdgeIndex> next(g.n());
  for (Vertex w = 0; w < g.n(); ++w) next[w] = g.offsets[w] + lower[w];
  for (Vertex v = 0; v < g.n(); ++v)
    for (std::uint32_t i = 0; i < lower[v]; ++i) {
      const EdgeIndex s = g.offsets[v] + i;
      t[s] = t[next[g.adj[s]]++] = oriented[first[v] + i];
    }
  return t;
}

// For every vertex the sum of its edges' values divided by `per`: a structure through v counted on `per`
// of v's edges (a triangle on two, a k-clique on k - 1) is counted once.
template <class T>
CountTable vertex_table(const Graph& g, std::span<const std::uint32_t> lower, std::span<const EdgeIndex> first,
                        std::span<const T> oriented, std::uint64_t per) {
  CountTable sum(g.n(), 0);
  for (Vertex v = 0; v < g.n(); ++v)
    for (std::uint32_t i = 0; i < lower[v]; ++i) {
      const std::uint64_t x = oriented[first[v] + i];
      sum[v] += x;
      sum[g.adj[g.offsets[v] + i]] += x;
    }
  for (auto& x : sum) x /= per;
  return sum;
}

}  // namespace core::graph
