// Certificate of global optimality for range-only localization ("Safe and Smooth", RA-L 2023,
// Sec. IV-B/C). The lifted vector y = [h; theta_1; z_1; ...; theta_N; z_N] with z_n = ||p_n||^2 and
// the homogenising h^2 = 1 turns the cost into a quadratic y^T Q y (each range residual
// r^2 - ||a||^2 h + 2 a^T p_n - z_n is linear in y) under the constraints y^T A_0 y = h^2 = 1 and
// y^T A_n y = h z_n - ||p_n||^2 = 0. The Lagrangian matrix is
//   H = Q - rho A_0 - sum_n lambda_n A_n,
// an arrowhead: block tridiagonal in the states plus the dense row and column of h.
// - Multipliers in closed form, O(E): H y = 0 at a stationary point gives, from the z_n rows,
//   lambda_n = 2 (Q y)_{z_n} = -(2/(E sigma_d^2)) sum_m e_mn, and from the h row rho = (Q y)_h - sum_n lambda_n z_n / 2;
//   then rho = y^T Q y = cost (the self-check).
// - Decision, O(N): block LDL^T of the Jacobi-scaled H with h eliminated last. H >= 0 (and so no
//   feasible y costs less than rho: cost(y') = y'^T H y' + rho) exactly when every pivot of the
//   state part is positive and the final Schur complement of h is >= 0 (it is 0 when H y = 0).
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include <string>

#include "certify/qcqp.hpp"
#include "rangeloc/problem.hpp"

namespace core::rangeloc {

struct Multipliers {
  double rho = 0.0;        // of the homogenising constraint: the dual value
  Eigen::VectorXd lambda;  // one per state, of z_n = ||p_n||^2
  // Sum of the magnitudes of the terms that make up rho: its rounding error is ~1e-16 of this, which
  // far exceeds 1e-16 rho when positions are far from the origin (b_mn and z_n ~ ||p||^2).
  double rho_scale = 0.0;
};

Multipliers closed_form_multipliers(const Problem& problem, const Eigen::VectorXd& theta);

struct CertificateOptions {
  double pivot_tol = 1e-9;         // smallest relative (Jacobi-scaled) pivot that counts as positive
  double stationarity_tol = 1e-6;  // ||S H y|| / ||S^-1 y|| of a stationary point
  double rho_tol = 1e-6;           // |rho - cost| / (cost + rho_scale): agreement to the rounding of rho
};

struct Certificate {
  bool certified = false;
  double min_pivot = 0.0;       // smallest relative pivot of the state part (the certificate value)
  int min_pivot_state = -1;     // the state where it occurs
  double schur_h = 0.0;         // final (relative) pivot of h: ~0 at a stationary point
  double stationarity = 0.0;    // relative ||H y||
  double rho = 0.0, cost = 0.0;
  double rho_gap = 0.0;         // |rho - cost| / cost
  double rho_gap_rounding = 0.0;  // |rho - cost| / (cost + rho_scale), what rho_tol bounds
  std::string reason;           // why not certified (empty when certified)
};

Certificate certify_solution(const Problem& problem, const Eigen::VectorXd& theta, const Multipliers& multipliers,
                             const CertificateOptions& options = {});

// The lifting, for tests and the SDP cross-check: y, Q, H (all of size 1 + N (k+1)) and the QCQP.
Eigen::VectorXd lift(const Problem& problem, const Eigen::VectorXd& theta);
Eigen::SparseMatrix<double> lifted_cost_matrix(const Problem& problem);
Eigen::SparseMatrix<double> certificate_matrix(const Problem& problem, const Multipliers& multipliers);
certify::Qcqp lifted_qcqp(const Problem& problem);

}  // namespace core::rangeloc
