// Solving the Shor relaxation of a QCQP and judging its tightness: the eigenvalues of the SDP
// solution X (rank one when lambda_2 / lambda_1 is small), the rank-one candidate
// x = sqrt(lambda_1) v_1 rescaled to x^T A_0 x = 1, its cost and constraint violation, and the gap
// between the SDP value and the best known local cost. The relaxation is called tight only when
// the SDP is solved to optimality, X is numerically rank one, the extracted x is feasible and its
// cost matches the SDP value (relative gap below gap_tol).
#pragma once
#include <Eigen/Dense>

#include <optional>

#include "certify/qcqp.hpp"
#include "certify/sdp_solver.hpp"

namespace core::certify {

struct RelaxationOptions {
  SdpOptions sdp;
  double rank_tol = 1e-5;         // lambda_2 / lambda_1 below this: rank one
  double gap_tol = 1e-5;          // relative gap (f(x) - sdp value) / (1 + |f(x)|)
  double feasibility_tol = 1e-5;  // max constraint violation of the extracted x
  void validate() const;
};

struct RelaxationResult {
  SdpResult sdp;
  double sdp_value = 0.0;          // <Q, X>, a lower bound on the QCQP optimum when optimal
  Eigen::VectorXd eigenvalues;     // of X, descending
  double eigen_ratio = 0.0;        // lambda_2 / lambda_1
  int numerical_rank = 0;          // eigenvalues > rank_tol * lambda_1
  Eigen::VectorXd x;               // extracted rank-one candidate (sign: first nonzero of A_0 x > 0)
  double extracted_cost = 0.0;     // f(x)
  double extracted_violation = 0.0;
  double relative_gap = 0.0;       // (f(x) - sdp_value) / (1 + |f(x)|)
  std::optional<double> local_gap;  // best local cost - sdp_value, when a local cost was given
  bool tight = false;
};

RelaxationResult solve_relaxation(const Qcqp& qcqp, const RelaxationOptions& options = {},
                                  std::optional<double> best_local_cost = std::nullopt);

}  // namespace core::certify
