// range-certify: certified continuous-time range-only localization ("Safe and Smooth", Dümbgen,
// Holmes, Barfoot, RA-L 2023).
//   range-certify solve --input DIR|starloc:FOLDER/RUN [--prior cv|zv|none] [--init gt|flip|random]
//                       [--tries K] [--candidate FILE] [sigma_d=.. sigma_a=..]
//                       [query_times=FILE | query_dt=S] --out RUN
//                       -> JSON, exit 0 certified / 3 not
//   range-certify sim --n N --anchors K --dim 2|3 --seed S [key=value...] --output DIR
//   range-certify query --trajectory FILE (--times FILE | --dt S) [--prior cv|zv|none] --output FILE
#include "common/cli.hpp"
#include "common/log.hpp"
#include "rangeloc/solve_job.hpp"

using namespace core;

static int run_solve(RunContext& ctx, const rangeloc::SolveOptions& opts) {
  const rangeloc::SolveResult r = rangeloc::run_solve(opts);
  const auto& c = r.best.certificate;
  log::info("cost {:.9g}, rho {:.9g}, smallest pivot {:.3g}: {}", r.best.cost.total(), c.rho, c.min_pivot,
            c.certified ? "certified globally optimal" : "NOT certified (" + c.reason + ")");
  if (ctx.rundir) {
    rangeloc::write_trajectory(r.estimate, ctx.rundir->artifact("trajectory.csv"));
    if (r.queried.size() > 0) rangeloc::write_trajectory(r.queried, ctx.rundir->artifact("trajectory_query.csv"));
    rangeloc::Dataset anchors_only = r.data;
    anchors_only.measurements.clear();
    anchors_only.groundtruth = {};
    rangeloc::write_anchors(anchors_only, ctx.rundir->artifact("anchors.csv"));
    if (r.data.has_groundtruth()) {
      rangeloc::Trajectory gt = r.data.groundtruth;
      gt.velocities.resize(0, 0);
      rangeloc::write_trajectory(gt, ctx.rundir->artifact("groundtruth.csv"));
    }
  }
  ctx.emit_result(r.to_json());
  return static_cast<int>(c.certified ? ExitCode::ok : ExitCode::negative);
}

static int run_sim(RunContext& ctx, const rangeloc::SimCommandOptions& opts) {
  const rangeloc::Dataset data = rangeloc::simulate(opts);
  rangeloc::write_dataset(data, opts.output);
  log::info("wrote {} states, {} ranges, {} anchors to {}", data.num_states(), data.num_measurements(), data.anchors.cols(),
            opts.output);
  ctx.emit_result({{"output", opts.output},
                   {"n", data.num_states()},
                   {"e", data.num_measurements()},
                   {"anchors", data.anchors.cols()},
                   {"dim", data.dim},
                   {"seed", opts.seed}});
  return 0;
}

static int run_query(RunContext& ctx, const rangeloc::QueryOptions& opts) {
  const std::size_t rows = rangeloc::run_query(opts);
  log::info("wrote {} queried positions to {}", rows, opts.output);
  ctx.emit_result({{"output", opts.output}, {"rows", rows}, {"prior", opts.prior}});
  return 0;
}

int main(int argc, char** argv) {
  App app("range-certify", "Certified continuous-time range-only localization (Safe and Smooth, RA-L 2023)");
  app.command<rangeloc::SolveOptions>("solve", "Estimate a trajectory from ranges and certify it; exit 0 certified, 3 not",
                                      run_solve, /*is_default=*/true)
      .flag("--input", "input", "dataset folder, or starloc:FOLDER/RUN (empty: a simulated problem)")
      .flag("--prior", "prior", "cv | zv | none")
      .flag("--init", "init", "gt | flip | random")
      .flag("--tries", "tries", "Gauss-Newton runs at most (init, then random)")
      .flag("--candidate", "candidate", "certify this trajectory CSV as given");
  app.command<rangeloc::SimCommandOptions>("sim", "Write a seeded simulated dataset folder", run_sim)
      .flag("--n", "n", "number of states")
      .flag("--anchors", "anchors", "number of anchors")
      .flag("--dim", "dim", "2 or 3")
      .flag("--output", "output", "dataset folder to write")
      .without_rundir();
  app.command<rangeloc::QueryOptions>("query", "Positions of a trajectory CSV at other times (GP interpolation)", run_query)
      .flag("--trajectory", "trajectory", "trajectory CSV (a run's trajectory.csv)")
      .flag("--times", "times", "CSV of query times")
      .flag("--dt", "dt", "or a grid step in seconds")
      .flag("--prior", "prior", "cv | zv | none")
      .flag("--output", "output", "CSV to write (t,x,y[,z])")
      .without_rundir();
  return app.main(argc, argv);
}
