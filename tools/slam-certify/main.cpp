// slam-certify: certifiably optimal pose-graph and landmark SLAM (SE-Sync; Holmes & Barfoot 2023).
//   slam-certify solve --input FILE.g2o [--candidate FILE.g2o] [key=value ...] --out RUN
//       -> JSON (cost, lower_bound, suboptimality_bound, certified, lambda_min, rank, ...), exit 0
//          certified / 3 not; RUN/artifacts: optimised.g2o, poses.tum, landmarks.csv, map.png
//   slam-certify sim [world.key=value ...] --output FILE.g2o      seeded landmark world (truth as vertices)
//   slam-certify starry --dataset DIR --output FILE.g2o [--steps A:B] [--truth FILE.tum]
#include <charconv>
#if defined(__GLIBC__)
#endif

#include "common/cli.hpp"
#include "common/heap.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"
#include "slam/map_png.hpp"
#include "slam/solve_job.hpp"
#include "slam/starry_night.hpp"

using namespace core;

static int run_solve(RunContext& ctx, const slam::SolveOptions& opts) {
  const slam::SolveJobResult r = slam::run_solve(opts);
  const slam::SolveResult& s = r.solution;
  log::info("cost {:.10g}, lower bound {:.10g}, lambda_min {:.3g}, rank {}: {}", s.cost, s.lower_bound, s.lambda_min,
            s.rank, s.certified ? "certified globally optimal" : "NOT certified (" + s.reason + ")");
  if (ctx.rundir) {
    slam::write_g2o(ctx.rundir->artifact("optimised.g2o"), r.graph, s.estimate);
    slam::write_tum(ctx.rundir->artifact("poses.tum"), r.graph.problem, s.estimate);
    slam::write_landmarks_csv(ctx.rundir->artifact("landmarks.csv"), r.graph.problem, s.estimate);
    slam::write_map_png(ctx.rundir->artifact("map.png"), r.graph.problem, s.estimate);
  }
  ctx.emit_result(r.to_json());
  return static_cast<int>(s.certified ? ExitCode::ok : ExitCode::negative);
}

struct SimOptions {
  std::string output;
  slam::WorldOptions world;
  template <class V>
  void visit(V& v) {
    v("output", output, "g2o file to write (vertices: the ground truth)");
    v.section("world", world);
  }
  void validate() const {
    if (output.empty()) throw UsageError("config key 'output' (--output) is required: the g2o file to write");
  }
};

static int run_sim(RunContext& ctx, const SimOptions& opts) {
  const slam::World w = slam::simulate_world(opts.world);
  slam::write_g2o(opts.output, w.graph, w.truth);
  const slam::Problem& p = w.graph.problem;
  log::info("wrote {} poses, {} landmarks, {} edges to {}", p.num_poses(), p.num_landmarks(), p.num_edges(), opts.output);
  ctx.emit_result({{"output", opts.output},
                   {"dimension", p.d},
                   {"poses", p.num_poses()},
                   {"landmarks", p.num_landmarks()},
                   {"edges", p.num_edges()},
                   {"seed", opts.world.seed}});
  return 0;
}

struct StarryOptions {
  std::string dataset = "../shared/datasets/landmark-slam";
  std::string output;
  std::string steps;  // "A:B" (B empty or 0: to the end)
  std::string truth;  // ground-truth TUM file of the same steps
  template <class V>
  void visit(V& v) {
    v("dataset", dataset, "folder of the UTIAS Starry Night CSV files and calibration.json");
    v("output", output, "g2o file to write");
    v("steps", steps, "steps A:B of the dataset (empty: all)");
    v("truth", truth, "also write the ground truth of the same steps to this TUM file");
  }
  void validate() const {
    if (output.empty()) throw UsageError("config key 'output' (--output) is required: the g2o file to write");
    step_range();
  }
  std::pair<int, int> step_range() const {
    if (steps.empty()) return {0, 0};
    const auto colon = steps.find(':');
    int a = 0, b = 0;
    auto number = [&](std::string_view s, int& out) {
      return s.empty() || (std::from_chars(s.data(), s.data() + s.size(), out).ptr == s.data() + s.size());
    };
    if (colon == std::string::npos || !number(std::string_view(steps).substr(0, colon), a) ||
        !number(std::string_view(steps).substr(colon + 1), b))
      throw UsageError("config key 'steps': expected A:B (e.g. 0:500), got '" + steps + "'");
    return {a, b};
  }
};

static int run_starry(RunContext& ctx, const StarryOptions& opts) {
  const auto [first, last] = opts.step_range();
  const slam::StarryNightProblem p = slam::starry_night_problem(opts.dataset, first, last);
  write_file_atomic(opts.output, p.g2o);
  if (!opts.truth.empty()) write_file_atomic(opts.truth, p.truth_tum);
  log::info("wrote {} steps, {} landmarks, {} stereo observations ({} skipped: no disparity) to {}", p.steps,
            p.landmarks, p.observations, p.skipped_observations, opts.output);
  ctx.emit_result({{"output", opts.output},
                   {"steps", p.steps},
                   {"landmarks", p.landmarks},
                   {"observations", p.observations},
                   {"skipped_observations", p.skipped_observations}});
  return 0;
}

int main(int argc, char** argv) {
  retain_freed_memory();
  App app("slam-certify", "Certifiably optimal pose-graph and landmark SLAM (SE-Sync; Holmes & Barfoot 2023)");
  app.command<slam::SolveOptions>("solve", "Solve (or certify) a SLAM problem; exit 0 when certified optimal, 3 when not",
                                  run_solve, /*is_default=*/true)
      .flag("--input", "input", "g2o file (VERTEX/EDGE_SE2, SE3:QUAT, SE2_XY, SE3_TRACKXYZ)")
      .flag("--candidate", "candidate", "certify the vertices of this g2o file instead of solving");
  app.command<SimOptions>("sim", "Write a seeded simulated landmark world as g2o", run_sim)
      .flag("--output", "output", "g2o file to write")
      .without_rundir();
  app.command<StarryOptions>("starry", "Turn UTIAS Starry Night into a landmark g2o problem", run_starry)
      .flag("--dataset", "dataset", "folder of the Starry Night files")
      .flag("--output", "output", "g2o file to write")
      .flag("--steps", "steps", "steps A:B")
      .flag("--truth", "truth", "ground-truth TUM file to write")
      .without_rundir();
  return app.main(argc, argv);
}
