// A quadratically constrained quadratic program in a lifted vector x in R^n:
//   minimise  x^T Q x   s.t.  x^T A_0 x = 1  (the homogenising constraint),
//                             x^T A_i x = b_i (i = 1..m),
// with symmetric Q, A_i stored dense or sparse (SymMatrix). Its Lagrangian matrix is
// H(lambda) = Q - lambda_0 A_0 - sum_i lambda_i A_i and its dual function value
// d(lambda) = lambda_0 + sum_i lambda_i b_i whenever H(lambda) >= 0: for every feasible x,
// x^T Q x = x^T H x + d(lambda) >= d(lambda). The Shor relaxation replaces x x^T by X >= 0.
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include <string>
#include <variant>
#include <vector>

#include "certify/sdp_problem.hpp"

namespace core::certify {

using SparseMatrixd = Eigen::SparseMatrix<double>;

// A symmetric matrix kept in the storage it was given in (dense or sparse).
class SymMatrix {
 public:
  SymMatrix() : m_(Eigen::MatrixXd()) {}
  SymMatrix(Eigen::MatrixXd dense) : m_(std::move(dense)) {}  // NOLINT: implicit by design
  SymMatrix(SparseMatrixd sparse) : m_(std::move(sparse)) {}  // NOLINT
  int rows() const;
  int cols() const;
  bool is_sparse() const { return std::holds_alternative<SparseMatrixd>(m_); }
  double quad(const Eigen::VectorXd& x) const;             // x^T M x
  Eigen::VectorXd apply(const Eigen::VectorXd& x) const;   // M x
  Eigen::MatrixXd dense() const;
  SparseMatrixd sparse() const;
  double frobenius_norm() const;
  bool all_finite() const;
  double asymmetry() const;  // max |M_ij - M_ji|
  // Appends alpha * M as triplets (both triangles).
  void append_triplets(std::vector<Eigen::Triplet<double>>& out, double alpha) const;
  // Appends the upper triangle of M to block 0 of an SDP matrix.
  void append_upper(SdpMatrix& out) const;

 private:
  std::variant<Eigen::MatrixXd, SparseMatrixd> m_;
};

struct QcqpConstraint {
  SymMatrix A;
  double b = 0.0;
  std::string name;  // for messages and reports
};

struct Qcqp {
  SymMatrix Q;
  SymMatrix A0;
  std::vector<QcqpConstraint> constraints;

  int dim() const { return Q.rows(); }
  int num_multipliers() const { return 1 + static_cast<int>(constraints.size()); }  // lambda_0..m
  // Throws DataError naming the matrix: square, equal sizes, finite, symmetric (to 1e-12 relative).
  void validate() const;

  double cost(const Eigen::VectorXd& x) const { return Q.quad(x); }
  // max over the constraints (A_0 included) of |x^T A_i x - b_i|.
  double constraint_violation(const Eigen::VectorXd& x) const;
  // H(lambda) with lambda = (lambda_0, lambda_1..m).
  SparseMatrixd lagrangian(const Eigen::VectorXd& lambda) const;
  double dual_value(const Eigen::VectorXd& lambda) const;
};

// The Shor relaxation min <Q,X> s.t. <A_0,X> = 1, <A_i,X> = b_i, X >= 0 (one dense block of size
// n; constraint 0 is A_0). Its dual variables y are the multipliers lambda of the Lagrangian.
SdpProblem shor_relaxation(const Qcqp& qcqp);

}  // namespace core::certify
