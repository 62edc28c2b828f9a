// Cone patterns: a pattern P with an apex a, a vertex adjacent to every other one, is counted in the
// neighbourhoods of the graph's vertices. An embedding maps a to some vertex h and the rest, Q = P - a,
// into N(h), every edge to a holding by construction and no vertex of Q landing on h, so
//   inj(P) = sum over h of inj(Q, G[N(h)]),
// the embeddings of Q in the subgraph induced by h's neighbours. Each G[N(h)] is built (vertex i =
// the i-th of N(h), so a degree-ordered graph gives roughly degree-ordered neighbourhoods; its lists
// from N(b) ∩ N(h), merged or galloped) and Q is counted there by its own best strategy (count_with:
// a 4-cycle by its pair cut, a diamond from triangle tables, ...) where enumerating P runs every level
// over sets inside N(h) without those strategies. The 4-wheel (a 4-cycle around a hub) is the 4-cycles
// of every neighbourhood, K5 minus an edge the diamonds.
// Double cones: two apexes a, b that are not adjacent (twins: both adjacent to every other vertex, so the
// swap a <-> b is an automorphism) map to x != y and the rest into their common neighbourhood:
//   inj(P) = sum over x != y of inj(Q, G[N(x) ∩ N(y)]) = 2 sum over y < x of inj(Q, G[N(x) ∩ N(y)]),
// Q = P - a - b, the pairs with enough common neighbours found by x's wedge walks below x. Two
// non-adjacent tips joined to a path of four (q098 of the six-vertex patterns) are the paths of four in
// every pair's common neighbourhood: per pair, one graph of a few vertices instead of the common
// neighbours intersected again for every diamond.
// Vertices of Q with no edge inside Q (a pendant of the apex; a vertex joined to the twins alone) are not
// enumerated: with Q' the others, inj(Q, H) = inj(Q', H) (|H| - |Q'|)_k for k such vertices. Pendants of a single
// apex whose Q' is a tree are left to the decomposition at the apex, whose degree tables took q037 and q058 in
// 0.026 s on email-Enron (0.065 s through the apex); with a cycle in Q' the apex wins (q078, a 4-cycle and a
// pendant under an apex: 3.6 -> 0.13 s on email-Enron).
// The planner (decompose.cpp) prices each form by building local graphs sampled in proportion to their
// building work and planning Q' on the heaviest (apex_pricing), and takes it when that is cheaper than the
// pattern's plan or decompositions.
#pragma once
#include <cstdint>
#include <optional>

#include "graph/csr.hpp"
#include "graph/decompose.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"

namespace core::graph {

// An apex of p (the first vertex adjacent to every other one), or -1; only for unlabeled patterns of 4 or
// more vertices that are not complete (cliques have their local graphs).
int apex_vertex(const Pattern& p);

// The vertices a cone pattern is counted through: an apex, and a second one not adjacent to it or -1.
struct Cone {
  int vertex = -1;
  int twin = -1;
};

// p's cone forms: its apex (apex_vertex) and its first pair of twin apexes (non-adjacent, each adjacent to every
// other vertex), each where the rest less the vertices with no edge in it (a single apex: unless that is a tree)
// is connected with three vertices or more; unlabeled patterns of 4 or more vertices. A rest of isolated vertices and at most one edge
// is the pair cut's (decompose.hpp: K_{2,r} and joined edges, from wedges and triangles, 1.6x faster on
// as-22july06) or the triangle tables' at a single apex.
std::vector<Cone> cones(const Pattern& p);

// What is counted in each local graph: Q' (the rest's vertices with an edge in it) and the isolated ones.
struct ConeRest {
  Pattern pattern;
  int isolated = 0;
};
ConeRest cone_rest(const Pattern& p, const Cone& c);

// The predicted cost of counting through a cone (plan cost units, work of finding the pairs and building
// every local graph included) and the plan of Q' chosen on the heaviest sampled local graph.
struct ApexPricing {
  double cost = 0;
  CountPlan rest;
  // One apex: the same samples' price of enumerating the rest in every neighbourhood (choose_plan, formulas
  // as given): enumerating p from its apex, priced with each neighbourhood's own density (the whole graph's
  // closure underprices the dense neighbourhoods that cone patterns live in). 0 for twins.
  double enumerated = 0;
};
ApexPricing apex_pricing(const Graph& g, const ConeRest& rest, bool twins, Formula formula);

// opt's share of inj(P): the sum over its roots h of inj(Q, G[N(h)]) (ap.rest counts Q'), or with twins
// over its roots x of 2 inj(Q, G[N(x) ∩ N(y)]) for y < x, on opt.threads threads.
__int128 apex_embedding_share(const Graph& g, const ApexPlan& ap, const ExecOptions& opt);

}  // namespace core::graph
