// graphzero-mine: graph pattern mining with GraphZero's symmetry-breaking restrictions, schedule
// explorer and generalised orientation; an interpreter and a compiled (JIT) back-end; the outer
// loop split over MPI ranks when launched under mpirun/srun.
//   graphzero-mine count  --graph FILE|rmat:S|gnp:N:P --pattern NAME|EDGES [--induced edge|vertex]
//                         [--threads T] [--backend interp|jit]          -> JSON {count, time_s, ...}
//   graphzero-mine motifs --graph FILE --size K [--induced ...]         -> JSON {patterns: [...]}
//   graphzero-mine plan   --graph FILE --pattern P                       -> JSON {plan, text}
//   graphzero-mine list   --graph FILE --pattern P --limit N  -> one JSON array per match, then JSON
#include <time.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common/cli.hpp"
#include "common/log.hpp"
#include "common/timer.hpp"
#include "dist/world.hpp"
#include "graph/generators.hpp"
#include "graph/graph_io.hpp"
#include "graph/jit.hpp"
#include "graph/matcher.hpp"
#include "graph/plan.hpp"

using namespace core;
using namespace core::graph;

namespace {

// Keys shared by every command: where the graph comes from and how it is read.
template <class V, class O>
void visit_graph_keys(V& v, O& o) {
  v("graph", o.graph, "edge list (.el/.txt), Matrix Market (.mtx), or a generator rmat:SCALE[:EF] / gnp:N:P");
  v("vertex_labels", o.vertex_labels, "file with one vertex label per line (empty: unlabeled)");
  v("graph_cache", o.graph_cache, "binary CSR cache: auto (next to the input or ~/.cache), off, or a folder");
  v("seed", o.seed, "seed of generated graphs and of the cost model's sampling");
}
template <class V, class O>
void visit_mining_keys(V& v, O& o) {
  v("induced", o.induced, "edge: every subgraph whose edges include the pattern's; vertex: induced subgraphs",
    core::one_of({"edge", "vertex"}));
  v("threads", o.threads, "worker threads (0: all hardware threads)", core::at_least(0));
}

struct GraphKeys {
  std::string graph = "rmat:14";
  std::string vertex_labels;
  std::string graph_cache = "auto";
  std::uint64_t seed = 1;
};

struct CountOptions : GraphKeys {
  std::string pattern = "4-clique";
  std::string pattern_labels;
  std::string induced = "edge";
  int threads = 0;
  std::string backend = "interp";
  std::string jit_cache;
  std::vector<int> order;
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("pattern", pattern, "pattern name (triangle, 4-clique, 5-cycle, house, ...), edges 0-1,1-2,2-0, or a file");
    v("pattern_labels", pattern_labels, "labels of the pattern's vertices, e.g. 0,1,0 (empty: unlabeled)");
    visit_mining_keys(v, *this);
    v("backend", backend, "interp (plan interpreter) or jit (generated C++, compiled and cached)",
      core::one_of({"interp", "jit"}));
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
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("pattern", pattern, "pattern name, edge list or file");
    v("pattern_labels", pattern_labels, "labels of the pattern's vertices, e.g. 0,1,0");
    v("induced", induced, "edge or vertex", core::one_of({"edge", "vertex"}));
    v("order", order, "matching order to use instead of the explorer's choice (empty: explore)");
    v("emit_cpp", emit_cpp, "include the generated C++ of the compiled back-end in the result");
  }
};

struct ListOptions : GraphKeys {
  std::string pattern = "triangle";
  std::string pattern_labels;
  std::string induced = "edge";
  int threads = 1;
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
  template <class V>
  void visit(V& v) {
    visit_graph_keys(v, *this);
    v("size", size, "pattern size k: every connected k-vertex pattern is counted", core::in_range(1, 7));
    visit_mining_keys(v, *this);
  }
};

Pattern make_pattern(const std::string& spec, const std::string& labels) {
  Pattern p = parse_pattern(spec);
  if (!labels.empty()) {
    std::vector<int> l;
    std::stringstream ss(labels);
    for (std::string t; std::getline(ss, t, ',');) {
      if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 7)
        throw UsageError("pattern_labels: '" + t + "' is not a non-negative integer");
      l.push_back(std::stoi(t));
    }
    p.set_labels(std::move(l));
  }
  return p;
}

