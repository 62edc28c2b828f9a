// The `tls-fit fit` job (see fit_job.hpp).
#include "linefit/fit_job.hpp"

#include <cmath>
#include <sstream>

#include "common/errors.hpp"
#include "certify/relaxation.hpp"
#include "certify/sdpa.hpp"
#include "linefit/gm.hpp"
#include "linefit/gm_certificate.hpp"
#include "linefit/gm_chordal.hpp"
#include "linefit/gm_qcqp.hpp"

namespace core::linefit {

void FitOptions::validate() const {
  if (!input.empty() && !points.empty())
    throw UsageError("config keys 'input' and 'points' are exclusive: give the points one way");
  if (!candidate.empty()) parse_candidate(candidate, "candidate");
  if (mode == "tls" && solver == "irls")
    throw UsageError("config key 'solver': irls needs mode gm (plain TLS has the closed form: solver eig)");
  if (mode == "gm" && solver == "eig")
    throw UsageError("config key 'solver': eig is plain TLS only; mode gm uses irls or sdp");
}

Line parse_candidate(const std::string& text, const std::string& key) {
  std::vector<double> v;
  std::stringstream ss(text);
  std::string field;
  while (std::getline(ss, field, ',')) {
    try {
      std::size_t used = 0;
      v.push_back(std::stod(field, &used));
      if (field.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument(field);
    } catch (const std::exception&) {
      throw UsageError("config key '" + key + "': '" + field + "' is not a number (expected a,b,c)");
    }
  }
  if (v.size() != 3) throw UsageError("config key '" + key + "': expected three numbers a,b,c, got '" + text + "'");
  try {
    return normalise_line(v[0], v[1], v[2]);
  } catch (const DataError& e) {
    throw UsageError("config key '" + key + "': " + e.what());
  }
}

nlohmann::json FitResult::to_json() const {
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [name, t] : times.times()) stages[name] = t;
  nlohmann::json j = {{"mode", mode},
                      {"solver", solver},
                      {"source", source},
                      {"n", points.size()},
                      {"a", line.a},
                      {"b", line.b},
                      {"c", line.c},
                      {"candidate", from_candidate},
                      {"cost", certificate.cost},
                      {"dual", certificate.dual},
                      {"gap", certificate.gap()},
                      {"lambda_min", certificate.lambda_min},
                      {"stationarity", certificate.stationarity},
                      {"certified", certificate.certified},
                      {"certificate_detail", certificate.detail},
                      {"times_s", stages}};
  if (mode == "gm") {
    j["sigma"] = sigma;
    std::size_t inliers = 0;
    for (double w : weights) inliers += w > 0.25;  // s_i > 1/2, i.e. |e_i| < sigma
    j["inliers"] = inliers;
    if (solver == "irls") j["irls_iterations"] = irls_iterations;
  }
  if (tight) j["tight"] = *tight;
  if (!sdp.is_null()) j["sdp"] = sdp;
  if (!multipliers.empty()) j["multipliers"] = multipliers;
  if (!multiplier_sdp.is_null()) j["multiplier_sdp"] = multiplier_sdp;
  if (global_cost) {
    j["global_cost"] = *global_cost;
    j["global_line"] = {global_line->a, global_line->b, global_line->c};
    j["verified"] = verified();
  }
  return j;
}

bool FitResult::verified() const {
  return !global_cost || certificate.cost <= *global_cost + 1e-9 * (1.0 + std::abs(*global_cost));
}

namespace {

certify::Qcqp tls_qcqp(const Eigen::Matrix3d& Q) {
  certify::Qcqp q;
  q.Q = Eigen::MatrixXd(Q);
  q.A0 = Eigen::MatrixXd(Eigen::Vector3d(1, 1, 0).asDiagonal());
  return q;
}

nlohmann::json relaxation_json(const certify::RelaxationResult& r) {
  return {{"status", certify::to_string(r.sdp.status)},
          {"value", r.sdp_value},
          {"dual", r.sdp.dual_objective},
          {"eigen_ratio", r.eigen_ratio},
          {"rank", r.numerical_rank},
          {"relative_gap", r.relative_gap},
          {"iterations", r.sdp.iterations},
          {"seconds", r.sdp.seconds}};
}

}  // namespace

std::string resolve_multipliers(const std::string& choice, std::size_t n_points) {
  if (choice != "auto") return choice;
  return n_points <= kAutoStationarySdpMaxPoints ? "stationary_sdp" : "closed_form";
}

FitResult run_fit(const FitOptions& opts) {
  FitResult r;
  r.mode = opts.mode;
  r.solver = opts.solver;
  r.sigma = opts.sigma;
  {
    auto t = r.times.scope("load");
    if (!opts.input.empty()) {
      r.source = opts.input;
      r.points = read_points_csv(opts.input);
    } else if (!opts.points.empty()) {
      r.source = "inline points";
      r.points = points_from_list(opts.points, "config key 'points'");
    } else {
      r.source = "synthetic (seed " + std::to_string(opts.seed) + ")";
      r.points = generate_line_points(opts.synthetic, opts.seed).points;
      check_fit_input(r.points, r.source);
    }
  }
  const bool gm = opts.mode == "gm";
  r.from_candidate = !opts.candidate.empty();
  if (r.from_candidate) r.line = parse_candidate(opts.candidate, "candidate");

  // The QCQP (and its relaxation when the solver, the export or the certificate needs it).
  const Eigen::Matrix3d Q = tls_cost_matrix(r.points);
  // The closed-form GM certificate assembles its Lagrangian directly; the generic QCQP (O(N^2) to
  // build) only when the relaxation, the export or the other multipliers need it.
  if (gm) r.multipliers = resolve_multipliers(opts.multipliers, r.points.size());
  const bool closed_form = gm && r.multipliers == "closed_form";
  const bool stationary_sdp = gm && r.multipliers == "stationary_sdp";
  const bool chordal = gm && r.multipliers == "chordal";
  const bool need_qcqp = !(closed_form || stationary_sdp || chordal) || opts.solver == "sdp" || !opts.export_sdpa.empty();
  certify::Qcqp qcqp;
  if (need_qcqp) {
    auto t = r.times.scope("build");
    qcqp = gm ? gm_qcqp(r.points, opts.sigma, opts.redundant) : tls_qcqp(Q);
  }
  if (!opts.export_sdpa.empty()) {
    auto t = r.times.scope("export");
    certify::write_sdpa(opts.export_sdpa, certify::shor_relaxation(qcqp),
                        "tls-fit " + opts.mode + " relaxation of " + r.source);
  }
  std::optional<certify::RelaxationResult> relax;
  const bool need_relaxation = (opts.solver == "sdp" && !r.from_candidate) || (gm && r.multipliers == "sdp");
  if (need_relaxation) {
    auto t = r.times.scope("sdp");
    relax = certify::solve_relaxation(qcqp);
    r.tight = relax->tight;
    r.sdp = relaxation_json(*relax);
  }
  if (!r.from_candidate) {
    auto t = r.times.scope("solve");
    if (opts.solver == "eig") {
      r.line = fit_tls(r.points);
    } else if (opts.solver == "irls") {
      IrlsOptions io;
      io.starts = opts.starts;
      io.init_angle = opts.init_angle;
      const IrlsResult ir = irls_gm(r.points, opts.sigma, io);
      r.line = ir.line;
      r.irls_iterations = ir.total_iterations;
    } else {
      r.line = gm ? gm_line_from_lifted(relax->x) : normalise_line(relax->x(0), relax->x(1), relax->x(2));
    }
  }
  {
    auto t = r.times.scope("certify");
    if (gm) {
      certify::CertificateOptions co;
      co.eta_rel = std::max(opts.tol, 1e-15);
      co.lanczos.full_reorthogonalization = 3 * r.points.size() + 2 <= 20000;
      co.lanczos.max_steps = 3 * r.points.size() + 2 <= 20000 ? 300 : 100;
      const Eigen::VectorXd x = gm_lift(r.points, r.line, opts.sigma);
      std::optional<GmMultiplierSdp> msdp;
      certify::Certificate c;
      if (stationary_sdp) {
        GmCertificate g = certify_gm_stationary_sdp(r.points, r.line, opts.sigma, co);
        c = std::move(g.certificate);
        msdp = g.sdp;
        r.multiplier_sdp = {{"status", certify::to_string(g.sdp.status)}, {"t", g.sdp.t},
                            {"iterations", g.sdp.iterations}, {"seconds", g.sdp.seconds},
                            {"free_directions", g.sdp.free_directions}, {"order", g.sdp.order}};
      } else if (chordal) {
        GmChordalCertificate g = certify_gm_chordal(r.points, r.line, opts.sigma, co);
        c = std::move(g.certificate);
        r.multiplier_sdp = {{"t", g.admm.t}, {"residual", g.admm.residual}, {"proven", g.admm.proven},
                            {"converged", g.admm.converged}, {"iterations", g.admm.iterations},
                            {"seconds", g.admm.seconds}, {"cliques", g.admm.cliques}};
      } else {
        c = closed_form               ? certify_gm_closed_form(r.points, r.line, opts.sigma, co)
            : r.multipliers == "sdp" ? certify::certify(qcqp, x, co, relax->sdp.y)
                                        : certify::certify(qcqp, x, co);
      }
      r.certificate.cost = gm_cost(r.points, r.line, opts.sigma);
      r.certificate.dual = c.dual_value;
      r.certificate.lambda_min = c.lambda_min ? c.lambda_min->lambda_min : 0.0;
      r.certificate.stationarity = c.multipliers.residual;
      r.certificate.certified = c.certified;
      std::ostringstream d;
      d << "multipliers " << c.multipliers.method;
      if (msdp) d << " (SDP " << certify::to_string(msdp->status) << ", t " << msdp->t << ")";
      d << ", eta " << c.eta
        << (c.certified ? "" : ", not certified: " + c.reason);
      r.certificate.detail = d.str();
      r.weights = gm_weights(r.points, r.line, opts.sigma);
    } else {
      const TlsCertificate c = certify_tls(Q, r.line, opts.tol);
      r.certificate = {c.cost, c.dual, c.lambda_min, c.stationarity, c.certified,
                       "closed form, tol " + std::to_string(c.tol)};
      r.weights.assign(r.points.size(), 1.0);
    }
  }
  if (opts.verify) {
    auto t = r.times.scope("verify");
    const VerifyResult v = exhaustive_search(r.points, gm ? Loss::geman_mcclure : Loss::squared, opts.sigma);
    r.global_cost = v.cost;
    r.global_line = v.line;
  }
  return r;
}

}  // namespace core::linefit
