// Cone patterns: a pattern P with an apex a, a vertex adjacent to every other one, is counted in the
// neighbourhoods of the graph's vertices. An embedding maps a to some vertex h and the rest, Q = P - a,
// into N(h), every edge to a holding by construction and no vertex of Q landing on h, so
//   inj(P) = sum over h of inj(Q, G[N(h)]),
// the embeddings of Q in the subgraph induced by h's neighbours. Each G[N(h)] is built (vertex i =
// the i-th of N(h), so a degree-ordered graph gives roughly degree-ordered neighbourhoods; its lists
// from N(b) ∩ N(h), merged or galloped) and Q is counted there by its own best strategy (count_with:
// a 4-cycle by its pair cut, a diamond from triangle tables, ...) where enumerating P runs every level
// over sets inside N(h) without those strategies. The 4-wheel (a 4-cycle around a hub) is the 4-cycles
// of every neighbourhood, K5 minus an edge the diamonds. The planner (decompose.cpp) prices it by
// building neighbourhoods sampled in proportion to their building work and planning Q on each
// (apex_pricing), and takes it when that is cheaper than the pattern's plan or decompositions.
#pragma once
#include <cstdint>

#include "graph/csr.hpp"
#include "graph/decompose.hpp"
#include "graph/parallel.hpp"
#include "graph/plan.hpp"

namespace core::graph {

// An apex of p (the first vertex adjacent to every other one), or -1; only for unlabeled patterns of 4 or
// more vertices that are not complete (cliques have their local graphs).
int apex_vertex(const Pattern& p);

// The predicted cost of counting p through its apex (plan cost units, work of building every
// neighbourhood graph included) and the plan of the rest chosen on the heaviest sampled neighbourhood.
struct ApexPricing {
  double cost = 0;
  CountPlan rest;
  // The same samples' price of enumerating the rest in every neighbourhood (choose_plan, formulas as
  // given): enumerating p from its apex, priced with each neighbourhood's own density (the whole graph's
  // closure underprices the dense neighbourhoods that cone patterns live in).
  double enumerated = 0;
};
ApexPricing apex_pricing(const Graph& g, const Pattern& rest, Formula formula);

// opt's share of inj(P) = sum over its roots h of inj(Q, G[N(h)]) (ap.rest counts Q), on opt.threads
// threads.
__int128 apex_embedding_share(const Graph& g, const ApexPlan& ap, const ExecOptions& opt);

}  // namespace core::graph