struct Input {
  Graph graph;  // relabelled by degree
  nlohmann::json info;
  double load_s = 0, orient_s = 0;
};

Input load_input(const GraphKeys& o) {
  Input in;
  Timer t;
  CleanReport report;
  std::optional<Graph> g = generate_from_spec(o.graph, o.seed, &report);
  in.info["source"] = o.graph;
  if (g) {
    in.info["generated"] = true;
  } else {
    LoadedGraph lg = load_graph(o.graph, LoadOptions{o.graph_cache});
    g = std::move(lg.graph);
    report = lg.report;
    in.info["from_cache"] = lg.from_cache;
    if (!lg.cache_path.empty()) in.info["cache"] = lg.cache_path.string();
  }
  if (!o.vertex_labels.empty()) read_vertex_labels(o.vertex_labels, *g);
  in.load_s = t.seconds();
  log::info("graph {}: {}{}", o.graph, describe(report), in.info.value("from_cache", false) ? " [from cache]" : "");
  t.reset();
  in.graph = relabel_by_degree(*g);
  in.orient_s = t.seconds();
  in.info["vertices"] = in.graph.n();
  in.info["edges"] = in.graph.m();
  in.info["max_degree"] = in.graph.max_degree();
  in.info["labeled"] = in.graph.labeled();
  in.info["cleaned"] = {{"input_edges", report.input_edges}, {"self_loops", report.self_loops},
                        {"duplicates", report.duplicates},   {"max_input_id", report.max_input_id}};
  return in;
}

// CPU seconds of the whole process (all threads): with the machine shared, wall time alone
// overstates the work; cpu / threads is what an idle machine's wall time would be at best.
double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

