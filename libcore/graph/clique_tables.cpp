// k-clique tables from one pass over the roots' local graphs (see clique_tables.hpp).
#include "graph/clique_tables.hpp"

#include <memory>
#include <stdexcept>

#include "graph/local_graph.hpp"
#include "graph/oriented_edges.hpp"

namespace core::graph {

OrientedCliques oriented_clique_counts(const Graph& g, int k, const ExecOptions& opt, std::size_t private_bytes) {
  if (opt.world_size != 1) throw std::logic_error("clique tables are computed in one process");
  if (k < 4) throw std::logic_error("clique tables count 4 or more vertices (triangles: triangle_tables.hpp)");
  OrientedCliques oc;
  oc.k = k;
  const Vertex n = g.n();
  const LowerDegrees& lower = lower_degrees(g, opt, oc.own_lower);
  oc.lower = lower;
  oc.first.resize(std::size_t{n} + 1);
  for (Vertex v = 0; v < n; ++v) oc.first[v + 1] = oc.first[v] + oc.lower[v];
  // The clique's edges inside the root's local graph belong to other roots' rows, shared between threads.
  ThreadCounters<std::uint64_t> counts(oc.first[n], opt.threads, private_bytes);
  std::vector<std::unique_ptr<LocalCliqueCounter>> local(opt.threads);
  parallel_roots(n, opt, [&](int th, Vertex begin, Vertex end) {
    if (!local[th]) local[th] = std::make_unique<LocalCliqueCounter>(g, lower, k, true);
    std::uint64_t* c = counts.of(th);
    for (Vertex v = begin; v < end; ++v) {
      if (counts.atomic()) local[th]->add_edge_cliques<true>(v, c, oc.first.data());
      else local[th]->add_edge_cliques<false>(v, c, oc.first.data());
    }
  });
  oc.c = counts.take();
  return oc;
}

unsigned __int128 OrientedCliques::cliques() const {
  unsigned __int128 sum = 0;
  for (std::uint64_t x : c) sum += x;
  return sum / static_cast<unsigned>(k * (k - 1) / 2);
}

CountTable edge_clique_counts(const Graph& g, const OrientedCliques& oc) {
  return symmetric_edge_table<std::uint64_t>(g, oc.lower, oc.first, oc.c);
}

CountTable vertex_clique_counts(const Graph& g, const OrientedCliques& oc) {
  return vertex_table<std::uint64_t>(g, oc.lower, oc.first, oc.c, static_cast<std::uint64_t>(oc.k - 1));
}

int rooted_clique_size(const Plan& table, int fixed) {
  const Pattern& p = table.pattern;
  const int k = p.size();
  const bool complete = p.edge_count() == k * (k - 1) / 2;
  return (fixed == 1 || fixed == 2) && k >= 4 && complete && !p.labeled() && table.induced == Induced::edge ? k : 0;
}

double clique_table_cost(const GraphStats& s, const Plan& clique) {
  // The rows of every root (as Plan::local_graph prices them, with the plan's deeper levels: the clique
  // plan's cost), a slot kept per row bit (a look-up's worth each, m out_degree_biased), the increments
  // (scattered, kIncrement each) and the two passes over the oriented edges to the CSR and vertex tables.
  constexpr double kIncrement = 4;
  const int k = clique.size();
  return clique.predicted_cost + s.m * s.out_degree_biased +
         kIncrement * (k * (k - 1) / 2.0) * clique.predicted_matches + 4 * s.m;
}

}  // namespace core::graph
