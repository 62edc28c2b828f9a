// Riemannian trust region with preconditioned truncated CG (see trust_region.hpp).
#include "slam/trust_region.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace core::slam {

namespace {

double inner(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) { return (A.array() * B.array()).sum(); }

struct Step {
  Eigen::MatrixXd eta, Heta;
  int iterations = 0;
  bool boundary = false;
};

// Steihaug-Toint tCG for min <g, eta> + 1/2 <eta, H eta> subject to ||eta||_P <= Delta.
Step truncated_cg(const Relaxation& f, const Eigen::MatrixXd& g, double Delta, const TrustRegionOptions& o) {
  Step s;
  s.eta = Eigen::MatrixXd::Zero(g.rows(), g.cols());
  s.Heta = s.eta;
  Eigen::MatrixXd r = g, z = f.precondition(r);
  double r_z = inner(r, z);
  Eigen::MatrixXd delta = -z;
  double e_Pe = 0.0, e_Pd = 0.0, d_Pd = r_z;
  const double r0 = r.norm();
  const double target = r0 * std::min(std::pow(r0, o.tcg_theta), o.tcg_kappa);
  for (int j = 0; j < o.max_tcg_iterations; ++j) {
    s.iterations = j + 1;
    const Eigen::MatrixXd Hd = f.hessian(delta);
    const double kappa = inner(delta, Hd);
    const double alpha = r_z / kappa;
    const double e_Pe_new = e_Pe + 2.0 * alpha * e_Pd + alpha * alpha * d_Pd;
    if (kappa <= 0.0 || e_Pe_new >= Delta * Delta) {
      const double tau = (-e_Pd + std::sqrt(e_Pd * e_Pd + d_Pd * (Delta * Delta - e_Pe))) / d_Pd;
      s.eta += tau * delta;
      s.Heta += tau * Hd;
      s.boundary = true;
      return s;
    }
    s.eta += alpha * delta;
    s.Heta += alpha * Hd;
    e_Pe = e_Pe_new;
    r += alpha * Hd;
    if (r.norm() <= target) break;
    z = f.precondition(r);
    const double r_z_new = inner(r, z);
    const double beta = r_z_new / r_z;
    r_z = r_z_new;
    delta = -z + beta * delta;
    e_Pd = beta * (e_Pd + alpha * d_Pd);
    d_Pd = r_z + beta * beta * d_Pd;
  }
  return s;
}

}  // namespace

TrustRegionResult minimise(Relaxation& f, const TrustRegionOptions& o) {
  const int d = f.d();
  TrustRegionResult res;
  Eigen::MatrixXd g = f.gradient();
  // Initial radius: a preconditioned gradient step (at least a tenth of the point's size).
  double Delta = std::max(std::sqrt(std::max(inner(g, f.precondition(g)), 0.0)), 0.1 * f.point().norm());
  const double Delta_max = 100.0 * std::max(Delta, f.point().norm());
  res.stop = "iterations";
  for (int k = 0; k < o.max_iterations; ++k) {
    res.grad_norm = g.norm();
    if (res.grad_norm <= o.grad_tol) {
      res.stop = "gradient";
      break;
    }
    res.iterations = k + 1;
    const Step s = truncated_cg(f, g, Delta, o);
    res.tcg_iterations += s.iterations;
    Relaxation::Evaluated trial = f.evaluate(stiefel::retract(f.point(), s.eta, d));
    const double F_old = f.cost(), F_new = trial.cost;
    const double model_decrease = -(inner(g, s.eta) + 0.5 * inner(s.eta, s.Heta));
    const double rho = model_decrease > 0 ? (F_old - F_new) / model_decrease : -1.0;
    if (rho < 0.25) Delta *= 0.25;
    else if (rho > 0.75 && s.boundary) Delta = std::min(2.0 * Delta, Delta_max);
    if (rho > 0.1 || (F_new < F_old && model_decrease <= 1e-15 * std::max(1.0, std::abs(F_old)))) {
      f.set_point(std::move(trial));
      g = f.gradient();
      if ((F_old - F_new) / std::max(1.0, std::abs(F_old)) < o.rel_decrease_tol) {
        res.grad_norm = g.norm();
        res.stop = "decrease";
        break;
      }
    } else if (Delta < 1e-14 * std::max(1.0, f.point().norm())) {
      res.grad_norm = g.norm();
      res.stop = "decrease";  // no step can lower the cost any more (numerical floor)
      break;
    }
  }
  return res;
}

}  // namespace core::slam