int resolve_threads(int t) { return t > 0 ? t : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// The job's ranks; a communicator only when there is more than one.
struct Ranks {
  dist::RankInfo info;
  std::unique_ptr<dist::Communicator> comm;
  ExecOptions exec(int threads) const { return {threads, info.rank, info.world_size}; }
  // Sums one exact 64-bit value per rank (all_gather of its 8 bytes: the byte type never rounds).
  std::uint64_t sum(std::uint64_t x) const {
    if (!comm) return x;
    std::vector<std::uint64_t> all(info.world_size);
    comm->all_gather(&x, all.data(), sizeof x, dist::DType::u8);
    std::uint64_t s = 0;
    for (auto v : all) s += v;
    return s;
  }
  bool leader() const { return info.rank == 0; }
};

Ranks discover() {
  Ranks r;
  r.info = dist::discover_ranks(std::nullopt, std::nullopt);
  if (r.info.world_size > 1) r.comm = dist::make_world_communicator(r.info);
  return r;
}

Plan plan_for(const Pattern& p, Induced mode, const std::vector<int>& order, const Graph& g, std::uint64_t seed) {
  const GraphStats stats = graph_stats(g, seed);
  return order.empty() ? choose_plan(p, mode, stats) : make_plan(p, mode, order, stats);
}

nlohmann::json plan_summary(const Plan& plan) {
  return {{"order", plan.order},
          {"restrictions", plan.to_json()["restrictions"]},
          {"automorphisms", plan.automorphisms},
          {"predicted_cost", plan.predicted_cost},
          {"orders_considered", plan.orders_considered},
          {"hash", plan.hash()}};
}

void save_plan(const RunContext& ctx, const Plan& plan, const std::string& stem) {
  if (!ctx.rundir) return;
  write_file_atomic(ctx.rundir->artifact(stem + ".json"), plan.to_json().dump(2) + "\n");
  write_file_atomic(ctx.rundir->artifact(stem + ".txt"), plan.to_text());
}

int run_count(RunContext& ctx, const CountOptions& o) {
  const Pattern pattern = make_pattern(o.pattern, o.pattern_labels);
  const Induced mode = parse_induced(o.induced);
  const Ranks ranks = discover();
  const int threads = resolve_threads(o.threads);
  Input in = load_input(o);
  Timer t;
  const Plan plan = plan_for(pattern, mode, o.order, in.graph, o.seed);
  const double plan_s = t.seconds();
  log::info("plan ({:.2f} ms):\n{}", plan_s * 1e3, plan.to_text());
  save_plan(ctx, plan, "plan");

  double compile_s = 0;
  bool jit_cached = false;
  std::uint64_t local = 0;
  double cpu0 = 0;
  if (o.backend == "jit") {
    const JitKernel kernel(plan, o.jit_cache.empty() ? default_jit_cache() : std::filesystem::path(o.jit_cache));
    compile_s = kernel.compile_seconds();
    jit_cached = kernel.from_cache();
    if (ctx.rundir) write_file_atomic(ctx.rundir->artifact("kernel.cpp"), emit_cpp(plan));
    log::info("JIT kernel {} ({})", kernel.library().string(),
              jit_cached ? "cached" : fmt::format("compiled in {:.2f} s", compile_s));
    t.reset();
    cpu0 = process_cpu_seconds();
    local = kernel.count(in.graph, ranks.exec(threads));
  } else {
    t.reset();
    cpu0 = process_cpu_seconds();
    local = count_matches(in.graph, plan, ranks.exec(threads));
  }
  const double match_cpu_s = process_cpu_seconds() - cpu0;
  const std::uint64_t count = ranks.sum(local);
  const double match_s = t.seconds();
  log::info("{} {}-induced matches of {} in {:.4f} s on {} thread(s) x {} rank(s)", count, o.induced, o.pattern,
            match_s, threads, ranks.info.world_size);
  if (!ranks.leader()) return 0;
  nlohmann::json r = {{"count", count},
                      {"time_s", match_s},
                      {"match_cpu_s", match_cpu_s},
                      {"plan_time_s", plan_s},
                      {"load_time_s", in.load_s},
                      {"orient_time_s", in.orient_s},
                      {"compile_time_s", compile_s},
                      {"counts_per_second", match_s > 0 ? static_cast<double>(count) / match_s : 0.0},
                      {"pattern", o.pattern},
                      {"pattern_edges", pattern.to_string()},
                      {"canonical", canonical_form(pattern).to_string()},
                      {"induced", o.induced},
                      {"backend", o.backend},
                      {"threads", threads},
                      {"ranks", ranks.info.world_size},
                      {"graph", in.info},
                      {"plan", plan_summary(plan)}};
  if (o.backend == "jit") r["jit_cached"] = jit_cached;
  if (ctx.rundir)
    ctx.rundir->metrics().write({{"stage", "done"}, {"load_s", in.load_s}, {"plan_s", plan_s},
                                 {"compile_s", compile_s}, {"match_s", match_s}, {"count", count}});
  ctx.emit_result(r);
  return 0;
}

int run_motifs(RunContext& ctx, const MotifOptions& o) {
  const Induced mode = parse_induced(o.induced);
  const Ranks ranks = discover();
  const int threads = resolve_threads(o.threads);
  Input in = load_input(o);
  Timer t;
  const GraphStats stats = graph_stats(in.graph, o.seed);
  const auto patterns = connected_patterns(o.size);
  std::vector<Plan> plans;
  std::vector<double> plan_times;
  for (const Pattern& p : patterns) {
    Timer one;
    plans.push_back(choose_plan(p, mode, stats));
    plan_times.push_back(one.seconds());
  }
  const double plan_s = t.seconds();
  t.reset();
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    const std::uint64_t c = ranks.sum(count_matches(in.graph, plan, ranks.exec(threads)));
    list.push_back({{"pattern", plan.pattern.to_string()}, {"edges", plan.pattern.edge_count()},
                    {"automorphisms", plan.automorphisms}, {"count", c}, {"plan_time_s", plan_times[i]}});
    log::info("{:<40} {}", plan.pattern.to_string(), c);
  }
  const double match_s = t.seconds();
  if (!ranks.leader()) return 0;
  ctx.emit_result({{"size", o.size}, {"induced", o.induced}, {"patterns", list}, {"time_s", match_s},
                   {"plan_time_s", plan_s},
                   {"plan_time_max_s", plan_times.empty() ? 0.0 : *std::max_element(plan_times.begin(), plan_times.end())},
                   {"load_time_s", in.load_s}, {"orient_time_s", in.orient_s}, {"threads", threads}, {"ranks", ranks.info.world_size}, {"graph", in.info}});
  return 0;
}

