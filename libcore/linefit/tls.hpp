// Plain total least squares as a QCQP ("A Fine Line: Total Least-Squares Line Fitting as QCQP
// Optimization", Sec. 2): with x = (a, b, c),
//   minimise f(x) = (1/N) sum_i (a x_i + b y_i - c)^2 = x^T Q x   subject to  x^T A x = a^2 + b^2 = 1,
//   Q = (1/N) sum_i q_i q_i^T, q_i = (x_i, y_i, -1),  A = diag(1, 1, 0).
// Closed form: c = a mx + b my (centroid) and (a, b) the eigenvector of the smallest eigenvalue of
// the centred scatter W = (1/N) sum (p_i - m)(p_i - m)^T; the optimal cost is lambda_min(W).
// Lagrangian dual: d = max lambda s.t. Q - lambda A >= 0, and d = lambda_min(W) (Schur complement on
// Q's last entry, which is 1), so strong duality holds.
// Certificate of any feasible candidate x^: with lambda^ = f(x^), H = Q - lambda^ A >= 0 implies
// x^T Q x >= lambda^ for every feasible x, i.e. x^ is globally optimal; if H has a negative
// eigenvalue, some feasible line is strictly better.
#pragma once
#include <Eigen/Dense>

#include "linefit/points.hpp"

namespace core::linefit {

struct Line {
  double a = 1, b = 0, c = 0;  // a x + b y = c with a^2 + b^2 = 1
};

// Q of the QCQP above (3x3, float64). Its entries grow with the square of the coordinates, and
// x^T Q x cancels them down to the cost: far from the origin (|x| ~ 1e6 and beyond) the cost, the
// dual and the certificate lose every digit. Use it on centred points (centroid, translate below).
Eigen::Matrix3d tls_cost_matrix(const Points& pts);

// The centroid, with a second pass that corrects the rounding of the first (accurate far from 0).
Eigen::Vector2d centroid(const Points& pts);
// The points moved by `shift` (p + shift).
Points translate(const Points& pts, const Eigen::Vector2d& shift);
// The same line in the coordinates of points moved by `shift`: a x + b y = c becomes
// a x' + b y' = c + a shift_x + b shift_y. The QCQP, its relaxation and every certificate are
// invariant under this change of variables (it leaves a^2 + b^2 alone).
Line translate(const Line& line, const Eigen::Vector2d& shift);

// The global TLS optimum in closed form.
Line fit_tls(const Points& pts);

// Normalises (a, b) to unit length (scaling c with them). DataError when a = b = 0 or non-finite.
Line normalise_line(double a, double b, double c);

struct TlsCertificate {
  double cost = 0;          // f(x^): mean squared orthogonal distance
  double dual = 0;          // Lagrangian dual value lambda_min(W), a lower bound on every cost
  double lambda_min = 0;    // smallest eigenvalue of H = Q - f(x^) A
  double stationarity = 0;  // ||H x^||, 0 at a stationary point (the KKT condition)
  double tol = 0;           // certified when lambda_min >= -tol (tol = rel_tol * ||Q||_F)
  bool certified = false;
  double gap() const { return cost - dual; }
};

// Certifies a candidate line against the point set; rel_tol scales with ||Q||_F.
TlsCertificate certify_tls(const Eigen::Matrix3d& Q, const Line& line, double rel_tol);

// Mean squared orthogonal distance and per-point signed residuals a x_i + b y_i - c.
std::vector<double> residuals(const Points& pts, const Line& line);

}  // namespace core::linefit
