// The rank-r relaxation F(X) = tr(X^T Q X) over St(d, r)^n (SE-Sync, Rosen et al., IJRR 2019,
// Problem 9 and Sec. 4.1.2; Holmes & Barfoot, RA-L 2023, Sec. IV), with
//   Lambda(X) = SymBlockDiag(Q X X^T)     grad F(X) = 2 (Q X - Lambda X) = 2 S X
//   Hess F(X)[V] = 2 P_X(Q V - Lambda V)  (P_X: projection onto the tangent space),
// and the preconditioner V -> P_X((Q + lambda I)^-1 V), solved through K + diag(0, lambda I) (the
// lower-right block of its inverse is (Q + lambda I)^-1): SE-Sync's regularised Cholesky
// preconditioner, with lambda = ||C||_inf / max_condition.
#pragma once
#include <Eigen/Dense>

#include "slam/data_matrix.hpp"
#include "slam/sparse_cholesky.hpp"
#include "slam/stiefel.hpp"

namespace core::slam {

class Relaxation {
 public:
  explicit Relaxation(const DataMatrix& Q, double max_condition = 1e6);

  // A point with its Q X and F(X): what a trial step evaluates and, when accepted, moves to, so that
  // an accepted step costs one product with Q, not two.
  struct Evaluated {
    Eigen::MatrixXd X, QX;
    double cost = 0.0;
  };
  Evaluated evaluate(Eigen::MatrixXd X) const;

  // Sets the point; caches Q X, Lambda(X) and F(X).
  void set_point(const Eigen::MatrixXd& X) { set_point(evaluate(X)); }
  void set_point(Evaluated point);
  const Eigen::MatrixXd& point() const { return X_; }
  double cost() const { return cost_; }
  const Eigen::MatrixXd& lambda() const { return Lambda_; }  // d x dn
  Eigen::MatrixXd gradient() const { return 2.0 * (QX_ - stiefel::block_multiply(Lambda_, X_)); }
  Eigen::MatrixXd hessian(const Eigen::MatrixXd& V) const;
  Eigen::MatrixXd precondition(const Eigen::MatrixXd& V) const;
  double cost_at(const Eigen::MatrixXd& X) const { return Q_.cost(X); }
  const DataMatrix& data() const { return Q_; }
  int d() const { return Q_.d(); }

 private:
  const DataMatrix& Q_;
  SparseCholesky preconditioner_;
  Eigen::MatrixXd X_, QX_, Lambda_;
  double cost_ = 0.0;
};

}  // namespace core::slam