int run_plan(RunContext& ctx, const PlanOptions& o) {
  const Pattern pattern = make_pattern(o.pattern, o.pattern_labels);
  Input in = load_input(o);
  Timer t;
  const Plan plan = plan_for(pattern, parse_induced(o.induced), o.order, in.graph, o.seed);
  const double plan_s = t.seconds();
  std::cerr << plan.to_text();
  nlohmann::json r = {{"plan", plan.to_json()}, {"text", plan.to_text()}, {"plan_time_s", plan_s}, {"graph", in.info}};
  if (o.emit_cpp) r["cpp"] = emit_cpp(plan);
  ctx.emit_result(r);
  return 0;
}

int run_list(RunContext& ctx, const ListOptions& o) {
  const Pattern pattern = make_pattern(o.pattern, o.pattern_labels);
  Input in = load_input(o);
  Timer t;
  const Plan plan = plan_for(pattern, parse_induced(o.induced), {}, in.graph, o.seed);
  const double plan_s = t.seconds();
  save_plan(ctx, plan, "plan");
  t.reset();
  std::string line;
  const std::uint64_t n = list_matches(in.graph, plan, {resolve_threads(o.threads), 0, 1}, o.limit,
                                       [&](std::span<const Vertex> m) {
                                         line = "[";
                                         for (std::size_t i = 0; i < m.size(); ++i)
                                           line += (i ? "," : "") + std::to_string(in.graph.original_ids[m[i]]);
                                         std::cout << line << "]\n";
                                       });
  std::cout.flush();
  ctx.emit_result({{"listed", n}, {"limit", o.limit}, {"complete", n < o.limit}, {"time_s", t.seconds()},
                   {"plan_time_s", plan_s}, {"pattern", pattern.to_string()}, {"graph", in.info}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  App app("graphzero-mine",
          "Graph pattern mining (GraphZero): symmetry-breaking restrictions, schedule search, orientation, "
          "interpreter and JIT back-ends, MPI");
  app.command<CountOptions>("count", "Count the matches of one pattern (default command)", run_count, true)
      .flag("--graph", "graph", "graph file or generator spec (rmat:SCALE[:EF], gnp:N:P)")
      .flag("--pattern", "pattern", "pattern name, edge list 0-1,1-2,2-0, or pattern file")
      .flag("--pattern-labels", "pattern_labels", "labels of the pattern's vertices, e.g. 0,1,0")
      .flag("--vertex-labels", "vertex_labels", "vertex label file of the graph")
      .flag("--induced", "induced", "edge (default) or vertex")
      .flag("--threads", "threads", "worker threads (0: all)")
      .flag("--backend", "backend", "interp or jit")
      .flag("--jit-cache", "jit_cache", "folder of compiled kernels")
      .flag("--graph-cache", "graph_cache", "auto, off or a folder for binary CSR caches");
  app.command<MotifOptions>("motifs", "Count every connected pattern of --size vertices", run_motifs)
      .flag("--graph", "graph", "graph file or generator spec")
      .flag("--size", "size", "pattern size (1..7)")
      .flag("--induced", "induced", "edge (default) or vertex")
      .flag("--threads", "threads", "worker threads (0: all)")
      .flag("--graph-cache", "graph_cache", "auto, off or a folder");
  app.command<PlanOptions>("plan", "Print the chosen matching order, restrictions and predicted cost", run_plan)
      .flag("--graph", "graph", "graph file or generator spec (its statistics drive the cost model)")
      .flag("--pattern", "pattern", "pattern name, edge list or file")
      .flag("--pattern-labels", "pattern_labels", "labels of the pattern's vertices")
      .flag("--vertex-labels", "vertex_labels", "vertex label file of the graph")
      .flag("--induced", "induced", "edge (default) or vertex")
      .flag("--graph-cache", "graph_cache", "auto, off or a folder")
      .switch_flag("--emit-cpp", "emit_cpp", "include the generated C++ in the result")
      .without_rundir();
  app.command<ListOptions>("list", "Stream matches (one JSON array of vertex ids per line), then the result", run_list)
      .flag("--graph", "graph", "graph file or generator spec")
      .flag("--pattern", "pattern", "pattern name, edge list or file")
      .flag("--pattern-labels", "pattern_labels", "labels of the pattern's vertices")
      .flag("--vertex-labels", "vertex_labels", "vertex label file of the graph")
      .flag("--induced", "induced", "edge (default) or vertex")
      .flag("--limit", "limit", "maximum number of matches")
      .flag("--threads", "threads", "worker threads")
      .flag("--graph-cache", "graph_cache", "auto, off or a folder")
      .without_rundir();
  return app.main(argc, argv);
}
