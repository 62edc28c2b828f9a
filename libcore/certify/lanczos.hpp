// Smallest eigenvalue of a symmetric operator by the Lanczos method (Golub & Van Loan, Matrix
// Computations, 4th ed., section 10.1), used for information (the PSD decision of a certificate
// is made by a factorisation) and for the SDP solver's step lengths (scaled_lambda_min). With full reorthogonalisation the Krylov basis is kept
// (n x steps doubles); without it only three vectors are kept and spurious copies of converged
// eigenvalues may appear, which does not move the smallest Ritz value.
// Convergence: the residual bound |beta_k s_k| of the smallest Ritz pair <= tol * max|Ritz value|.
// smallest_eigenvalue (sparse matrices) first tries shift-invert: Lanczos on -(A + tau I)^-1, whose
// smallest eigenvalue -1 / (lambda_min + tau) is found in a few steps even when lambda_min sits in a
// cluster near 0 (the Lagrangian of a certificate has a null vector and, for down-weighted points,
// near-null ones: plain Lanczos then ends at max_steps on an upper bound far from lambda_min).
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
  bool compute_vector = false;  // also return the Ritz vector of lambda_min (needs full reorthogonalisation)
  void validate() const;   // UsageError: max_steps >= 1, tol in (0, 1)
};

struct LanczosResult {
  double lambda_min = 0.0;
  double residual = 0.0;  // bound on the distance from lambda_min to the spectrum (plain: |beta_k s_k|)
  int steps = 0;
  bool converged = false;
  bool shift_invert = false;
  Eigen::VectorXd vector;  // unit Ritz vector of lambda_min when LanczosOptions::compute_vector
};

using LinearOperator = std::function<void(const Eigen::VectorXd& in, Eigen::VectorXd& out)>;

LanczosResult lanczos_smallest(const LinearOperator& apply, int n, const LanczosOptions& options = {});
LanczosResult lanczos_smallest(const Eigen::SparseMatrix<double>& A, const LanczosOptions& options = {});

// max_i sum_j |A_ij| (>= ||A||_2 for symmetric A).
double max_abs_row_sum(const Eigen::SparseMatrix<double>& A);

// lambda_min of a sparse symmetric A. With tau = 1e-8 ||A||_inf and A + tau I positive definite (a
// sparse Cholesky succeeds: lambda_min > -tau), Lanczos runs on -(A + tau I)^-1 and lambda_min =
// 1 / theta - tau from its largest magnitude Ritz value theta, converged when the bound on the
// distance to the spectrum, r / (theta (theta - r)) for the Ritz residual r, is <= tol ||A||_inf.
// Otherwise lambda_min < -tau is well separated and plain lanczos_smallest(A) is used.
LanczosResult smallest_eigenvalue(const Eigen::SparseMatrix<double>& A, const LanczosOptions& options = {});

// Blocks of at least this order get scaled_lambda_min from Lanczos iterations instead of a full
// eigensolve (below it the dense eigensolver costs about as much as the Lanczos steps).
inline constexpr Eigen::Index kLanczosMinOrder = 64;

// lambda_min(L^-1 D L^-T) for X = L L^T positive definite and D symmetric: X + alpha D stays PSD
// exactly for alpha <= -1 / lambda_min when lambda_min < 0 (the interior-point step to the cone's
// boundary). Order >= kLanczosMinOrder, as CSDP's line search does (Borchers 1999): Lanczos on
// v -> L^-1 D L^-T v (two triangular solves and a product per step), its smallest Ritz value less
// its residual bound (an eigenvalue lies within it), converged to 1e-8 of the largest Ritz value: a
// lower bound up to rounding, so the step is rather short than past the boundary. A looser 1e-3 (or
// the Ritz value alone) changed which SDPLIB gpp and qap problems end optimal, near_optimal or stalled:
// on those degenerate problems the trajectory depends on the step to the last digits. Smaller orders,
// or Lanczos not converged in lanczos_step_limit steps: the dense symmetric eigensolver.
double scaled_lambda_min(const Eigen::LLT<Eigen::MatrixXd>& L, const Eigen::MatrixXd& D);

// Lanczos steps scaled_lambda_min runs before the dense fallback: 60, and order / 8 from order
// kLongLanczosMinOrder on. At those orders a step (two triangular solves and a product, ~n^2 memory traffic)
// costs about 1/400 of the fallback (two triangular solves with n right-hand sides and a tridiagonalisation:
// 14% of SDPLIB's qpG11, order 1600, where 7 of 62 calls needed 65-140 steps); below, the degenerate SDPLIB
// families (gpp, qap; order <= 500) keep 60, as a longer run changed gpp500-4 from optimal to near_optimal.
inline constexpr Eigen::Index kLongLanczosMinOrder = 512;
int lanczos_step_limit(Eigen::Index order);

}  // namespace core::certify
