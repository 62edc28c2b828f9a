#include "rangeloc/block_tridiagonal.hpp"

namespace core::rangeloc {

BlockTridiagonal::BlockTridiagonal(int blocks, int block_size)
    : n_(blocks),
      k_(block_size),
      diag_(static_cast<std::size_t>(blocks) * block_size * block_size, 0.0),
      upper_(static_cast<std::size_t>(blocks > 0 ? blocks - 1 : 0) * block_size * block_size, 0.0) {}

void BlockTridiagonal::set_zero() {
  std::fill(diag_.begin(), diag_.end(), 0.0);
  std::fill(upper_.begin(), upper_.end(), 0.0);
}

Eigen::VectorXd BlockTridiagonal::multiply(const Eigen::VectorXd& x) const {
  Eigen::VectorXd y(rows());
  for (int n = 0; n < n_; ++n) {
    auto yn = y.segment(n * k_, k_);
    yn.noalias() = diag(n) * x.segment(n * k_, k_);
    if (n > 0) yn.noalias() += upper(n - 1).transpose() * x.segment((n - 1) * k_, k_);
    if (n + 1 < n_) yn.noalias() += upper(n) * x.segment((n + 1) * k_, k_);
  }
  return y;
}

Eigen::MatrixXd BlockTridiagonal::dense() const {
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(rows(), rows());
  for (int n = 0; n < n_; ++n) {
    a.block(n * k_, n * k_, k_, k_) = diag(n);
    if (n + 1 < n_) {
      a.block(n * k_, (n + 1) * k_, k_, k_) = upper(n);
      a.block((n + 1) * k_, n * k_, k_, k_) = upper(n).transpose();
    }
  }
  return a;
}

bool BlockCholesky::compute(const BlockTridiagonal& a) {
  const int n_blocks = a.blocks(), k = a.block_size();
  factor_ = BlockTridiagonal(n_blocks, k);
  SmallMatrix d(k, k);
  for (int n = 0; n < n_blocks; ++n) {
    d = a.diag(n);
    if (n > 0) d.noalias() -= factor_.upper(n - 1).transpose() * factor_.upper(n - 1);
    Eigen::LLT<SmallMatrix> llt(d);
    if (llt.info() != Eigen::Success) return false;
    factor_.diag(n) = llt.matrixL();
    // L_{n+1,n} = A_{n+1,n} L_nn^-T, stored transposed: L_nn^-1 A_{n,n+1}.
    if (n + 1 < n_blocks) factor_.upper(n) = llt.matrixL().solve(a.upper(n));
  }
  return true;
}

Eigen::VectorXd BlockCholesky::solve(const Eigen::VectorXd& b) const {
  const int n_blocks = factor_.blocks(), k = factor_.block_size();
  Eigen::VectorXd y = b;
  for (int n = 0; n < n_blocks; ++n) {  // L y = b
    auto yn = y.segment(n * k, k);
    if (n > 0) yn.noalias() -= factor_.upper(n - 1).transpose() * y.segment((n - 1) * k, k);
    factor_.diag(n).triangularView<Eigen::Lower>().solveInPlace(yn);
  }
  for (int n = n_blocks - 1; n >= 0; --n) {  // L^T x = y
    auto xn = y.segment(n * k, k);
    if (n + 1 < n_blocks) xn.noalias() -= factor_.upper(n) * y.segment((n + 1) * k, k);
    factor_.diag(n).transpose().triangularView<Eigen::Upper>().solveInPlace(xn);
  }
  return y;
}

}  // namespace core::rangeloc
