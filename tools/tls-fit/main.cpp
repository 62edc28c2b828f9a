// tls-fit: total least-squares line fitting as a QCQP with a certificate of global optimality.
//   tls-fit fit --input points.csv [--candidate a,b,c]   -> JSON, exit 0 certified / 3 not
//   tls-fit gen --n N --seed S [--noise s] [--outliers f] --output points.csv
#include "common/cli.hpp"
#include "common/log.hpp"
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
  }
  ctx.emit_result(r.to_json());
  return static_cast<int>(r.certificate.certified ? ExitCode::ok : ExitCode::negative);
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
  App app("tls-fit", "Total least-squares line fitting as a QCQP, with a certificate of global optimality");
  app.command<linefit::FitOptions>("fit", "Fit (or certify) a line; exit 0 when certified optimal, 3 when not",
                                   run_fit, /*is_default=*/true)
      .flag("--input", "input", "CSV file of x,y points (header optional)")
      .flag("--candidate", "candidate", "certify this line a,b,c instead of fitting one");
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
