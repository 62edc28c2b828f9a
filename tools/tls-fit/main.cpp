// tls-fit: total least-squares line fitting as a QCQP with a certificate of global optimality.
//   tls-fit fit --input points.csv [--candidate a,b,c]   -> JSON, exit 0 certified / 3 not
//   tls-fit fit --mode gm --sigma S --solver irls|sdp [--verify] [--export-sdpa F.dat-s]
//               [--multipliers sparse_sdp|...] [--graph balanced|data] [--block B]
//   tls-fit sdp --input F.dat-s [tol= near_tol= start=]  -> JSON primal/dual/status (SDPA max convention)
//   tls-fit gen --n N --seed S [--noise s] [--outliers f] --output points.csv
#include "certify/sdp_solver.hpp"
#include "certify/sdpa.hpp"
#include "common/cli.hpp"
#include "common/heap.hpp"
#include "common/log.hpp"
#include "common/memory.hpp"
#include "common/threads.hpp"
#include "io/csv.hpp"
#include "io/npy.hpp"
#include "linefit/fit_job.hpp"

using namespace core;

static int run_fit(RunContext& ctx, const linefit::FitOptions& opts) {
  const linefit::FitResult r = linefit::run_fit(opts);
  log::info("{} points from {}: line {:.6f} x + {:.6f} y = {:.6f}, cost {:.6g}, dual {:.6g}, {}", r.points.size(),
            r.source, r.line.a, r.line.b, r.line.c, r.certificate.cost, r.certificate.dual,
            r.certificate.certified ? "certified optimal" : "NOT certified");
  if (ctx.rundir) {
    const auto res = linefit::residuals(r.points, r.line);
    io::write_npy(ctx.rundir->artifact("residuals.npy"), res.data(), {res.size()});
    std::vector<double> xy;
    xy.reserve(2 * r.points.size());
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      xy.push_back(r.points.x[i]);
      xy.push_back(r.points.y[i]);
    }
    io::write_npy(ctx.rundir->artifact("points.npy"), xy.data(), {r.points.size(), 2});
    io::write_npy(ctx.rundir->artifact("weights.npy"), r.weights.data(), {r.weights.size()});
    std::vector<double> table;  // x, y, residual, weight, inlier
    table.reserve(5 * r.points.size());
    for (std::size_t i = 0; i < r.points.size(); ++i) {
      const double inlier = r.mode == "gm" ? (r.weights[i] > 0.25 ? 1.0 : 0.0) : 1.0;
      table.insert(table.end(), {r.points.x[i], r.points.y[i], res[i], r.weights[i], inlier});
    }
    io::write_numeric_csv(ctx.rundir->artifact("weights.csv"), {"x", "y", "residual", "weight", "inlier"}, table,
                          r.points.size(), 5);
  }
  ctx.emit_result(r.to_json());
  return static_cast<int>(r.certificate.certified && r.verified() ? ExitCode::ok : ExitCode::negative);
}

// `tls-fit sdp`: solve an SDP from an SDPA sparse file with our interior-point solver.
struct SdpCommandOptions {
  std::string input;
  double tol = 1e-8;
  double near_tol = 1e-6;
  int max_iterations = 100;
  int stall_iterations = 20;
  std::string start = "scaled";
  int lapack_min_order = 2000;
  template <class V>
  void visit(V& v) {
    v("input", input, "SDPA sparse file (.dat-s)");
    v("tol", tol, "relative residuals and gap for optimal", core::in_range(1e-15, 0.1));
    v("near_tol", near_tol, "the same for near_optimal (exit 0, achieved accuracy reported)",
      core::in_range(1e-15, 0.1));
    v("max_iterations", max_iterations, "interior-point iteration limit", core::in_range(1, 10000));
    v("stall_iterations", stall_iterations, "stalled when the best iterate improved < 10% in this many",
      core::in_range(2, 10000));
    v("start", start, "starting point: scaled | unscaled | auto (unscaled, then scaled if that stalls)",
      core::one_of({"auto", "unscaled", "scaled"}));
    v("lapack_min_order", lapack_min_order, "dense Schur complements of this order and up are factored by OpenBLAS",
      core::in_range(1, 1000000000));
  }
  void validate() const {
    if (input.empty()) throw UsageError("config key 'input' (--input) is required: the .dat-s file to solve");
    if (near_tol < tol) throw UsageError("config key 'near_tol' must be >= tol");
  }
};

