// The jobs of graphzero-mine as library calls: options (typed, with visit() for the config
// system), graph input (file, cache or generator; degree relabelling), the count / motifs / plan /
// list jobs and their JSON results. Under MPI the outer loop is split across the ranks found in
// the environment and counts are summed exactly (128-bit embedding shares, decompose.hpp); only rank 0
// returns a result.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "common/rundir.hpp"

namespace core::graph::jobs {

// Keys shared by every job: where the graph comes from and how it is read.
struct GraphKeys {
  std::string graph = "rmat:14";
  std::string vertex_labels;
  std::string graph_cache = "auto";
  std::string graph_sharing = "replicate";
  std::uint64_t seed = 1;
};

template <class V, class O>
void visit_graph_keys(V& v, O& o) {
  v("graph", o.graph,
    "edge list (.el/.txt), Matrix Market (.mtx), a CSR cache file (.csr, mapped), or a generator "
    "rmat:SCALE[:EF] / gnp:N:P");
  v("vertex_labels", o.vertex_labels, "file with one vertex label per line (empty: unlabeled)");
  v("graph_cache", o.graph_cache,
    "binary CSR cache of the degree-relabelled graph, written once and memory-mapped by later runs: auto "
    "($XDG_CACHE_HOME or ~/.cache/toolkit/graphs; files only), off, or a folder (generated graphs too); a "
    "damaged cache is an error (exit 65) naming it, a stale one is rebuilt");
  v("graph_sharing", o.graph_sharing,
    "under several MPI ranks: replicate (every rank loads the input itself) or one_file (rank 0 writes the "
    "graph cache, every rank maps that one file, whose pages the ranks of a host share; the cache folder "
    "must be visible to all ranks; graph_cache auto keeps generated graphs there too)",
    core::one_of({"replicate", "one_file"}));
  v("seed", o.seed, "seed of generated graphs and of the cost model's sampling");
}
template <class V, class O>
void visit_mining_keys(V& v, O& o) {
  v("induced", o.induced, "edge: every subgraph whose edges include the pattern's; vertex: induced subgraphs",
    core::one_of({"edge", "vertex"}));
  v("threads", o.threads, "worker threads (0: OMP_NUM_THREADS when set, else all cores)", core::at_least(0));
}
template <class V, class O>
void visit_formula_key(V& v, O& o) {
  v("formula", o.formula,
    "count the last levels by a formula instead of enumerating them (inclusion-exclusion over independent "
    "tail vertices, closed-form pairs): auto (when the cost model predicts it cheaper), on (wherever the "
    "pattern allows), off (enumerate)",
    core::one_of({"auto", "on", "off"}));
}

struct CountOptions : GraphKeys {
  std::string pattern = "4-clique";
  std::string pattern_labels;
  std::string induced = "edge";
  int threads = 0;
  std::string backend = "interp";
  std::string jit_cache;
  std::vector<int> order;
  std::string formula = "auto";
  std::string local_graph = "auto";
  bool split_roots = true;
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("pattern", pattern, "pattern name (triangle, 4-clique, 5-cycle, house, ...), edges 0-1,1-2,2-0, or a file");
    v("pattern_labels", pattern_labels, "labels of the pattern's vertices, e.g. 0,1,0 (empty: unlabeled)");
    visit_mining_keys(v, *this);
    visit_formula_key(v, *this);
    v("local_graph", local_graph,
      "count cliques in each root's local graph (its oriented neighbours as bitmap rows, the last level a "
      "popcount; interpreter only): auto (when the cost model predicts it cheaper), on (every clique), off",
      core::one_of({"auto", "on", "off"}));
    v("split_roots", split_roots,
      "run each heavy root (estimated work above 1/128 of the total per rank) as several tasks over its "
      "level-1 candidates, and the other roots in chunks of equal estimated work, so that no thread is left "
      "alone with one big root at the end");
    v("backend", backend,
      "interp (plan interpreter), jit (generated C++, compiled and cached; under a decomposition the "
      "quotients' plans are compiled, the sums over the cut run in the library) or auto (jit where its "
      "kernels are cached or the predicted matching takes 3 s or more, since a first compile takes 0.6-0.9 s; "
      "interp for shorter counts and for cliques in local graphs)",
      core::one_of({"interp", "jit", "auto"}));
    v("jit_cache", jit_cache, "folder of compiled kernels (empty: ~/.cache/toolkit/graphzero-jit)");
    v("order", order, "matching order to use instead of the explorer's choice (empty: explore)");
  }
};

struct PlanOptions : GraphKeys {
  std::string pattern = "4-clique";
  std::string pattern_labels;
  std::string induced = "edge";
  std::vector<int> order;
  bool emit_cpp = false;
  std::string formula = "auto";
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("pattern", pattern, "pattern name, edge list or file");
    v("pattern_labels", pattern_labels, "labels of the pattern's vertices, e.g. 0,1,0");
    v("induced", induced, "edge or vertex", core::one_of({"edge", "vertex"}));
    visit_formula_key(v, *this);
    v("order", order, "matching order to use instead of the explorer's choice (empty: explore)");
    v("emit_cpp", emit_cpp, "include the generated C++ of the compiled back-end in the result");
  }
};

struct ListOptions : GraphKeys {
  std::string pattern = "triangle";
  std::string pattern_labels;
  std::string induced = "edge";
  int threads = 0;
  std::uint64_t limit = 20;
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("pattern", pattern, "pattern name, edge list or file");
    v("pattern_labels", pattern_labels, "labels of the pattern's vertices, e.g. 0,1,0");
    visit_mining_keys(v, *this);
    v("limit", limit, "stop after this many matches", core::positive<std::uint64_t>());
  }
};

struct MotifOptions : GraphKeys {
  int size = 4;
  std::string induced = "edge";
  int threads = 0;
  std::string formula = "auto";
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("size", size, "pattern size k: every connected k-vertex pattern is counted", core::in_range(1, 7));
    visit_mining_keys(v, *this);
    visit_formula_key(v, *this);
  }
};

// Each job returns its JSON result (nullopt on MPI ranks other than 0). rundir, when not null,
// receives the artifacts (plan.json, plan.txt, kernel.cpp) and metrics. Errors are thrown as
// core::Error subclasses (usage, data, missing input, I/O).

// {count, time_s (matching only), match_cpu_s, plan_time_s, load/orient/compile times, plan, graph, ...}
std::optional<nlohmann::json> count(const CountOptions& o, RunDir* rundir);
// {size, patterns: [{pattern, edges, automorphisms, count, plan_time_s}], time_s, ...}
std::optional<nlohmann::json> motifs(const MotifOptions& o);
// {plan, text, plan_time_s, graph[, cpp]}
nlohmann::json plan(const PlanOptions& o);
// Writes one JSON array of original vertex ids per match to `matches`; returns {listed, limit, complete, ...}.
nlohmann::json list(const ListOptions& o, RunDir* rundir, std::ostream& matches);

}  // namespace core::graph::jobs
