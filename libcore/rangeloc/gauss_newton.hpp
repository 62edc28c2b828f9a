// Local solver of range-certify: Gauss-Newton on the block-tridiagonal normal equations
// (O(N k^3) per iteration) with Levenberg-Marquardt damping (A + mu diag(A)) delta = -b, as the
// local solver of "Safe and Smooth" (RA-L 2023, Sec. IV-A) but damped, so that it also runs from far
// initialisations and on under-determined problems.
#pragma once
#include <Eigen/Dense>

#include "rangeloc/problem.hpp"

namespace core::rangeloc {

struct GaussNewtonOptions {
  int max_iterations = 200;
  // Stop when an accepted step's relative cost decrease and its predicted decrease are both below
  // this (the iterate is stationary to rounding), or the damping exceeds its limit.
  double relative_decrease_tol = 1e-15;
};

struct GaussNewtonResult {
  Eigen::VectorXd theta;
  CostParts cost;
  int iterations = 0;
  int factorizations = 0;  // damped systems factored (accepted and rejected steps)
  bool converged = false;
  double gradient_norm = 0.0;  // ||gradient||_inf at theta
  double seconds_per_iteration = 0.0;  // per damped step tried (factor, solve, cost; relinearise when accepted)
};

GaussNewtonResult gauss_newton(const Problem& problem, Eigen::VectorXd theta, const GaussNewtonOptions& options = {});

}  // namespace core::rangeloc
