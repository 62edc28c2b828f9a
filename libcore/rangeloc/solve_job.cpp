#include "rangeloc/solve_job.hpp"

#include <cmath>
#include <limits>

#include "certify/relaxation.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rng.hpp"
#include "common/timer.hpp"
#include "rangeloc/interpolate.hpp"

namespace core::rangeloc {

void SolveOptions::validate() const {
  if (!time_range.empty() && (time_range.size() != 2 || !(time_range[0] < time_range[1])))
    throw UsageError("config key 'time_range' must be [t0, t1] with t0 < t1");
  if (!query_times.empty() && query_dt > 0)
    throw UsageError("config keys 'query_times' and 'query_dt' exclude each other; give one");
}

void QueryOptions::validate() const {
  if (trajectory.empty()) throw UsageError("range-certify query needs --trajectory FILE");
  if (output.empty()) throw UsageError("range-certify query needs --output FILE");
  if (times.empty() == (dt <= 0)) throw UsageError("range-certify query needs exactly one of --times FILE and --dt SECONDS");
}

std::size_t run_query(const QueryOptions& o) {
  const Trajectory states = read_trajectory(o.trajectory, 0);
  const std::vector<double> times = o.times.empty() ? query_grid(states, o.dt) : read_query_times(o.times);
  write_trajectory(query_trajectory(states, parse_prior(o.prior), times), o.output);
  return times.size();
}

Dataset load_problem_data(const SolveOptions& o, StarlocInfo* info) {
  if (o.input.empty()) return simulate(o.sim);
  if (o.input.rfind("starloc:", 0) == 0) {
    StarlocOptions so;
    so.tag = o.tag;
    so.group_window = o.group_window;
    so.calibrate = o.calibrate;
    so.time_range = o.time_range;
    return read_starloc(o.input.substr(8), so, info);
  }
  return read_dataset(o.input);
}

namespace {

// Ground truth at the state times (linear interpolation, velocities by finite differences).
Trajectory groundtruth_at_states(const Problem& pb, const Dataset& data) {
  if (!data.has_groundtruth())
    throw UsageError("init gt and flip need a ground truth (groundtruth.csv or a STAR-loc run); use init=random");
  Trajectory t;
  t.times = pb.times();
  t.positions = interpolate_positions(data.groundtruth, Prior::zv, t.times);
  t.fill_velocities();
  return t;
}

// Reflection through the affine hyperplane that fits the anchors best (normal: the direction of
// least spread), which maps one reflection local minimum onto the other for nearly flat anchors.
void reflect_through_anchors(const Eigen::MatrixXd& anchors, Trajectory& t) {
  const Eigen::VectorXd c = anchors.rowwise().mean();
  const Eigen::MatrixXd centred = anchors.colwise() - c;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(centred * centred.transpose());
  const Eigen::VectorXd normal = es.eigenvectors().col(0);
  const Eigen::MatrixXd reflect = Eigen::MatrixXd::Identity(c.size(), c.size()) - 2.0 * normal * normal.transpose();
  t.positions = (reflect * (t.positions.colwise() - c)).colwise() + c;
  t.velocities = reflect * t.velocities;
}

// A random smooth trajectory: a velocity random walk, stretched onto the anchors' bounding box.
Trajectory random_trajectory(const Problem& pb, std::uint64_t seed, double sigma_a) {
  Rng rng(seed);
  const int d = pb.dim(), n = pb.states();
  Trajectory t;
  t.times = pb.times();
  t.positions.resize(d, n);
  Eigen::VectorXd v(d);
  for (int k = 0; k < d; ++k) v(k) = rng.normal();
  t.positions.col(0).setZero();
  for (int i = 1; i < n; ++i) {
    const double dt = t.times[i] - t.times[i - 1];
    t.positions.col(i) = t.positions.col(i - 1) + dt * v;
    for (int k = 0; k < d; ++k) v(k) += sigma_a * std::sqrt(dt) * rng.normal();
  }
  const Eigen::VectorXd lo = pb.anchors().rowwise().minCoeff(), hi = pb.anchors().rowwise().maxCoeff();
  const Eigen::VectorXd plo = t.positions.rowwise().minCoeff(), phi = t.positions.rowwise().maxCoeff();
  for (int k = 0; k < d; ++k) {
    const double span = phi(k) - plo(k);
    const double u0 = rng.uniform(), u1 = rng.uniform();  // a random sub-box of the anchors' box
    const double a = lo(k) + std::min(u0, u1) * (hi(k) - lo(k)), b = lo(k) + std::max(u0, u1) * (hi(k) - lo(k));
    for (int i = 0; i < n; ++i) t.positions(k, i) = span > 0 ? a + (t.positions(k, i) - plo(k)) / span * (b - a) : a;
  }
  t.fill_velocities();
  return t;
}

Attempt certify_attempt(const Problem& pb, const Eigen::VectorXd& theta, const CertificateOptions& copts) {
  Attempt a;
  Timer timer;
  const Multipliers mult = closed_form_multipliers(pb, theta);
  a.multipliers_s = timer.seconds();
  timer.reset();
  a.certificate = certify_solution(pb, theta, mult, copts);
  a.certificate_s = timer.seconds();
  return a;
}

Trajectory read_candidate(const std::string& path, const Problem& pb) {
  Trajectory c = read_trajectory(path, pb.dim());
  if (c.size() != pb.states())
    throw DataError(path + ": " + std::to_string(c.size()) + " rows, but the data has " + std::to_string(pb.states()) +
                    " state times (a candidate gives one row per distinct range time)");
  for (int n = 0; n < pb.states(); ++n)
    if (std::abs(c.times[n] - pb.times()[n]) > 1e-9 * (1.0 + std::abs(pb.times()[n])))
      throw DataError(path + ": row " + std::to_string(n + 1) + " has time " + std::to_string(c.times[n]) +
                      ", the data's state time is " + std::to_string(pb.times()[n]));
  return c;
}

}  // namespace

Eigen::VectorXd initial_state(const Problem& pb, const Dataset& data, const std::string& init, std::uint64_t rng_seed,
                              double sigma_a) {
  if (init == "random") return pb.state_vector(random_trajectory(pb, rng_seed, sigma_a));
  Trajectory t = groundtruth_at_states(pb, data);
  if (init == "flip") reflect_through_anchors(pb.anchors(), t);
  return pb.state_vector(t);
}

SolveResult run_solve(const SolveOptions& o) {
  SolveResult res;
  res.data = load_problem_data(o, &res.starloc);
  if (!res.starloc.anchors_note.empty()) log::warn("{}", res.starloc.anchors_note);
  res.prior = parse_prior(o.prior);
  std::vector<double> query = o.query_times.empty() ? std::vector<double>{} : read_query_times(o.query_times);
  const Problem pb(res.data, res.prior, o.sigma_d, o.sigma_a);
  log::info("{}: {} states, {} ranges, {} anchors, {}-D, prior {}", res.data.source, pb.states(), pb.num_measurements(),
            pb.anchors().cols(), pb.dim(), o.prior);
  CertificateOptions copts;
  copts.pivot_tol = o.pivot_tol;
  copts.stationarity_tol = o.stationarity_tol;
  copts.rho_tol = o.rho_tol;
  GaussNewtonOptions gopts;
  gopts.max_iterations = o.max_iterations;

  Eigen::VectorXd best_theta;
  double best_cost = std::numeric_limits<double>::infinity();
  if (!o.candidate.empty()) {
    res.from_candidate = true;
    const Eigen::VectorXd theta = pb.state_vector(read_candidate(o.candidate, pb));
    Attempt a = certify_attempt(pb, theta, copts);
    a.init = "candidate";
    a.cost = pb.cost(theta);
    res.attempts.push_back(a);
    best_theta = theta;
  } else {
    bool certified_found = false;
    for (int i = 0; i < o.tries; ++i) {
      const std::string init = i == 0 ? o.init : "random";
      Timer timer;
      const Eigen::VectorXd theta0 = initial_state(pb, res.data, init, o.seed + static_cast<std::uint64_t>(i), o.sigma_a);
      GaussNewtonResult gn = gauss_newton(pb, theta0, gopts);
      const double solve_s = timer.seconds();
      Attempt a = certify_attempt(pb, gn.theta, copts);
      a.init = init;
      a.cost = gn.cost;
      a.iterations = gn.iterations;
      a.factorizations = gn.factorizations;
      a.converged = gn.converged;
      a.solve_s = solve_s;
      a.iteration_s = gn.seconds_per_iteration;
      log::info("try {} ({}): cost {:.9g} after {} iterations, {} (pivot {:.3g}, stationarity {:.2g})", i + 1, init,
                a.cost.total(), a.iterations, a.certificate.certified ? "certified" : "not certified: " + a.certificate.reason,
                a.certificate.min_pivot, a.certificate.stationarity);
      res.attempts.push_back(a);
      const bool first_certified = a.certificate.certified && !certified_found;
      certified_found = certified_found || a.certificate.certified;
      if (first_certified || (!certified_found && a.cost.total() < best_cost)) {
        best_cost = a.cost.total();
        best_theta = gn.theta;
      }
      if (a.certificate.certified && o.stop_at_certified) break;
    }
  }
  // The first certified attempt, else the cheapest (the same choice as best_theta above).
  const Attempt* chosen = nullptr;
  for (const auto& a : res.attempts)
    if (a.certificate.certified) {
      chosen = &a;
      break;
    }
  if (!chosen)
    for (const auto& a : res.attempts)
      if (!chosen || a.cost.total() < chosen->cost.total()) chosen = &a;
  res.best = *chosen;
  res.estimate = pb.trajectory(best_theta);
  if (o.query_dt > 0) query = query_grid(res.estimate, o.query_dt);
  if (!query.empty()) res.queried = query_trajectory(res.estimate, res.prior, query);
  if (res.data.has_groundtruth()) {
    res.best.rmse = rmse(res.estimate, res.prior, res.data.groundtruth);
    if (res.data.dim == 3) res.best.rmse_xy = rmse(res.estimate, res.prior, res.data.groundtruth, 2);
  }

  if (o.sdp_check > 0 && pb.states() <= o.sdp_check) {
    certify::RelaxationOptions ro;
    ro.sdp.tol = 1e-6;
    const auto rel = certify::solve_relaxation(lifted_qcqp(pb), ro, res.best.cost.total());
    res.sdp = {{"status", certify::to_string(rel.sdp.status)},
               {"value", rel.sdp_value},
               {"tight", rel.tight},
               {"eigen_ratio", rel.eigen_ratio},
               {"relative_gap_to_cost", (res.best.cost.total() - rel.sdp_value) / (1.0 + std::abs(res.best.cost.total()))},
               {"seconds", rel.sdp.seconds}};
  }
  return res;
}

nlohmann::json SolveResult::to_json() const {
  const Certificate& c = best.certificate;
  double total_solve = 0, total_mult = 0, total_cert = 0;
  for (const auto& a : attempts) {
    total_solve += a.solve_s;
    total_mult += a.multipliers_s;
    total_cert += a.certificate_s;
  }
  nlohmann::json j = {
      {"source", data.source},
      {"n", data.num_states()},
      {"e", data.num_measurements()},
      {"dim", data.dim},
      {"anchors", data.anchors.cols()},
      {"prior", to_string(prior)},
      {"init", best.init},
      {"cost", best.cost.total()},
      {"cost_data", best.cost.data},
      {"cost_prior", best.cost.prior},
      {"certified", c.certified},
      {"certificate", c.min_pivot},
      {"certificate_state", c.min_pivot_state},
      {"schur_h", c.schur_h},
      {"stationarity", c.stationarity},
      {"rho", c.rho},
      {"rho_gap", c.rho_gap},
      {"rho_gap_rounding", c.rho_gap_rounding},
      {"reason", c.reason},
      {"tries", from_candidate ? 0 : static_cast<int>(attempts.size())},
      {"iterations", best.iterations},
      {"factorizations", best.factorizations},
      {"converged", best.converged},
      {"rmse", best.rmse >= 0 ? nlohmann::json(best.rmse) : nlohmann::json(nullptr)},
      {"times_s",
       {{"solve", best.solve_s},
        {"multipliers", best.multipliers_s},
        {"certificate", best.certificate_s},
        {"gn_iteration", best.iteration_s}}},
      {"times_total_s", {{"solve", total_solve}, {"multipliers", total_mult}, {"certificate", total_cert}}},
  };
  double best_cost = best.cost.total();
  for (const auto& a : attempts) best_cost = std::min(best_cost, a.cost.total());
  j["best_cost"] = best_cost;
  if (best.rmse_xy >= 0) j["rmse_xy"] = best.rmse_xy;
  if (queried.size() > 0) j["queries"] = queried.size();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& a : attempts)
    list.push_back({{"init", a.init}, {"cost", a.cost.total()}, {"certified", a.certificate.certified},
                    {"certificate", a.certificate.min_pivot}, {"iterations", a.iterations}});
  j["attempts"] = list;
  if (!starloc.anchors_file.empty()) {
    j["starloc"] = {{"anchors_file", starloc.anchors_file}, {"biases", starloc.biases}};
    if (!starloc.anchors_note.empty()) j["starloc"]["note"] = starloc.anchors_note;
  }
  if (!sdp.is_null()) j["sdp"] = sdp;
  return j;
}

}  // namespace core::rangeloc
