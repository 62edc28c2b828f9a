// Certificate of global optimality for a candidate solution x^ of a QCQP (qcqp.hpp), following the
// Lagrangian-duality argument of certifiable estimation (e.g. Rosen et al., SE-Sync, IJRR 2019,
// Theorem 7; Yang & Carlone, TEASER/GNC certificates):
//  1. multipliers lambda from stationarity H(lambda) x^ = 0, i.e. sum_i lambda_i A_i x^ = Q x^
//     (given by the caller when the structure has a closed form, else sparse least squares; the
//     residual is reported either way);
//  2. H(lambda) >= 0 decided by a sparse Cholesky factorisation of H + eta_rel diag(d), with
//     d_i = H_ii (floored at kDiagonalFloor of the largest): the same as D H D + eta_rel I for the
//     Jacobi scaling D = diag(d)^-1/2, so the tolerance is relative to each row's own scale (rows of
//     very different scales, e.g. per-point blocks weighted 1/N next to O(1) rows, each get a shift
//     their size). A factorisation that succeeds proves H > -eta_rel diag(d), hence
//     x^T H x > -eta_rel sum_i d_i x_i^2 (shift_bound);
//  3. lambda_min(H) from (shift-invert) Lanczos, smallest_eigenvalue in lanczos.hpp, for information only;
//  4. the bound f(x^) - d(lambda), reported whether or not certified.
// Certified only when the factorisation succeeds, x^ is feasible to feasibility_tol and the relative
// gap (f - d) / (1 + |f|) is below gap_tol.
#pragma once
#include <Eigen/Dense>

#include <optional>
#include <string>

#include "certify/lanczos.hpp"
#include "certify/qcqp.hpp"

namespace core::certify {

// Diagonal entries below this fraction of the largest are raised to it before scaling the shift.
inline constexpr double kDiagonalFloor = 1e-12;

struct CertificateOptions {
  double eta_rel = 1e-8;          // PSD tolerance relative to each diagonal entry of H
  double feasibility_tol = 1e-8;  // max constraint violation of x^
  double gap_tol = 1e-7;          // relative suboptimality bound
  LanczosOptions lanczos;
  bool compute_lambda_min = true;
  void validate() const;  // UsageError naming the field
};

struct MultiplierFit {
  Eigen::VectorXd lambda;  // (lambda_0, ..., lambda_m)
  double residual = 0.0;   // ||H(lambda) x^|| / (1 + ||Q x^||)
  std::string method;      // "given" or "least_squares"
};

// Least-squares multipliers: min over lambda of ||Q x - sum_i lambda_i A_i x|| (sparse QR).
MultiplierFit recover_multipliers(const Qcqp& qcqp, const Eigen::VectorXd& x);
// Residual of caller-supplied multipliers.
MultiplierFit given_multipliers(const Qcqp& qcqp, const Eigen::VectorXd& x, Eigen::VectorXd lambda);

struct Certificate {
  bool certified = false;
  MultiplierFit multipliers;
  bool factorization_psd = false;  // Cholesky of H + diag(shift) succeeded
  double eta = 0.0;                // eta_rel: the shift relative to each row's diagonal
  Eigen::VectorXd shift;           // eta_rel d_i, the diagonal added to H
  double h_scale = 0.0;            // ||H||_inf
  std::optional<LanczosResult> lambda_min;
  double cost = 0.0;               // f(x^)
  double dual_value = 0.0;         // d(lambda)
  double gap = 0.0;                // cost - dual_value
  double relative_gap = 0.0;       // gap / (1 + |cost|)
  double constraint_violation = 0.0;
  std::string reason;              // why not certified (empty when certified)
  // sum_i shift_i x_i^2: how far below x^T H x >= 0 the factorisation's proof may leave x's cost.
  double shift_bound(const Eigen::VectorXd& x) const { return x.cwiseAbs2().dot(shift); }
};

// The decision of steps 2-4 on a Lagrangian matrix H = H(lambda) the caller assembled (for
// structured problems where building it from the generic QCQP would cost more than linear time):
// cost f(x^), dual value d(lambda), max constraint violation and multipliers as computed by the caller.
Certificate certify_lagrangian(const SparseMatrixd& H, double cost, double dual_value, double constraint_violation,
                               MultiplierFit multipliers, const CertificateOptions& options = {});

// Multipliers from least squares unless `lambda` is given. Throws DataError for a wrong-size x or
// lambda, or a non-finite x.
Certificate certify(const Qcqp& qcqp, const Eigen::VectorXd& x, const CertificateOptions& options = {},
                    const std::optional<Eigen::VectorXd>& lambda = std::nullopt);

}  // namespace core::certify
