// Riemannian trust-region method with preconditioned truncated conjugate gradients (Steihaug-Toint)
// for the rank-r relaxation (Absil, Baker & Gallivan, Found. Comput. Math. 2007, Algorithms 1-2;
// the trust region measured in the preconditioner's metric, as Manopt's trustregions/tCG and
// SE-Sync's C++ solver do). Stops at ||grad|| <= grad_tol, at a relative decrease of the cost below
// rel_decrease_tol over an accepted step, or after max_iterations.
#pragma once
#include <string>

#include "slam/relaxation.hpp"

namespace core::slam {

struct TrustRegionOptions {
  double grad_tol = 1e-2;          // Riemannian gradient norm (SE-Sync's default)
  double rel_decrease_tol = 1e-6;  // (F_old - F_new) / max(1, |F_old|) over an accepted step
  int max_iterations = 500;
  int max_tcg_iterations = 1000;
  double tcg_kappa = 0.1, tcg_theta = 0.5;  // inner stop: ||r|| <= ||r_0|| min(||r_0||^theta, kappa)
};

struct TrustRegionResult {
  int iterations = 0, tcg_iterations = 0;
  double grad_norm = 0.0;
  std::string stop;  // gradient | decrease | iterations
};

// Minimises F from relaxation.point(); leaves the result in relaxation (set_point).
TrustRegionResult minimise(Relaxation& relaxation, const TrustRegionOptions& options);

}  // namespace core::slam
