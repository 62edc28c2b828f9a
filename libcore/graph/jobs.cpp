// The jobs of graphzero-mine (see jobs.hpp): input loading and relabelling, planning, the
// back-ends, the MPI sum of counts and the JSON results.
#include "graph/jobs.hpp"


#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "common/cpu_time.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/threads.hpp"
#include "common/timer.hpp"
#include "comm/world.hpp"
#include "graph/decompose.hpp"
#include "graph/graph_io.hpp"
#include "graph/jit.hpp"
#include "graph/matcher.hpp"
#include "graph/plan.hpp"
#include "graph/plan_race.hpp"

namespace core::graph::jobs {

namespace {

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

// How long a rank waits for the others where they may still be busy with work of any length: rank 0
// building the graph for graph_sharing=one_file, and the other ranks loading (replicate) and mining their
// shares before the counts are gathered. Far beyond a collective's timeout (300 s), which R-MAT scale 24
// alone exceeds (minutes to build on two cores) and which an uneven split of an hours-long count would. A
// rank that fails ends the job through mpirun within seconds, so this bound only ends a hang.
constexpr comm::Seconds kRankWorkWait{24 * 3600.0};

// The job's ranks; a communicator only when there is more than one.
struct Ranks {
  comm::RankInfo info;
  std::unique_ptr<comm::Communicator> comm;
  ExecOptions exec(int threads, LocalGraph local = LocalGraph::by_plan, bool split = true,
                   ExecStats* stats = nullptr) const {
    return {threads, info.rank, info.world_size, local, split, stats};
  }
  // Every rank's value (all_gather of its bytes: the byte type never rounds), waiting as long as the
  // others' loading and mining take.
  template <class T>
  std::vector<T> gather(T x) const {
    if (!comm) return {x};
    std::vector<T> all(info.world_size);
    comm::waiting_at_least(*comm, kRankWorkWait, [&] { comm->all_gather(&x, all.data(), sizeof x, comm::DType::u8); });
    return all;
  }
  // The sum of one count per rank: exact, or a DataError beyond 2^64 - 1.
  std::uint64_t sum(std::uint64_t x) const {
    std::uint64_t s = 0;
    for (auto v : gather(x))
      if (__builtin_add_overflow(s, v, &s)) throw DataError("the match count exceeds 2^64 - 1 (counts are exact or an error)");
    return s;
  }
  // The count from every rank's embedding share (128-bit, signed: exact; DataError beyond 2^64 - 1).
  std::uint64_t count(const CountPlan& cp, __int128 share) const {
    const std::vector<__int128> all = gather(share);
    return count_from_shares(cp, all);
  }
  bool leader() const { return info.rank == 0; }
};

Ranks discover() {
  Ranks r;
  r.info = comm::discover_ranks(std::nullopt, std::nullopt);
  if (r.info.world_size > 1) r.comm = comm::make_world_communicator(r.info);
  return r;
}

struct Input {
  Graph graph;  // relabelled by degree
  LowerDegrees lower;  // its oriented degrees (orient)
  nlohmann::json info;
  double load_s = 0, orient_s = 0;
  double load_cpu_s = 0, orient_cpu_s = 0;  // the process's CPU seconds (all threads) of the same
};

// The graph of graph_sharing=one_file: rank 0 loads the input through its cache (writing the cache when it
// is absent or stale), then every rank maps the file whose path rank 0 broadcasts.
LoadedGraph load_one_file(const GraphKeys& o, const Ranks& ranks) {
  LoadOptions options{o.graph_cache, /*relabel=*/true};
  if (o.graph_cache == "off" && !is_csr_cache(o.graph))
    throw UsageError("graph_sharing=one_file: the ranks share the graph cache, so graph_cache cannot be off "
                     "(give a folder all ranks see, or a .csr graph)");
  if (o.graph_cache == "auto") options.cache = graph_cache_folder(options).string();  // generated graphs too
  std::string file;
  if (ranks.leader()) {
    const LoadedGraph lg = load_graph_input(o.graph, o.seed, options);
    file = lg.cache_path.string();  // the .csr graph itself, or the cache written or found
    if (file.empty()) throw IoError("graph_sharing=one_file: rank 0 could not write the graph cache (see the warning)");
  }
  std::uint64_t length = file.size();
  comm::waiting_at_least(*ranks.comm, kRankWorkWait, [&] { ranks.comm->broadcast(&length, sizeof length, comm::DType::u8, 0); });
  file.resize(length);
  ranks.comm->broadcast(file.data(), length, comm::DType::u8, 0);
  LoadedGraph lg = map_csr_cache(file);
  if (!lg.relabelled) throw DataError("graph '" + file + "': one_file needs a degree-relabelled cache (graph_cache writes one)");
  return lg;
}

Input load_input(const GraphKeys& o, const Ranks* ranks = nullptr) {
  Input in;
  Timer t;
  const double cpu0 = process_cpu_seconds();
  const bool one_file = ranks && ranks->comm && o.graph_sharing == "one_file";
  LoadedGraph lg = one_file ? load_one_file(o, *ranks)
                            : load_graph_input(o.graph, o.seed, LoadOptions{o.graph_cache, /*relabel=*/true});
  in.info["source"] = o.graph;
  in.info["sharing"] = one_file ? "one_file" : "replicate";
  if (lg.generated) in.info["generated"] = true;
  if (!lg.generated || !lg.cache_path.empty()) in.info["from_cache"] = lg.from_cache;
  if (!lg.cache_path.empty()) in.info["cache"] = lg.cache_path.string();
  if (!o.vertex_labels.empty()) read_vertex_labels(o.vertex_labels, lg.graph);
  // Relabelling happened inside the load (before the cache was written) or not at all (a mapped cache).
  in.orient_s = lg.relabel_s;
  in.load_s = t.seconds() - in.orient_s;
  in.orient_cpu_s = lg.relabel_cpu_s;
  in.load_cpu_s = process_cpu_seconds() - cpu0 - in.orient_cpu_s;
  const CleanReport& report = lg.report;
  log::info("graph {}: {}{}", o.graph, describe(report), lg.from_cache ? " [mapped from cache]" : "");
  in.graph = std::move(lg.graph);
  in.info["vertices"] = in.graph.n();
  in.info["edges"] = in.graph.m();
  in.info["max_degree"] = in.graph.max_degree();
  in.info["labeled"] = in.graph.labeled();
  in.info["cleaned"] = {{"input_edges", report.input_edges}, {"self_loops", report.self_loops},
                        {"duplicates", report.duplicates},   {"max_input_id", report.max_input_id}};
  return in;
}

// The oriented degrees every phase of the matching uses, computed once for the graph; their time is the
// orientation's, as the relabelling's is.
void orient(Input& in, int threads) {
  Timer t;
  const double cpu0 = process_cpu_seconds();
  in.lower = lower_degrees(in.graph, threads);
  in.orient_s += t.seconds();
  in.orient_cpu_s += process_cpu_seconds() - cpu0;
}

// The command resolved `threads` (App: common/threads.hpp); 0 only reaches here from a direct library call.
// The pooled threads start now, while the graph loads.
int resolve_threads(int t) { return prestart_threads(t > 0 ? t : core::thread_count()); }

Plan plan_for(const Pattern& p, Induced mode, const std::vector<int>& order, const GraphStats& stats, Formula formula) {
  return order.empty() ? choose_plan(p, mode, stats, formula)
                       : make_plan(p, mode, order, stats, RootCommon::by_cost, formula);
}

// The count plan: pattern decomposition is considered with the explorer's order; a given order is one plan.
CountPlan count_plan_for(const Pattern& p, Induced mode, const std::vector<int>& order, const GraphStats& stats,
                         Formula formula) {
  if (order.empty()) return choose_count_plan(p, mode, stats, formula);
  CountPlan cp;
  cp.plan = plan_for(p, mode, order, stats, formula);
  cp.predicted_cost = cp.plan.predicted_cost;
  return cp;
}

// The plans a count under cp enumerates on the graph: cp's own, those of its decomposition's quotients, or
// none through apexes (the rest is counted in local graphs, by the interpreter) or a complete split.
void collect_enumerated(const CountPlan& cp, std::vector<const Plan*>& out) {
  if (cp.apex || cp.complete_split) return;
  if (!cp.decomposition) return out.push_back(&cp.plan);
  for (const auto& q : cp.decomposition->quotients) collect_enumerated(q.plan, out);
}
std::vector<const Plan*> enumerated_plans(const CountPlan& cp) {
  std::vector<const Plan*> out;
  collect_enumerated(cp, out);
  return out;
}

// Whether an enumerated plan sets `flag`: its pairs counted against marked sets (Plan::marked_pairs) or from a table
// (Plan::tabled_pairs) in the interpreter, which the JIT's kernels count per level-(k-3) vertex instead.
bool any_enumerated(const CountPlan& cp, bool Plan::*flag) {
  const auto plans = enumerated_plans(cp);
  return std::any_of(plans.begin(), plans.end(), [flag](const Plan* p) { return p->*flag; });
}
// The JIT's compile (0.6-0.9 s a kernel on first use) pays off once the matching is long: its kernels run the
// enumerating plans ~1.5x faster than the interpreter. Predicted seconds of a plan: its predicted cost at
// kSecondsPerCost (the low end measured for enumerating plans, 0.55-2 ns a unit, so short counts stay interpreted).
constexpr double kSecondsPerCost = 1e-9;
constexpr double kJitPaysOffSeconds = 3.0;

// backend "auto": the interpreter where it counts cliques in local graphs or pairs against marks (which the JIT has no
// kernel for) or where the predicted matching time is short and a kernel would have to be compiled; else the JIT.
// Also why.
std::pair<std::string, std::string> choose_backend(const CountPlan& cp, bool local_graph, int threads,
                                                   const std::filesystem::path& jit_dir) {
  if (local_graph) return {"interp", "cliques in local graphs (interpreter only)"};
  const auto plans = enumerated_plans(cp);
  if (plans.empty()) return {"interp", "no plan enumerated on the graph (tables and neighbourhood counts: library code)"};
  if (any_enumerated(cp, &Plan::marked_pairs)) return {"interp", "pairs counted against marked sets (interpreter only)"};
  if (any_enumerated(cp, &Plan::tabled_pairs)) return {"interp", "pairs counted from tables (interpreter only)"};
  if (std::all_of(plans.begin(), plans.end(), [&](const Plan* p) { return jit_kernel_cached(*p, jit_dir); }))
    return {"jit", "kernels cached"};
  // Only the enumerated plans run in a kernel (tables, pair sums and neighbourhood counts are library code), so
  // only their predicted time can pay for a compile.
  double enumerated_cost = 0;
  for (const Plan* p : plans) enumerated_cost += p->predicted_cost;
  const double predicted_s = enumerated_cost * kSecondsPerCost / std::max(1, threads);
  if (predicted_s >= kJitPaysOffSeconds) return {"jit", fmt::format("predicted {:.1f} s of enumeration", predicted_s)};
  return {"interp", fmt::format("predicted {:.2g} s of enumeration, below the {:.0f} s a compile pays off at", predicted_s,
                                kJitPaysOffSeconds)};
}

nlohmann::json plan_summary(const CountPlan& cp) {
  const nlohmann::json j = cp.to_json();
  return {{"order", cp.plan.order},
          {"restrictions", j["restrictions"]},
          {"automorphisms", cp.plan.automorphisms},
          {"predicted_cost", cp.predicted_cost},
          {"orders_considered", cp.plan.orders_considered},
          {"formula", j["formula"]},
          {"iep", j["iep"]},
          {"decomposition", j["decomposition"]},
          {"apex", j["apex"]},
          {"complete_split", j["complete_split"]},
          {"hash", cp.plan.hash()}};
}

void save_plan(RunDir* rundir, const nlohmann::json& json, const std::string& text, const std::string& stem) {
  if (!rundir) return;
  write_file_atomic(rundir->artifact(stem + ".json"), json.dump(2) + "\n");
  write_file_atomic(rundir->artifact(stem + ".txt"), text);
}

}  // namespace

std::optional<nlohmann::json> count(const CountOptions& o, RunDir* rundir) {
  const Pattern pattern = make_pattern(o.pattern, o.pattern_labels);
  const Induced mode = parse_induced(o.induced);
  const Ranks ranks = discover();
  const int threads = resolve_threads(o.threads);
  Input in = load_input(o, &ranks);
  orient(in, threads);
  Timer t;
  // Decomposition is considered wherever the explorer chooses the order: its sums run in the library on
  // every back-end and rank split, its quotients' plans in the chosen back-end.
  const GraphStats graph_summary = graph_stats(in.graph, o.seed);
  CountPlan cp = count_plan_for(pattern, mode, o.order, graph_summary, parse_formula(o.formula));
  // A dear enumeration races its counting-tail plan and decomposition on sampled roots (plan_race.hpp); every
  // rank takes rank 0's verdict (timed, not deterministic).
  std::optional<PlanRace> race;
  if (o.order.empty() && parse_formula(o.formula) == Formula::by_cost)
    race = race_counting_tail(in.graph, pattern, cp, graph_summary, &in.lower);
  // Rank 0's winner (candidate + 1, 0: none), from this rank's same candidates.
  const int won = race ? ranks.gather<std::uint8_t>(race->challenger_won ? race->candidate + 1 : 0)[0] - 1 : -1;
  if (race) race->challenger_won = won >= 0;
  if (won >= 0) {
    if (won != race->candidate) race->challenger = race_candidates(pattern, cp, graph_summary)[won];
    const double predicted = cp.predicted_cost * race->challenger_s / race->incumbent_s;
    const char* incumbent = cp.decomposition ? "decomposition" : "enumeration";
    const Plan enumerating = cp.plan;
    cp = race->challenger;
    cp.predicted_cost = predicted;
    if (cp.decomposition || cp.apex) cp.plan = enumerating;  // reported as the enumerating plan
    else cp.plan.predicted_cost = predicted;
    log::info("plan race: the {} took {:.4f} s on the sampled roots, the {} {:.4f} s", race_formula(cp),
              race->challenger_s, incumbent, race->incumbent_s);
  }
  const Plan& plan = cp.plan;
  const double plan_s = t.seconds();
  log::info("plan ({:.2f} ms):\n{}", plan_s * 1e3, cp.to_text());
  save_plan(rundir, cp.to_json(), cp.to_text(), "plan");

  double compile_s = 0;
  ExecStats stats;
  bool jit_cached = true;
  PlanCounter count_plan;  // empty: the interpreter
  std::map<std::string, std::unique_ptr<JitKernel>> kernels;  // by plan hash, compiled before the clock starts
  const auto jit_dir = o.jit_cache.empty() ? default_jit_cache() : std::filesystem::path(o.jit_cache);
  ExecOptions exec = ranks.exec(threads, parse_local_graph(o.local_graph), o.split_roots, &stats);
  exec.lower = &in.lower;
  const bool local_graph = !cp.decomposition && !cp.apex && !cp.complete_split && uses_local_graph(plan, exec);
  std::string backend = o.backend, backend_reason = "requested";
  if (backend == "auto") {
    std::tie(backend, backend_reason) = choose_backend(cp, local_graph, threads, jit_dir);
    log::info("backend auto: {} ({})", backend, backend_reason);
  }
  if (backend == "jit") {
    for (const Plan* p : enumerated_plans(cp)) {
      auto& kernel = kernels[p->hash()];
      if (kernel) continue;
      kernel = std::make_unique<JitKernel>(*p, jit_dir);
      compile_s += kernel->compile_seconds();
      jit_cached = jit_cached && kernel->from_cache();
      log::info("JIT kernel {} ({})", kernel->library().string(),
                kernel->from_cache() ? "cached" : fmt::format("compiled in {:.2f} s", kernel->compile_seconds()));
    }
    if (rundir && !cp.decomposition && !cp.apex && !cp.complete_split) write_file_atomic(rundir->artifact("kernel.cpp"), emit_cpp(plan));
    count_plan = [&](const Plan& p, const ExecOptions& e) { return kernels.at(p.hash())->count(in.graph, e); };
  }
  t.reset();
  const double cpu0 = process_cpu_seconds();
  const __int128 share = embedding_share(in.graph, cp, exec, count_plan);
  const double match_cpu_s = process_cpu_seconds() - cpu0;
  const std::uint64_t count = ranks.count(cp, share);
  const double match_s = t.seconds();
  log::info("{} {}-induced matches of {} in {:.4f} s on {} thread(s) x {} rank(s)", count, o.induced, o.pattern,
            match_s, threads, ranks.info.world_size);
  if (!ranks.leader()) return std::nullopt;
  nlohmann::json r = {{"count", count},
                      {"time_s", match_s},
                      {"match_cpu_s", match_cpu_s},
                      {"idle_tail_s", stats.idle_s},
                      {"largest_task_cpu_s", stats.largest_task_s},
                      {"plan_time_s", plan_s},
                      {"load_time_s", in.load_s},
                      {"orient_time_s", in.orient_s},
                      {"load_cpu_s", in.load_cpu_s},
                      {"orient_cpu_s", in.orient_cpu_s},
                      {"compile_time_s", compile_s},
                      {"counts_per_second", match_s > 0 ? static_cast<double>(count) / match_s : 0.0},
                      {"pattern", o.pattern},
                      {"pattern_edges", pattern.to_string()},
                      {"pattern_vertices", pattern.size()},
                      {"canonical", canonical_form(pattern).to_string()},
                      {"induced", o.induced},
                      {"backend", backend},
                      {"backend_choice", backend_reason},
                      {"threads", threads},
                      {"ranks", ranks.info.world_size},
                      {"graph", in.info},
                      {"plan", plan_summary(cp)}};
  r["plan"]["local_graph"] = backend == "interp" && local_graph;
  r["plan"]["marked_pairs"] = backend == "interp" && any_enumerated(cp, &Plan::marked_pairs);
  r["plan"]["tabled_pairs"] = backend == "interp" && any_enumerated(cp, &Plan::tabled_pairs);
  r["plan"]["race"] = race ? race->to_json() : nlohmann::json(nullptr);
  if (backend == "jit") {
    r["jit_cached"] = jit_cached;
    r["jit_kernels"] = kernels.size();
  }
  if (rundir)
    rundir->metrics().write({{"stage", "done"}, {"load_s", in.load_s}, {"plan_s", plan_s},
                                 {"compile_s", compile_s}, {"match_s", match_s}, {"count", count}});
  return r;
}

std::optional<nlohmann::json> motifs(const MotifOptions& o) {
  const Induced mode = parse_induced(o.induced);
  const Ranks ranks = discover();
  const int threads = resolve_threads(o.threads);
  Input in = load_input(o, &ranks);
  orient(in, threads);
  ExecOptions exec = ranks.exec(threads);
  exec.lower = &in.lower;
  Timer t;
  const GraphStats stats = graph_stats(in.graph, o.seed);
  const auto patterns = connected_patterns(o.size);
  std::vector<Plan> plans;
  std::vector<double> plan_times;
  for (const Pattern& p : patterns) {
    Timer one;
    plans.push_back(choose_plan(p, mode, stats, parse_formula(o.formula)));
    plan_times.push_back(one.seconds());
  }
  const double plan_s = t.seconds();
  t.reset();
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    const std::uint64_t c = ranks.sum(count_matches(in.graph, plan, exec));
    list.push_back({{"pattern", plan.pattern.to_string()}, {"edges", plan.pattern.edge_count()},
                    {"automorphisms", plan.automorphisms}, {"count", c}, {"plan_time_s", plan_times[i]}});
    log::info("{:<40} {}", plan.pattern.to_string(), c);
  }
  const double match_s = t.seconds();
  if (!ranks.leader()) return std::nullopt;
  return nlohmann::json{{"size", o.size}, {"induced", o.induced}, {"patterns", list}, {"time_s", match_s},
                   {"plan_time_s", plan_s},
                   {"plan_time_max_s", plan_times.empty() ? 0.0 : *std::max_element(plan_times.begin(), plan_times.end())},
                   {"load_time_s", in.load_s}, {"orient_time_s", in.orient_s}, {"load_cpu_s", in.load_cpu_s},
                   {"orient_cpu_s", in.orient_cpu_s}, {"threads", threads}, {"ranks", ranks.info.world_size}, {"graph", in.info}};
}

