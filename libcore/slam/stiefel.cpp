// Product-of-Stiefel operations (see stiefel.hpp).
#include "slam/stiefel.hpp"

#include <Eigen/Eigenvalues>

#include "common/rng.hpp"

namespace core::slam::stiefel {

Eigen::MatrixXd sym_block_diag(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, int d) {
  const int n = static_cast<int>(A.rows()) / d;
  Eigen::MatrixXd D(d, d * n);
  for (int i = 0; i < n; ++i) {
    const Eigen::MatrixXd P = A.middleRows(d * i, d) * B.middleRows(d * i, d).transpose();
    D.middleCols(d * i, d) = 0.5 * (P + P.transpose());
  }
  return D;
}

Eigen::MatrixXd block_multiply(const Eigen::MatrixXd& D, const Eigen::MatrixXd& V) {
  const int d = static_cast<int>(D.rows()), n = static_cast<int>(D.cols()) / d;
  Eigen::MatrixXd out(V.rows(), V.cols());
  for (int i = 0; i < n; ++i) out.middleRows(d * i, d).noalias() = D.middleCols(d * i, d) * V.middleRows(d * i, d);
  return out;
}

Eigen::MatrixXd project(const Eigen::MatrixXd& X, const Eigen::MatrixXd& Z, int d) {
  return Z - block_multiply(sym_block_diag(Z, X, d), X);
}

Eigen::MatrixXd retract(const Eigen::MatrixXd& X, const Eigen::MatrixXd& V, int d) {
  const int n = static_cast<int>(X.rows()) / d;
  Eigen::MatrixXd out(X.rows(), X.cols());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es;
  for (int i = 0; i < n; ++i) {
    const Eigen::MatrixXd A = X.middleRows(d * i, d) + V.middleRows(d * i, d);
    es.compute(A * A.transpose());
    const Eigen::MatrixXd inv_sqrt =
        es.eigenvectors() * es.eigenvalues().cwiseSqrt().cwiseInverse().asDiagonal() * es.eigenvectors().transpose();
    out.middleRows(d * i, d).noalias() = inv_sqrt * A;
  }
  return out;
}

Eigen::MatrixXd random_point(int n, int d, int r, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd Z(d * n, r);
  for (int k = 0; k < Z.size(); ++k) Z.data()[k] = rng.normal();
  return retract(Eigen::MatrixXd::Zero(d * n, r), Z, d);
}

}  // namespace core::slam::stiefel
