// slam-certify: certifiably optimal pose-graph and landmark SLAM (SE-Sync; Holmes & Barfoot 2023).
//   slam-certify solve --input FILE.g2o [--candidate FILE.g2o] [key=value ...] --out RUN
//       -> JSON (cost, lower_bound, suboptimality_bound, certified, lambda_min, rank, ...),
//          exit 0 certified / 3 not; RUN/artifacts: optimised.g2o, poses.tum, landmarks.csv
#include "common/cli.hpp"
#include "common/log.hpp"
#include "slam/solve_job.hpp"

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
  }
  ctx.emit_result(r.to_json());
  return static_cast<int>(s.certified ? ExitCode::ok : ExitCode::negative);
}

int main(int argc, char** argv) {
  App app("slam-certify", "Certifiably optimal pose-graph and landmark SLAM (SE-Sync; Holmes & Barfoot 2023)");
  app.command<slam::SolveOptions>("solve", "Solve (or certify) a SLAM problem; exit 0 when certified optimal, 3 when not",
                                  run_solve, /*is_default=*/true)
      .flag("--input", "input", "g2o file (VERTEX/EDGE_SE2, SE3:QUAT, SE2_XY, SE3_TRACKXYZ)")
      .flag("--candidate", "candidate", "certify the vertices of this g2o file instead of solving");
  return app.main(argc, argv);
}