nlohmann::json plan(const PlanOptions& o) {
  const Pattern pattern = make_pattern(o.pattern, o.pattern_labels);
  Input in = load_input(o);
  Timer t;
  const CountPlan cp =
      count_plan_for(pattern, parse_induced(o.induced), o.order, graph_stats(in.graph, o.seed), parse_formula(o.formula));
  const double plan_s = t.seconds();
  nlohmann::json r = {{"plan", cp.to_json()}, {"text", cp.to_text()}, {"plan_time_s", plan_s}, {"graph", in.info}};
  if (o.emit_cpp) r["cpp"] = emit_cpp(cp.plan);
  return r;
}

nlohmann::json list(const ListOptions& o, RunDir* rundir, std::ostream& matches) {
  const Pattern pattern = make_pattern(o.pattern, o.pattern_labels);
  const int threads = resolve_threads(o.threads);
  Input in = load_input(o);
  orient(in, threads);
  Timer t;
  // Listing enumerates every level: no counting formula.
  const Plan plan = plan_for(pattern, parse_induced(o.induced), {}, graph_stats(in.graph, o.seed), Formula::never);
  const double plan_s = t.seconds();
  save_plan(rundir, plan.to_json(), plan.to_text(), "plan");
  t.reset();
  std::string line;
  // One match more than the limit is looked for (and not printed), so that `complete` is known:
  // exactly `limit` matches is a complete list.
  const std::uint64_t wanted = o.limit == std::numeric_limits<std::uint64_t>::max() ? o.limit : o.limit + 1;
  std::uint64_t printed = 0;
  const std::uint64_t n = list_matches(in.graph, plan, {.threads = threads, .lower = &in.lower}, wanted,
                                       [&](std::span<const Vertex> m) {
                                         if (printed == o.limit) return;
                                         ++printed;
                                         line = "[";
                                         for (std::size_t i = 0; i < m.size(); ++i)
                                           line += (i ? "," : "") + std::to_string(in.graph.original_ids[m[i]]);
                                         matches << line << "]\n";
                                       });
  matches.flush();
  return {{"listed", printed}, {"limit", o.limit}, {"complete", n <= o.limit}, {"time_s", t.seconds()},
                   {"plan_time_s", plan_s}, {"pattern", pattern.to_string()}, {"graph", in.info}};
}

}  // namespace core::graph::jobs
