// Complete split patterns: a core joined to a rest, every rest vertex adjacent to every core vertex. Where the rest
// is r >= 2 independent vertices, every match is an embedding T of the core and r of its common neighbours, so
//   inj(P) = r! sum over the core's embeddings T of C(c(T), r),   c(T) = |N(t_1) ∩ ... ∩ N(t_k)|;
// an edge core's rest may have edges (the last kind below).
// The cores:
//  - a k-clique, k >= 3 (K_k + E_r: K5 minus an edge is K3 + E2, K6 minus an edge K4 + E2, K6 minus a triangle
//    K3 + E3). Each clique is found once, at its largest id a (its smallest degree under degree ordering).
//    Per root a the rows of its oriented neighbours b are bitmaps over the whole N(a) (b's neighbours among
//    a's, from N(b) ∩ N(a), galloped where b is a hub); the clique's other vertices are chosen among the bits
//    below the last chosen (N+(a) is N(a)'s prefix) and c(T) is the popcount of the chosen rows' AND: one pass
//    of d(a)/64 words per clique where enumerating the pattern merges the clique's full lists for every prefix
//    (the pair plan of K5 minus an edge: a 3-way intersection per triangle). k = 2, the diamond and books, are
//    edge cuts with triangle tables; r = 1 is a clique.
//  - three vertices x, y, z with the edge x-y, z adjacent to neither (K_{3,3} plus an edge) or to y alone
//    (K_{3,3} plus two edges at one vertex). Per edge x-y (once) its common neighbours T = N(x) ∩ N(y) are
//    scattered: every t in T adds one to cnt[w] for each w in N(t), so cnt[w] = c(x, y, w) for every vertex
//    w at once, in sum over t in T of d(t) steps (sum over vertices of d(t) times the triangles at t in all).
//    z is then every w outside {x, y}, or every w in N(y) \ {x} and, for y <-> x, N(x) \ {y}. Enumerating
//    the pattern instead intersects three lists per choice of z (astro-ph's K_{3,3} plus an edge: 11 CPU s
//    by cut, the scatter well under one).
//  - an edge x-y joined to a rest R that is not independent, counted in G_T, the graph T = N(x) ∩ N(y) induces,
//    from the same scatter (cnt[t] = d_T(t) for t in T): a star K_{1,s} (s >= 2) with i >= 1 isolated vertices,
//    sum over t in T of C(d_T(t), s) C(|T| - s - 1, i) (q101: an edge joined to a wedge and a vertex), or a 4-path,
//    sum over T's edges a-b of (d_T(a) - 1)(d_T(b) - 1) less 3 triangles of G_T, which summed over the edges are
//    10 per 5-clique of the graph (q105: an edge joined to a 4-path). inj(P) = 2 |Aut(R)| sum over edges.
//  - a triangle x-y-z joined to a star K_{1,s} (s >= 1) with i >= 1 isolated vertices (q109: a triangle joined to an
//    edge and a vertex). Per edge x-y (once) the graph T = N(x) ∩ N(y) induces is built as bitmap rows over T
//    (row(t) from N(t) ∩ T, at most the scatter's steps); each z in T below y closes the triangle once, its
//    common neighbours C = row(z), and the star's centre u in C has d_C(u) = popcount(row(u) & row(z)): the sum
//    over z of sum over u in C of C(d_C(u), s) C(|C| - s - 1, i), a few words per (z, u) where the cut's enumeration
//    merged N(u) with C (1.1 s on wiki-Vote, mostly those merges). inj(P) = 3! s! i! times the sum.
// Vertex ids are the graph's; unlabeled, edge-induced patterns only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "graph/csr.hpp"
#include "graph/parallel.hpp"
#include "graph/pattern.hpp"
#include "graph/plan.hpp"

namespace core::graph {

enum class SplitCore {
  clique,           // k vertices, pairwise adjacent
  edge_and_vertex,  // x-y and z: 3 vertices, one edge
  path,             // x-y-z: 3 vertices, two edges
  edge,             // x-y, joined to a star with isolated vertices or to a 4-path
  triangle,         // x-y-z, pairwise adjacent, joined to a star with isolated vertices
};

struct CompleteSplit {
  SplitCore core = SplitCore::clique;
  int clique = 0;       // k where the core is a clique (the vertices adjacent to every other one), else 0
  int independent = 0;  // r: the vertices outside the core, pairwise non-adjacent (edge, triangle: the isolated ones)
  int star = 0;         // edge, triangle core: the rest's star has this many leaves (edge: 0 is a 4-path)
};

// p's split when p is unlabeled and its core is a k-clique (k >= 3) or one of the 3-vertex cores, r >= 2, or an
// edge joined to a star with isolated vertices or to a 4-path, or a triangle joined to a star with isolated vertices.
std::optional<CompleteSplit> as_complete_split(const Pattern& p);

// The name of the core in reports ("3-clique", "edge and vertex", "path", "edge (rest: a 4-path)", ...).
std::string core_name(CompleteSplit split);

// opt's share (by roots) of inj(P), the injective edge-preserving maps of P; threads as opt says. The count is
// inj(P) / |Aut(P)| once the shares are summed (a share may be negative: the 4-path's 5-clique correction).
__int128 complete_split_embeddings(const Graph& g, CompleteSplit split, const ExecOptions& opt);

// The predicted cost in plan units. A clique core: the rows (the kernel's work for N(b) ∩ N(a) over the
// oriented edges, from g) plus per predicted k-clique a pass over a low-degree root's words. A 3-vertex core:
// the same intersections (T per edge) plus the scatter's steps (from stats.walks.triangle_scan) at
// kPairWalkStep and the reads of z's counts; an edge core's 4-path reads its scatter twice and counts the 5-cliques; a
// triangle core's rows are the scatter's steps and its words per (z, u) about one more read of them.
double complete_split_cost(const Graph& g, const GraphStats& stats, CompleteSplit split, Formula formula);

// An edge-and-vertex cut (Decomposition::edge_vertex): x-y and z adjacent to neither, joined to `commons` single
// vertices and `edges` >= 1 edges, all adjacent to x, y and z. opt's share (by roots) of R = the sum over the ordered
// edges x-y and the z outside {x, y} of c(x, y, z)^commons (2 e(x, y, z))^edges, c the common neighbours of the
// three and e the edges among them: per edge x-y (once, doubled) with T = N(x) ∩ N(y), e(x, y, z) for every z at
// once from the edges u-v of G_T, each adding one to every z in N(u) ∩ N(v) (N(u) marked, the shorter N(v)
// scanned; sum over the 4-cliques of the graph of 6 such scans), and c from the scatter of the 3-vertex cores.
// s023 of the 7-vertex sample (two K4s on one edge x-y, z joined to the four other vertices) sums (2e)^2.
unsigned __int128 edge_vertex_cut_sum(const Graph& g, int commons, int edges, const ExecOptions& opt);

// Its predicted cost in plan units (the counted triangles and 4-cliques of stats, which must be counted).
double edge_vertex_cut_cost(const Graph& g, const GraphStats& stats, int commons);

}  // namespace core::graph
