// Cycle tables of pattern decomposition (decompose.hpp): the 4-cycles through every vertex or every
// edge, as the components of a cut need them (a square hanging off an edge: the house; off a vertex:
// a square with a pendant). Each 4-cycle is found once, at its smallest id a with opposite vertex y,
// from the walks a-w-y with w, y > a (Chiba & Nishizeki 1985; under degree ordering no walk passes
// through a hub from a smaller vertex): the c = c+(a, y) such walks close C(c, 2) cycles, on each of
// which a and y lie; each walk's vertex w and its two edges a-w, w-y lie on c - 1 of them. A second
// walk over the same wedges adds those numbers to the vertices or edges, so no cycle is listed.
// The 5-cycles through an edge a-b (a < b) are the paths a-x-y-z-b with all five vertices distinct:
// from a's paths of three edges p3(a, z) (walk_three_paths), S(b) = sum over z in N(b) of p3(a, z)
// counts them plus the walks that return to b, as x (a-b-y-z-b: y ~ z in N(b) - a, 2 (tri(b) -
// t(a, b)) ordered pairs) or as y (a-x-b-z-b: t(a, b) choices of x, deg(b) - 2 of z), so C5(a, b) =
// S(b) - 2 (tri(b) - t(a, b)) - t(a, b)(deg(b) - 2) (as the 7-cycle's p4 in decompose.cpp, on edges).
// The 5-cycles through a vertex come from the 5-cycle's pair cut (decompose.cpp). A 4-cycle a-b-c-d
// through an edge with a pendant on c (the house with a pendant at a base vertex, cut at its roof)
// comes from a's full wedge walk c(a, .): sum over c in N(b) - a of (c(a, c) - 1)(deg(c) - 2 - [c ~ a]).
// The wedge and path walks here are shared with the pair cuts' sums there.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/csr.hpp"
#include "graph/matcher.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"
#include "graph/triangle_tables.hpp"

namespace core::graph {

// Per-thread scratch of the wedge walks from one root a: common[y] = the walks a-w-y counted, each
// wedge end y listed once in ends. common is n zeros between roots (reset_wedges restores that).
// Cache-line aligned, as every per-thread scratch: the threads' vector headers (written by each
// push_back) never share a line.
struct alignas(64) WedgeScratch {
  PopulatedVector<std::uint32_t> common;
  std::vector<Vertex> ends;
};

// Fills s with c(a, y) for every y != a below `bound` with a wedge a-w-y (any w).
void walk_wedges(const Graph& g, Vertex a, Vertex bound, WedgeScratch& s);

// Fills s with c+(a, y): the walks a-w-y with w > a and y > a (the smallest-vertex walks of the
// 4-cycles at a; Chiba & Nishizeki). Under degree ordering a hub walks its neighbours' lists once and
// no walk passes through a hub from a smaller vertex.
void walk_upper_wedges(const Graph& g, Vertex a, WedgeScratch& s);

void reset_wedges(WedgeScratch& s);

// Per-thread scratch of the paths of three edges from one root a.
struct alignas(64) PathScratch {
  WedgeScratch wedges;            // c(a, y) for every wedge end y
  PopulatedVector<std::uint64_t> p3;  // p3(a, z): the paths a-x-y-z, all four distinct, for z != a
  std::vector<Vertex> p3_ends;    // the z touched (some may hold 0)
};

// Fills s with c(a, .) and p3(a, .) (s zero on entry; reset_three_paths restores that): the walks
// a-x-y-z with y, z != a, less for z ~ a the deg(z) - 1 walks a-z-y-z.
void walk_three_paths(const Graph& g, Vertex a, PathScratch& s);
void reset_three_paths(PathScratch& s);

// An edge table filled at one of each edge's two CSR slots (the other 0): both get the sum.
void symmetrise_edge_table(const Graph& g, const ExecOptions& opt, CountTable& table);

// k when `table` (a decomposition table: a rooted plan whose first `fixed` pattern vertices are the
// attachment) counts an unlabeled, edge-induced k-cycle rooted at one vertex or at one of its edges
// (k = 4, 5); 0 otherwise. Its embeddings with the root at v are 2 C_k(v) (the cycles through
// v, in either direction), with the root edge at (v, w) the cycles through that edge.
int rooted_cycle_length(const Plan& table, int fixed);

// The 4-cycles' table: per vertex v its embeddings 2 C4(v) (per_edge false), or per CSR slot
// (offsets[v] + rank of w in N(v)) the 4-cycles through the edge v-w, the same in both directions.
// Single process (opt.world_size 1); a DataError where a count could exceed 2^64 - 1.
CountTable four_cycle_table(const Graph& g, bool per_edge, const ExecOptions& opt);

// The 5-cycles through each edge, per CSR slot (both directions the same), from the paths of three
// edges of its smaller end (see above); `ot` the graph's oriented triangles. Single process; a
// DataError where a count could exceed 2^64 - 1.
CountTable five_cycle_edge_table(const Graph& g, const OrientedTriangles& ot, const ExecOptions& opt);

// r + 1 when `table` (fixed == 2, unlabeled, edge-induced) is a 4-cycle through its root edge 0-1 with
// one pendant on the cycle vertex x adjacent to root r (0 or 1): edges 0-1, 1-x, x-y, y-0, x-z for
// r = 1 (the house with a pendant at a base vertex cut at its roof edge); 0 otherwise.
int rooted_square_pendant(const Plan& table, int fixed);

// The embeddings of that rooted pattern per CSR slot (offsets[v] + rank of w in N(v), the roots 0, 1
// at v, w), from each root a's wedge walks c(a, .): with the pendant at root b's neighbour,
//   ext(a, b) = sum over c in N(b) - a of (c(a, c) - 1)(deg(c) - 2 - [c ~ a])
// (d in N(a) ∩ N(c) other than b; the pendant in N(c) other than b, d and a); with the pendant at
// root a's neighbour the same sum lands in the slot (b, a). Single process; a DataError where a count
// could exceed 2^64 - 1.
CountTable square_pendant_edge_table(const Graph& g, bool pendant_at_second, const ExecOptions& opt);

}  // namespace core::graph
