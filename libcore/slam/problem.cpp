// Cost of a configuration and gauge fixing (see problem.hpp).
#include "slam/problem.hpp"

#include <Eigen/SVD>

#include <cmath>

namespace core::slam {

double evaluate_cost(const Problem& p, const Estimate& x) {
  const int d = p.d;
  double cost = 0.0;
  for (const PoseEdge& e : p.pose_edges) {
    const auto Ri = x.R.middleCols(d * e.i, d), Rj = x.R.middleCols(d * e.j, d);
    cost += e.kappa * (Rj - Ri * e.R).squaredNorm();
    cost += e.tau * (x.t.col(e.j) - x.t.col(e.i) - Ri * e.t).squaredNorm();
  }
  for (const LandmarkEdge& e : p.landmark_edges)
    cost += e.tau * (x.m.col(e.landmark) - x.t.col(e.pose) - x.R.middleCols(d * e.pose, d) * e.y).squaredNorm();
  return cost;
}

Eigen::MatrixXd project_to_rotation(const Eigen::MatrixXd& A) {
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::MatrixXd U = svd.matrixU();
  if ((U * svd.matrixV().transpose()).determinant() < 0) U.col(U.cols() - 1) *= -1.0;
  return U * svd.matrixV().transpose();
}

Eigen::Matrix2d rotation_2d(double theta) {
  Eigen::Matrix2d R;
  R << std::cos(theta), -std::sin(theta), std::sin(theta), std::cos(theta);
  return R;
}

Estimate anchor_first_pose(const Estimate& x) {
  const int d = static_cast<int>(x.R.rows());
  const Eigen::MatrixXd R0t = x.R.leftCols(d).transpose();
  const Eigen::VectorXd t0 = x.t.col(0);
  Estimate y;
  y.R = R0t * x.R;
  y.t = R0t * (x.t.colwise() - t0);
  y.m = x.m.cols() ? Eigen::MatrixXd(R0t * (x.m.colwise() - t0)) : Eigen::MatrixXd(d, 0);
  return y;
}

}  // namespace core::slam
