// Optimality certificate of a QCQP candidate (see certificate.hpp): multipliers, a Cholesky
// PSD test of the Lagrangian matrix with a Jacobi-relative shift, Lanczos lambda_min and the duality-gap bound.
#include "certify/certificate.hpp"

#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseQR>

#include <cmath>

#include "common/errors.hpp"

namespace core::certify {

void CertificateOptions::validate() const {
  auto positive = [](double v, const char* name) {
    if (!(v > 0.0 && std::isfinite(v))) throw UsageError(std::string("certificate.") + name + " must be > 0, got " + std::to_string(v));
  };
  positive(eta_rel, "eta_rel");
  positive(feasibility_tol, "feasibility_tol");
  positive(gap_tol, "gap_tol");
  lanczos.validate();
}

namespace {

double stationarity_residual(const Qcqp& q, const Eigen::VectorXd& x, const Eigen::VectorXd& lambda) {
  return (q.lagrangian(lambda) * x).norm() / (1.0 + q.Q.apply(x).norm());
}

void check_point(const Qcqp& q, const Eigen::VectorXd& x) {
  if (x.size() != q.dim())
    throw DataError("candidate has " + std::to_string(x.size()) + " entries, the QCQP has dimension " +
                    std::to_string(q.dim()));
  if (!x.allFinite()) throw DataError("candidate has a non-finite entry");
}

}  // namespace

MultiplierFit recover_multipliers(const Qcqp& q, const Eigen::VectorXd& x) {
  check_point(q, x);
  const int n = q.dim(), m = q.num_multipliers();
  // Columns A_i x of the stationarity system G lambda = Q x.
  std::vector<Eigen::Triplet<double>> t;
  auto add_column = [&](int col, const SymMatrix& A) {
    const Eigen::VectorXd v = A.apply(x);
    for (int r = 0; r < n; ++r)
      if (v(r) != 0.0) t.emplace_back(r, col, v(r));
  };
  add_column(0, q.A0);
  for (int i = 1; i < m; ++i) add_column(i, q.constraints[i - 1].A);
  SparseMatrixd G(n, m);
  G.setFromTriplets(t.begin(), t.end());
  G.makeCompressed();
  Eigen::SparseQR<SparseMatrixd, Eigen::COLAMDOrdering<int>> qr(G);
  MultiplierFit fit;
  fit.method = "least_squares";
  if (qr.info() != Eigen::Success) throw DataError("multiplier least squares: QR factorisation failed");
  fit.lambda = qr.solve(q.Q.apply(x));
  fit.residual = stationarity_residual(q, x, fit.lambda);
  return fit;
}

MultiplierFit given_multipliers(const Qcqp& q, const Eigen::VectorXd& x, Eigen::VectorXd lambda) {
  check_point(q, x);
  if (lambda.size() != q.num_multipliers())
    throw DataError("multipliers have " + std::to_string(lambda.size()) + " entries, expected " +
                    std::to_string(q.num_multipliers()));
  if (!lambda.allFinite()) throw DataError("multipliers have a non-finite entry");
  MultiplierFit fit;
  fit.method = "given";
  fit.lambda = std::move(lambda);
  fit.residual = stationarity_residual(q, x, fit.lambda);
  return fit;
}

Certificate certify_lagrangian(const SparseMatrixd& H, double cost, double dual_value, double violation,
                               MultiplierFit multipliers, const CertificateOptions& opts) {
  opts.validate();
  Certificate c;
  c.multipliers = std::move(multipliers);
  c.cost = cost;
  c.dual_value = dual_value;
  c.gap = c.cost - c.dual_value;
  c.relative_gap = c.gap / (1.0 + std::abs(c.cost));
  c.constraint_violation = violation;
  c.h_scale = max_abs_row_sum(H);
  c.eta = opts.eta_rel;
  const Eigen::VectorXd diag = H.diagonal();
  const double floor = kDiagonalFloor * std::max(diag.maxCoeff(), 1e-300);
  c.shift = opts.eta_rel * diag.cwiseMax(floor);
  if (opts.compute_lambda_min) c.lambda_min = smallest_eigenvalue(H, opts.lanczos);

  SparseMatrixd shifted = H;
  shifted += SparseMatrixd(c.shift.asDiagonal());
  shifted.makeCompressed();
  Eigen::SimplicialLLT<SparseMatrixd> llt(shifted);
  c.factorization_psd = llt.info() == Eigen::Success;

  if (!c.factorization_psd) c.reason = "H(lambda) + eta diag(H) is not positive definite (Cholesky failed)";
  else if (c.constraint_violation > opts.feasibility_tol) c.reason = "candidate is not feasible";
  else if (c.relative_gap > opts.gap_tol) c.reason = "duality gap above tolerance";
  c.certified = c.reason.empty();
  return c;
}

Certificate certify(const Qcqp& q, const Eigen::VectorXd& x, const CertificateOptions& opts,
                    const std::optional<Eigen::VectorXd>& lambda) {
  opts.validate();
  q.validate();
  MultiplierFit fit = lambda ? given_multipliers(q, x, *lambda) : recover_multipliers(q, x);
  const SparseMatrixd H = q.lagrangian(fit.lambda);
  const double dual = q.dual_value(fit.lambda);
  return certify_lagrangian(H, q.cost(x), dual, q.constraint_violation(x), std::move(fit), opts);
}

}  // namespace core::certify
