// Triangle tables of pattern decomposition (decompose.hpp): for every edge (v, w), t(v, w) = |N(v) ∩
// N(w)|, the triangles through it, and for every vertex v, tri(v) = the triangles through v, from one
// pass over the triangles in orientation order (each found once, at its largest id v, as v > u > w
// with u, w in N+(v), the smaller-id prefix; Latapy's forward algorithm / Schank's edge iterator): N+(v)
// is marked with each vertex's position in N(v), every u in N+(v) scans N+(u), and a marked w closes
// a triangle whose three edges' positions are then known (v-u and v-w in N(v), u-w in N(u)), so no
// list is merged or searched (and the scan has no branch: misses count into a spare slot). Work: the sum over oriented edges of |N+(u)| look-ups (short lists
// under degree ordering), against |N(v)| + |N(w)| merged elements per edge for intersecting the full
// lists. These are the tables of a triangle rooted at an edge or a vertex (diamond, tailed triangle,
// dumbbell, books, ...); decomposition uses them in place of count_per_edge / count_per_root.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "graph/csr.hpp"
#include "graph/matcher.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"

namespace core::graph {

// With several threads each thread counts into its own 4 m-byte table (summed at the end) while
// the extra tables fit in `private_bytes`; beyond that all threads share one table and add to the rows
// of other roots atomically.
constexpr std::size_t kTrianglePrivateBytes = std::size_t{512} << 20;

// t(v, w) for the oriented edges (w < v), at first[v] + the position of w in N(v): one 32-bit
// counter per edge (t <= the largest degree), 4 m bytes that stay in cache better than a CSR-wide
// table. Single process (opt.world_size 1).
struct OrientedTriangles {
  OrientedTriangles() = default;
  OrientedTriangles(OrientedTriangles&&) = default;  // `lower` may view own_lower: moved, never copied
  OrientedTriangles& operator=(OrientedTriangles&&) = default;
  LowerDegrees own_lower;                // lower_degrees(g) unless the caller had them (ExecOptions::lower)
  std::span<const std::uint32_t> lower;  // |N+(v)|
  PopulatedVector<EdgeIndex> first;      // n + 1 prefix sums of lower
  PopulatedVector<std::uint32_t> t;
  std::uint64_t triangles() const;       // the sum of t over the edges / 3
};
OrientedTriangles oriented_triangle_counts(const Graph& g, const ExecOptions& opt,
                                           std::size_t private_bytes = kTrianglePrivateBytes);

// t(v, w) for every CSR slot (index offsets[v] + rank of w in N(v)); both directions of an edge hold
// the same count.
CountTable edge_triangle_counts(const Graph& g, const OrientedTriangles& ot);
CountTable edge_triangle_counts(const Graph& g, const ExecOptions& opt, std::size_t private_bytes = kTrianglePrivateBytes);

// tri(v) for every vertex (half the sum of t over v's edges).
CountTable vertex_triangle_counts(const Graph& g, const OrientedTriangles& ot);
CountTable vertex_triangle_counts(const Graph& g, const ExecOptions& opt,
                                  std::size_t private_bytes = kTrianglePrivateBytes);

// Whether `table` (a decomposition table: a rooted plan whose first `fixed` pattern vertices are the
// attachment) counts an unlabeled triangle rooted at one vertex or at an edge. Its embeddings with
// the root at v are then 2 tri(v), with the root edge at (v, w) t(v, w).
bool is_rooted_triangle(const Plan& table, int fixed);

// The predicted cost of edge_triangle_counts in the plan cost model's units (merged elements).
double triangle_table_cost(const GraphStats& stats);

// Per vertex b, the edges among its neighbours, each once as (x, y) with y < x: the triangles through b. Found
// per b from N(b) marked, every x in N(b) scanning N(x) below x (the sum over x of deg(x) |N(x) below x| marks
// tested, short lists under degree ordering), counted in one pass and written in a second. 8 bytes per edge.
struct TriangleEdges {
  PopulatedVector<EdgeIndex> first;  // n + 1 prefix sums of tri(b)
  std::vector<Vertex> ends;          // x, y of edge i of b at ends[2 (first[b] + i)], [.. + 1]
  std::span<const Vertex> at(Vertex b) const { return {ends.data() + 2 * first[b], 2 * (first[b + 1] - first[b])}; }
};
// None where the lists would take more than max_bytes. Single process (opt.world_size 1).
std::optional<TriangleEdges> triangle_edge_lists(const Graph& g, const ExecOptions& opt, std::size_t max_bytes);

// The predicted cost of triangle_edge_lists (its two passes), in the plan cost model's units.
double triangle_edge_lists_cost(const GraphStats& stats);

// N(a) ∩ N(b) for every CSR slot (matcher.hpp's EdgeCommonLists), sized by edge_triangle_counts and each merged
// once: 8 bytes per slot and 4 per entry. None where that would exceed max_bytes. Single process.
std::optional<EdgeCommonLists> edge_common_lists(const Graph& g, const ExecOptions& opt, std::size_t max_bytes);

// The predicted cost of edge_common_lists: the edge triangle counts, then a merge of two lists per slot. Infinite
// where the lists, their triangles estimated from the closure (3 T = closure x the wedges), would exceed max_bytes.
double edge_common_lists_cost(const GraphStats& stats, std::size_t max_bytes);

// The triangle and edge lists above are built where they take at most this; beyond it their users fall back to
// merging lists.
constexpr std::size_t kTriangleListBytes = std::size_t{2} << 30;

}  // namespace core::graph
