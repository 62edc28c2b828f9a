// Complete split patterns: a k-clique joined to r >= 2 independent vertices (K_k + E_r: K5 minus an edge is
// K3 + E2, K6 minus an edge K4 + E2, K6 minus a triangle K3 + E3). Every match is a k-clique T and r of
// its common neighbours, so
//   count = sum over k-cliques T of C(c(T), r),   c(T) = |N(t_1) ∩ ... ∩ N(t_k)|,
// each clique found once, at its largest id a (its smallest degree under degree ordering). Per root a the
// rows of its oriented neighbours b are bitmaps over the whole N(a) (b's neighbours among a's, from
// N(b) ∩ N(a), galloped where b is a hub); the clique's other vertices are chosen among the bits below
// the last chosen (N+(a) is N(a)'s prefix) and c(T) is the popcount of the chosen rows' AND: one pass of
// d(a)/64 words per clique where enumerating the pattern merges the clique's full lists for every prefix
// (the pair plan of K5 minus an edge: a 3-way intersection per triangle). k >= 3 (k = 2, the diamond and
// books, are edge cuts with triangle tables); r = 1 is a clique.
#pragma once
#include <cstdint>
#include <optional>

#include "graph/csr.hpp"
#include "graph/parallel.hpp"
#include "graph/pattern.hpp"
#include "graph/plan.hpp"

namespace core::graph {

struct CompleteSplit {
  int clique = 0;       // k: the vertices adjacent to every other one
  int independent = 0;  // r: the others, pairwise non-adjacent
};

// p's split when p is unlabeled and K_k + E_r with k >= 3, r >= 2.
std::optional<CompleteSplit> as_complete_split(const Pattern& p);

// opt's share (by roots a) of the count of K_k + E_r; threads as opt says.
unsigned __int128 complete_split_count(const Graph& g, CompleteSplit split, const ExecOptions& opt);

// The predicted cost in plan units: the rows (the kernel's work for N(b) ∩ N(a) over the oriented edges,
// from g) plus per predicted k-clique (clique: the k-clique's plan) a pass over a low-degree root's words.
double complete_split_cost(const Graph& g, const GraphStats& stats, const Plan& clique);

}  // namespace core::graph
