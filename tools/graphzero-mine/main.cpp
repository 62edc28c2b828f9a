// graphzero-mine: graph pattern mining with GraphZero's symmetry-breaking restrictions, schedule
// explorer and generalised orientation; an interpreter and a compiled (JIT) back-end; the outer
// loop split over MPI ranks when launched under mpirun/srun.
//   graphzero-mine count  --graph FILE|rmat:S|gnp:N:P --pattern NAME|EDGES [--induced edge|vertex]
//                         [--threads T] [--backend interp|jit|auto] [--formula auto|on|off] [--local-graph auto|on|off]
//                         -> JSON {count, time_s, ...}
//   graphzero-mine motifs --graph FILE --size K [--induced ...]         -> JSON {patterns: [...]}
//   graphzero-mine plan   --graph FILE --pattern P                       -> JSON {plan, text}
//   graphzero-mine list   --graph FILE --pattern P --limit N  -> one JSON array per match, then JSON
#include <iostream>

#include "common/cli.hpp"
#include "comm/rank.hpp"
#include "comm/world.hpp"
#include "graph/jobs.hpp"

using namespace core;
using namespace core::graph;

namespace {

// Emits a job's result (rank 0 only gets one).
int emit(RunContext& ctx, const std::optional<nlohmann::json>& result) {
  if (result) ctx.emit_result(*result);
  return 0;
}

int run_count(RunContext& ctx, const jobs::CountOptions& o) { return emit(ctx, jobs::count(o, ctx.rundir.get())); }
int run_motifs(RunContext& ctx, const jobs::MotifOptions& o) { return emit(ctx, jobs::motifs(o)); }
int run_plan(RunContext& ctx, const jobs::PlanOptions& o) {
  const nlohmann::json r = jobs::plan(o);
  std::cerr << r["text"].get<std::string>();
  return emit(ctx, r);
}
int run_list(RunContext& ctx, const jobs::ListOptions& o) { return emit(ctx, jobs::list(o, ctx.rundir.get(), std::cout)); }

}  // namespace

int main(int argc, char** argv) {
  App app("graphzero-mine",
          "Graph pattern mining (GraphZero): symmetry-breaking restrictions, schedule search, orientation, "
          "interpreter and JIT back-ends, MPI");
  app.use_ranks(
      [] {  // under mpirun/srun only rank 0 writes the run directory and the result
        const comm::RankInfo r = comm::discover_ranks(std::nullopt, std::nullopt);
        return std::pair{r.rank, r.world_size};
      },
      comm::abort_job);  // a rank that fails (a missing file, a signal) ends the job with its exit code
  // Flags shared by the commands: where the graph comes from, and which pattern to match.
  const auto graph_flags = [](Command& c) -> Command& {
    return c.flag("--graph", "graph", "graph file, CSR cache file (.csr) or generator spec (rmat:SCALE[:EF], gnp:N:P)")
        .flag("--induced", "induced", "edge (default) or vertex")
        .flag("--graph-cache", "graph_cache",
              "auto, off or a folder: binary CSR cache of the relabelled graph, written once, memory-mapped "
              "later (a damaged cache: exit 65)")
        .flag("--graph-sharing", "graph_sharing",
              "replicate or one_file: under MPI, every rank loads the input, or all map rank 0's cache file");
  };
  const auto pattern_flags = [&](Command& c) -> Command& {
    return graph_flags(c)
        .flag("--pattern", "pattern",
              "pattern name (triangle, wedge, diamond, paw, rectangle/square, pentagon, house, bowtie, dumbbell, "
              "K-clique, K-cycle, K-path, K-star; K counts vertices: 4-star is a hub with 3 leaves, GraphMiner's "
              "3star), edge list 0-1,1-2,2-0 (ids 0..N-1, no gaps), or pattern file")
        .flag("--pattern-labels", "pattern_labels", "labels of the pattern's vertices, e.g. 0,1,0")
        .flag("--vertex-labels", "vertex_labels", "vertex label file of the graph");
  };
  pattern_flags(app.command<jobs::CountOptions>("count", "Count the matches of one pattern (default command)",
                                                run_count, true))
      .flag("--backend", "backend",
            "interp, jit or auto: the JIT compiles 0.6-0.9 s per kernel on first use (cached after), so the "
            "interpreter is the better choice for counts under a few seconds and for cliques (local graphs); auto "
            "chooses by the predicted matching time")
      .flag("--jit-cache", "jit_cache", "folder of compiled kernels")
      .flag("--formula", "formula", "auto, on or off: count the last levels by inclusion-exclusion instead of enumerating")
      .flag("--local-graph", "local_graph", "auto, on or off: count cliques in each root's local graph (bitmaps)")
      .flag("--split-roots", "split_roots", "true or false: run heavy roots as several tasks (interpreter)")
      .stops_at_signal();
  graph_flags(app.command<jobs::MotifOptions>("motifs", "Count every connected pattern of --size vertices", run_motifs))
      .flag("--size", "size", "pattern size (1..7)")
      .flag("--formula", "formula", "auto, on or off: count the last levels by inclusion-exclusion instead of enumerating")
      .stops_at_signal();
  pattern_flags(app.command<jobs::PlanOptions>("plan", "Print the chosen matching order, restrictions and predicted cost",
                                               run_plan))
      .switch_flag("--emit-cpp", "emit_cpp", "include the generated C++ in the result")
      .flag("--formula", "formula", "auto, on or off: count the last levels by inclusion-exclusion instead of enumerating")
      .without_rundir();
  pattern_flags(app.command<jobs::ListOptions>("list", "Stream matches (one JSON array of vertex ids per line), then the result",
                                               run_list))
      .flag("--limit", "limit", "maximum number of matches")
      .without_rundir()
      .stops_at_signal();
  return app.main(argc, argv);
}
