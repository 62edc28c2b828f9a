// Closed-form TLS and its certificate (see tls.hpp for the derivation).
#include "linefit/tls.hpp"

#include <cmath>

#include "common/errors.hpp"

namespace core::linefit {

Eigen::Matrix3d tls_cost_matrix(const Points& pts) {
  Eigen::Matrix3d Q = Eigen::Matrix3d::Zero();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Eigen::Vector3d q(pts.x[i], pts.y[i], -1.0);
    Q.noalias() += q * q.transpose();
  }
  return Q / static_cast<double>(pts.size());
}

Eigen::Vector2d centroid(const Points& pts) {
  const double n = static_cast<double>(pts.size());
  Eigen::Vector2d m = Eigen::Vector2d::Zero();
  for (std::size_t i = 0; i < pts.size(); ++i) m += Eigen::Vector2d(pts.x[i], pts.y[i]);
  m /= n;
  Eigen::Vector2d correction = Eigen::Vector2d::Zero();
  for (std::size_t i = 0; i < pts.size(); ++i) correction += Eigen::Vector2d(pts.x[i] - m.x(), pts.y[i] - m.y());
  return m + correction / n;
}

Points translate(const Points& pts, const Eigen::Vector2d& shift) {
  Points out;
  out.x.reserve(pts.size());
  out.y.reserve(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    out.x.push_back(pts.x[i] + shift.x());
    out.y.push_back(pts.y[i] + shift.y());
  }
  return out;
}

Line translate(const Line& line, const Eigen::Vector2d& shift) {
  return {line.a, line.b, line.c + line.a * shift.x() + line.b * shift.y()};
}

Line fit_tls(const Points& pts) {
  const Eigen::Vector2d m = centroid(pts);
  Eigen::Matrix2d W = Eigen::Matrix2d::Zero();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Eigen::Vector2d d(pts.x[i] - m.x(), pts.y[i] - m.y());
    W.noalias() += d * d.transpose();
  }
  W /= static_cast<double>(pts.size());
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> eig(W);
  const Eigen::Vector2d n = eig.eigenvectors().col(0);  // eigenvalues ascend
  return normalise_line(n.x(), n.y(), n.dot(m));
}

Line normalise_line(double a, double b, double c) {
  const double norm = std::hypot(a, b);
  if (!(norm > 0) || !std::isfinite(norm) || !std::isfinite(c))
    throw DataError("line (" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) +
                    ") is not a line: need finite a, b, c with (a, b) != (0, 0)");
  // Fix the sign so that the same line always prints the same way.
  const double s = (a < 0 || (a == 0 && b < 0)) ? -1.0 : 1.0;
  return {s * a / norm, s * b / norm, s * c / norm};
}

TlsCertificate certify_tls(const Eigen::Matrix3d& Q, const Line& line, double rel_tol) {
  const Eigen::Vector3d x(line.a, line.b, line.c);
  const Eigen::Matrix3d A = Eigen::Vector3d(1, 1, 0).asDiagonal();
  TlsCertificate cert;
  cert.cost = x.dot(Q * x);
  const Eigen::Matrix3d H = Q - cert.cost * A;
  cert.lambda_min = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(H, Eigen::EigenvaluesOnly).eigenvalues()(0);
  cert.stationarity = (H * x).norm();
  // Dual: Q - lambda A >= 0  <=>  Schur complement Q_11 - Q_12 Q_12^T / Q_22 - lambda I >= 0 (Q_22 = 1).
  const Eigen::Matrix2d W = Q.topLeftCorner<2, 2>() - Q.topRightCorner<2, 1>() * Q.bottomLeftCorner<1, 2>() / Q(2, 2);
  cert.dual = Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d>(W, Eigen::EigenvaluesOnly).eigenvalues()(0);
  cert.tol = rel_tol * Q.norm();
  cert.certified = cert.lambda_min >= -cert.tol;
  return cert;
}

std::vector<double> residuals(const Points& pts, const Line& line) {
  std::vector<double> r(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) r[i] = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
  return r;
}

}  // namespace core::linefit
