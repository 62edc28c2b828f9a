// The range-only localization problem of "Safe and Smooth" (Dümbgen, Holmes, Barfoot, RA-L 2023,
// eq. (4)-(6)) with the normalisation range-certify reports:
//   cost = (1/E) sum_(m,n) (r_mn^2 - ||a_m - p_n||^2)^2 / sigma_d^2 + (1/N) sum_{n<N} u_n^T Q_n^-1 u_n
// prior cv: state theta_n = [p_n; v_n], u_n = theta_{n+1} - Phi_n theta_n, Phi_n = [[I, dt I], [0, I]],
//           Q_n^-1 = [[12/dt^3, -6/dt^2], [-6/dt^2, 4/dt]] (x) I / sigma_a^2 (white-noise-on-acceleration GP);
// prior zv: theta_n = p_n, u_n = p_{n+1} - p_n, Q^-1 = I / sigma_a^2; prior none: no prior term.
// The state vector theta stacks theta_1..theta_N (k = 2d or d entries each).
#pragma once
#include <Eigen/Dense>

#include <string>
#include <vector>

#include "rangeloc/block_tridiagonal.hpp"
#include "rangeloc/dataset.hpp"

namespace core::rangeloc {

enum class Prior { cv, zv, none };
Prior parse_prior(const std::string& name);  // cv | zv | none
const char* to_string(Prior prior);

struct CostParts {
  double data = 0.0, prior = 0.0;
  double total() const { return data + prior; }
};

class Problem {
 public:
  Problem(const Dataset& data, Prior prior, double sigma_d, double sigma_a);

  int dim() const { return d_; }
  Prior prior() const { return prior_; }
  int states() const { return static_cast<int>(times_.size()); }
  int state_size() const { return prior_ == Prior::cv ? 2 * d_ : d_; }
  int num_measurements() const { return static_cast<int>(measurements_.size()); }
  int variables() const { return states() * state_size(); }
  const std::vector<double>& times() const { return times_; }
  const Eigen::MatrixXd& anchors() const { return anchors_; }
  const std::vector<Measurement>& measurements() const { return measurements_; }
  // Measurements of state n: indices [first(n), first(n+1)).
  int first(int n) const { return first_[n]; }
  double data_weight() const { return data_weight_; }  // 1 / (E sigma_d^2)

  // Prior between states n and n+1 (n < N-1): transition Phi and weight W = Q_n^-1 / N (k x k).
  void prior_blocks(int n, SmallMatrix& phi, SmallMatrix& weight) const;

  CostParts cost(const Eigen::VectorXd& theta) const;
  Eigen::VectorXd gradient(const Eigen::VectorXd& theta) const;
  // Gauss-Newton linearisation: A = J^T W J (block tridiagonal) and b = J^T W e, so that the
  // gradient is 2 b and cost(theta + delta) ~ cost + 2 b^T delta + delta^T A delta.
  CostParts linearize(const Eigen::VectorXd& theta, BlockTridiagonal& a, Eigen::VectorXd& b) const;

  Eigen::VectorXd state_vector(const Trajectory& trajectory) const;  // at the problem's times
  Trajectory trajectory(const Eigen::VectorXd& theta) const;
  Eigen::VectorXd positions(const Eigen::VectorXd& theta, int n) const { return theta.segment(n * state_size(), d_); }

 private:
  int d_;
  Prior prior_;
  Eigen::MatrixXd anchors_;
  std::vector<double> times_;
  std::vector<Measurement> measurements_;
  std::vector<int> first_;
  double data_weight_, sigma_a_;
};

}  // namespace core::rangeloc