static int run_sdp(RunContext& ctx, const SdpCommandOptions& opts) {
  certify::SdpProblem p = certify::read_sdpa(opts.input);
  const int constraints = p.num_constraints(), order = p.total_size();
  const std::vector<certify::BlockSpec> blocks = p.blocks;
  certify::SdpOptions so;
  so.tol = opts.tol;
  so.near_tol = opts.near_tol;
  so.max_iterations = opts.max_iterations;
  so.stall_iterations = opts.stall_iterations;
  so.lapack_min_order = opts.lapack_min_order;
  so.start = opts.start == "unscaled" ? certify::StartPoint::unscaled
             : opts.start == "scaled" ? certify::StartPoint::scaled
                                      : certify::StartPoint::automatic;
  so.threads = thread_count();
  so.memory_limit_bytes = available_memory_bytes() / 10 * 9;
  const certify::SdpResult r = certify::solve_sdp(std::move(p), so);
  log::info("{}: {} (accuracy {:.1e}) after {} iterations, primal {:.10g}, dual {:.10g} (file's max convention), {:.4f} s",
            opts.input, certify::to_string(r.status), r.achieved_accuracy, r.iterations, certify::sdpa_objective(r.primal_objective),
            certify::sdpa_objective(r.dual_objective), r.seconds);
  if (ctx.rundir) {  // the solution as csdp writes it (y, Z, X), and y alone
    write_file_atomic(ctx.rundir->artifact("solution.sol"), certify::format_sdpa_solution(blocks, r.y, r.X, r.Z));
    const Eigen::VectorXd y_file = -r.y;
    io::write_npy(ctx.rundir->artifact("y.npy"), y_file.data(), {static_cast<std::size_t>(y_file.size())});
  }
  ctx.emit_result({{"input", opts.input},
                   {"status", certify::to_string(r.status)},
                   {"primal", certify::sdpa_objective(r.primal_objective)},
                   {"dual", certify::sdpa_objective(r.dual_objective)},
                   {"primal_residual", r.primal_residual},
                   {"dual_residual", r.dual_residual},
                   {"relative_gap", r.relative_gap},
                   {"achieved_accuracy", r.achieved_accuracy},
                   {"iterations", r.iterations},
                   {"best_iteration", r.best_iteration},
                   {"constraints", constraints},
                   {"order", order},
                   {"schur", r.schur},
                   {"start", r.start},
                   {"seconds", r.seconds}});
  const bool solved = r.status == certify::SdpStatus::optimal || r.status == certify::SdpStatus::near_optimal;
  return static_cast<int>(solved ? ExitCode::ok : ExitCode::negative);
}

static int run_gen(RunContext& ctx, const linefit::GenOptions& opts) {
  const auto data = linefit::generate_line_points(opts.line, opts.seed);
  const auto& p = data.points;
  std::vector<double> values;
  values.reserve(2 * p.size());
  std::size_t outliers = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    values.push_back(p.x[i]);
    values.push_back(p.y[i]);
    outliers += data.is_outlier[i];
  }
  io::write_numeric_csv(opts.output, {"x", "y"}, values, p.size(), 2);
  log::info("wrote {} points ({} outliers) to {}", p.size(), outliers, opts.output);
  ctx.emit_result({{"output", opts.output}, {"n", p.size()}, {"outliers", outliers}, {"seed", opts.seed}});
  return 0;
}

int main(int argc, char** argv) {
  retain_freed_memory();  // the SDP solver allocates and frees order x order matrices every iteration
  App app("tls-fit", "Total least-squares line fitting as a QCQP, with a certificate of global optimality");
  app.command<linefit::FitOptions>("fit", "Fit (or certify) a line; exit 0 when certified optimal, 3 when not",
                                   run_fit, /*is_default=*/true)
      .flag("--input", "input", "CSV file of x,y points (header optional)")
      .flag("--candidate", "candidate", "certify this line a,b,c instead of fitting one")
      .flag("--mode", "mode", "tls | gm")
      .flag("--sigma", "sigma", "Geman-McClure scale")
      .flag("--solver", "solver", "auto (the mode's: eig for tls, irls for gm) | eig | sdp | irls")
      .flag("--init-angle", "init_angle", "IRLS: single start at this normal angle (radians)")
      .flag("--multipliers", "multipliers",
            "GM certificate multipliers: auto | least_squares | closed_form | stationary_sdp | chordal | sparse_sdp | sdp")
      .flag("--graph", "graph", "GM constraint graph: balanced | data")
      .flag("--block", "block", "GM constraint graph block size (1: chain; 0: try 1, 2, 4)")
      .flag("--export-sdpa", "export_sdpa", "write the SDP relaxation to this .dat-s file")
      .switch_flag("--verify", "verify", "exhaustive search for the global optimum (exit 3 if the fit is worse)");
  app.command<SdpCommandOptions>("sdp",
                                 "Solve an SDP in SDPA sparse format; exit 0 when optimal or near_optimal, 3 when not",
                                 run_sdp)
      .flag("--input", "input", "SDPA sparse file (.dat-s)")
      .rundir_with_out();
  app.command<linefit::GenOptions>("gen", "Write seeded synthetic points on a line to CSV", run_gen)
      .flag("--n", "n", "number of points")
      .flag("--noise", "noise", "noise standard deviation")
      .flag("--outliers", "outliers", "outlier fraction in [0, 1]")
      .flag("--angle", "angle_deg", "line direction in degrees")
      .flag("--offset", "offset", "distance of the line from the origin")
      .flag("--output", "output", "CSV file to write")
      .without_rundir();
  return app.main(argc, argv);
}
