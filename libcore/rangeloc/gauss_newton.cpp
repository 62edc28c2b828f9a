#include "rangeloc/gauss_newton.hpp"

#include <algorithm>
#include <cmath>

#include "common/timer.hpp"

namespace core::rangeloc {

GaussNewtonResult gauss_newton(const Problem& problem, Eigen::VectorXd theta, const GaussNewtonOptions& options) {
  Timer timer;
  GaussNewtonResult r;
  BlockTridiagonal a, damped;
  Eigen::VectorXd b;
  BlockCholesky chol;
  double mu = 1e-6;
  const int k = problem.state_size();
  CostParts cost = problem.linearize(theta, a, b);
  int it = 0;
  for (; it < options.max_iterations; ++it) {
    bool accepted = false, stationary = false;
    while (!accepted && mu < 1e12) {
      damped = a;
      double max_diag = 0.0;
      for (int n = 0; n < a.blocks(); ++n) max_diag = std::max(max_diag, a.diag(n).diagonal().maxCoeff());
      const double floor = 1e-12 * std::max(max_diag, 1e-300);
      for (int n = 0; n < a.blocks(); ++n)
        for (int i = 0; i < k; ++i) damped.diag(n)(i, i) += mu * std::max(a.diag(n)(i, i), floor);
      ++r.factorizations;
      if (!chol.compute(damped)) {
        mu *= 10;
        continue;
      }
      const Eigen::VectorXd delta = -chol.solve(b);
      const double predicted = -(2.0 * b.dot(delta) + delta.dot(a.multiply(delta)));
      const double total = cost.total();
      if (predicted <= options.relative_decrease_tol * total) {
        stationary = true;
        break;
      }
      const Eigen::VectorXd candidate = theta + delta;
      const CostParts next = problem.cost(candidate);
      if (next.total() < total) {
        accepted = true;
        const double decrease = total - next.total();
        theta = candidate;
        cost = problem.linearize(theta, a, b);
        mu = std::max(mu / 3.0, 1e-12);
        if (decrease <= options.relative_decrease_tol * total) stationary = true;
      } else if (predicted <= 1e-12 * total) {
        stationary = true;  // the model's decrease is below what the cost's rounding lets a step show
        break;
      } else {
        mu *= 4.0;
      }
    }
    if (stationary || !accepted) {
      r.converged = stationary;
      break;
    }
  }
  r.theta = std::move(theta);
  r.cost = cost;
  r.iterations = it;
  r.gradient_norm = 2.0 * b.lpNorm<Eigen::Infinity>();
  r.seconds_per_iteration = timer.seconds() / std::max(1, r.factorizations);
  return r;
}

}  // namespace core::rangeloc
