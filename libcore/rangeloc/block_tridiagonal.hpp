// Symmetric block-tridiagonal matrices (N blocks of size k) stored as flat arrays, and their block
// Cholesky factorisation: the normal equations of range-only localization with a Gauss-Markov prior
// are of this shape, so one Gauss-Newton step costs O(N k^3) time and O(N k^2) memory.
#pragma once
#include <Eigen/Dense>

#include <vector>

namespace core::rangeloc {

// Small dense blocks (k <= 6 for the states, k + 1 <= 7 with the lifted z_n) without heap allocation.
using SmallMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor, 7, 7>;
using SmallVector = Eigen::Matrix<double, Eigen::Dynamic, 1, Eigen::ColMajor, 7, 1>;

class BlockTridiagonal {
 public:
  BlockTridiagonal() = default;
  BlockTridiagonal(int blocks, int block_size);
  int blocks() const { return n_; }
  int block_size() const { return k_; }
  int rows() const { return n_ * k_; }
  // Diagonal block (n, n) and upper block (n, n+1); the lower block (n+1, n) is its transpose.
  Eigen::Map<Eigen::MatrixXd> diag(int n) { return {diag_.data() + static_cast<std::size_t>(n) * k_ * k_, k_, k_}; }
  Eigen::Map<const Eigen::MatrixXd> diag(int n) const { return {diag_.data() + static_cast<std::size_t>(n) * k_ * k_, k_, k_}; }
  Eigen::Map<Eigen::MatrixXd> upper(int n) { return {upper_.data() + static_cast<std::size_t>(n) * k_ * k_, k_, k_}; }
  Eigen::Map<const Eigen::MatrixXd> upper(int n) const { return {upper_.data() + static_cast<std::size_t>(n) * k_ * k_, k_, k_}; }
  void set_zero();
  Eigen::VectorXd multiply(const Eigen::VectorXd& x) const;
  Eigen::MatrixXd dense() const;  // for tests and small problems

 private:
  int n_ = 0, k_ = 0;
  std::vector<double> diag_, upper_;
};

// A = L L^T with block-bidiagonal L (diagonal blocks lower triangular). compute() returns false when
// a pivot block is not positive definite.
class BlockCholesky {
 public:
  bool compute(const BlockTridiagonal& a);
  Eigen::VectorXd solve(const Eigen::VectorXd& b) const;

 private:
  BlockTridiagonal factor_;  // diag: L_nn (lower), upper(n): L_{n+1,n}^T
};

}  // namespace core::rangeloc
