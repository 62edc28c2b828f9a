// The rank-r relaxation's cost, Riemannian gradient, Hessian and preconditioner (see relaxation.hpp).
#include "slam/relaxation.hpp"

#include <utility>

#include "certify/lanczos.hpp"
#include "common/errors.hpp"

namespace core::slam {

Relaxation::Relaxation(const DataMatrix& Q, double max_condition) : Q_(Q), preconditioner_(Q.cholesky()) {
  const double lambda = certify::max_abs_row_sum(Q.C()) / max_condition;
  const SparseMatrixd regularised =
      Q.K_plus_rotation_blocks(lambda * Eigen::MatrixXd::Identity(Q.d(), Q.d()).replicate(1, Q.num_poses()));
  preconditioner_.analyze(regularised);
  if (!preconditioner_.factorize(regularised))
    throw DataError("the regularised data matrix K + lambda I is not positive definite (non-PSD weights?)");
}

Relaxation::Evaluated Relaxation::evaluate(Eigen::MatrixXd X) const {
  Evaluated e;
  e.QX = Q_.multiply(X);
  e.cost = (X.array() * e.QX.array()).sum();  // tr(X^T Q X)
  e.X = std::move(X);
  return e;
}

void Relaxation::set_point(Evaluated point) {
  X_ = std::move(point.X);
  QX_ = std::move(point.QX);
  cost_ = point.cost;
  Lambda_ = stiefel::sym_block_diag(QX_, X_, Q_.d());
}

Eigen::MatrixXd Relaxation::hessian(const Eigen::MatrixXd& V) const {
  return stiefel::project(X_, 2.0 * (Q_.multiply(V) - stiefel::block_multiply(Lambda_, V)), Q_.d());
}

Eigen::MatrixXd Relaxation::precondition(const Eigen::MatrixXd& V) const {
  const int nt = Q_.translation_dim();
  Eigen::MatrixXd rhs = Eigen::MatrixXd::Zero(nt + V.rows(), V.cols());
  rhs.bottomRows(V.rows()) = V;
  return stiefel::project(X_, preconditioner_.solve(rhs).bottomRows(V.rows()), Q_.d());
}

}  // namespace core::slam
