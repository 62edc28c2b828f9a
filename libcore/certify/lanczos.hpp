// Smallest eigenvalue of a symmetric operator by the Lanczos method (Golub & Van Loan, Matrix
// Computations, 4th ed., section 10.1), used for information only (the PSD decision of a
// certificate is made by a factorisation). With full reorthogonalisation the Krylov basis is kept
// (n x steps doubles); without it only three vectors are kept and spurious copies of converged
// eigenvalues may appear, which does not move the smallest Ritz value.
// Convergence: the residual bound |beta_k s_k| of the smallest Ritz pair <= tol * max|Ritz value|.
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include <cstdint>
#include <functional>

namespace core::certify {

struct LanczosOptions {
  int max_steps = 300;
  double tol = 1e-10;
  bool full_reorthogonalization = true;
  std::uint64_t seed = 1;  // start vector
  void validate() const;   // UsageError: max_steps >= 1, tol in (0, 1)
};

struct LanczosResult {
  double lambda_min = 0.0;
  double residual = 0.0;  // |beta_k s_k|, an upper bound on ||A v - lambda v|| for the Ritz pair
  int steps = 0;
  bool converged = false;
};

using LinearOperator = std::function<void(const Eigen::VectorXd& in, Eigen::VectorXd& out)>;

LanczosResult lanczos_smallest(const LinearOperator& apply, int n, const LanczosOptions& options = {});
LanczosResult lanczos_smallest(const Eigen::SparseMatrix<double>& A, const LanczosOptions& options = {});

}  // namespace core::certify
