// Cycle tables of pattern decomposition (decompose.hpp): the 4-cycles through every vertex or every
// edge, as the components of a cut need them (a square hanging off an edge: the house; off a vertex:
// a square with a pendant). Each 4-cycle is found once, at its smallest id a with opposite vertex y,
// from the walks a-w-y with w, y > a (Chiba & Nishizeki 1985; under degree ordering no walk passes
// through a hub from a smaller vertex): the c = c+(a, y) such walks close C(c, 2) cycles, on each of
// which a and y lie; each walk's vertex w and its two edges a-w, w-y lie on c - 1 of them. A second
// walk over the same wedges adds those numbers to the vertices or edges, so no cycle is listed.
// The 5-cycles through a vertex come from the 5-cycle's pair cut (decompose.cpp). The wedge walks
// here are shared with the pair cuts' sums there.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/csr.hpp"
#include "graph/matcher.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"

namespace core::graph {

// Per-thread scratch of the wedge walks from one root a: common[y] = the walks a-w-y counted, each
// wedge end y listed once in ends. common is n zeros between roots (reset_wedges restores that).
struct WedgeScratch {
  std::vector<std::uint32_t> common;
  std::vector<Vertex> ends;
};

// Fills s with c(a, y) for every y != a below `bound` with a wedge a-w-y (any w).
void walk_wedges(const Graph& g, Vertex a, Vertex bound, WedgeScratch& s);

// Fills s with c+(a, y): the walks a-w-y with w > a and y > a (the smallest-vertex walks of the
// 4-cycles at a; Chiba & Nishizeki). Under degree ordering a hub walks its neighbours' lists once and
// no walk passes through a hub from a smaller vertex.
void walk_upper_wedges(const Graph& g, Vertex a, WedgeScratch& s);

void reset_wedges(WedgeScratch& s);

// k when `table` (a decomposition table: a rooted plan whose first `fixed` pattern vertices are the
// attachment) counts an unlabeled, edge-induced k-cycle rooted at one vertex (k = 4, 5) or at one of
// its edges (k = 4); 0 otherwise. Its embeddings with the root at v are 2 C_k(v) (the cycles through
// v, in either direction), with the root edge at (v, w) the cycles through that edge.
int rooted_cycle_length(const Plan& table, int fixed);

// The 4-cycles' table: per vertex v its embeddings 2 C4(v) (per_edge false), or per CSR slot
// (offsets[v] + rank of w in N(v)) the 4-cycles through the edge v-w, the same in both directions.
// Single process (opt.world_size 1); a DataError where a count could exceed 2^64 - 1.
CountTable four_cycle_table(const Graph& g, bool per_edge, const ExecOptions& opt);

}  // namespace core::graph
