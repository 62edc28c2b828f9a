// Rigid motions and rotations on SO(3)/SE(3) (Sola et al., "A micro Lie theory", eqs. 143-145 and 155):
// the exponential and logarithm of SO(3), the hat operator, and a pose type (camera to world).
#pragma once
#include <Eigen/Core>
#include <Eigen/Geometry>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>

namespace core::nerf {

using Vec3 = Eigen::Vector3d;
using Mat3 = Eigen::Matrix3d;

inline Mat3 hat(const Vec3& v) {
  Mat3 m;
  m << 0, -v.z(), v.y(), v.z(), 0, -v.x(), -v.y(), v.x(), 0;
  return m;
}

// Exp: R^3 -> SO(3) (Rodrigues), exact to rounding for any angle, Taylor terms near 0.
inline Mat3 so3_exp(const Vec3& phi) {
  const double th2 = phi.squaredNorm(), th = std::sqrt(th2);
  double a, b;  // sin(th)/th, (1-cos(th))/th^2
  if (th < 1e-6) {
    a = 1.0 - th2 / 6.0;
    b = 0.5 - th2 / 24.0;
  } else {
    a = std::sin(th) / th;
    b = (1.0 - std::cos(th)) / th2;
  }
  const Mat3 K = hat(phi);
  return Mat3::Identity() + a * K + b * K * K;
}

// Log: SO(3) -> R^3, the rotation vector with angle in [0, pi].
inline Vec3 so3_log(const Mat3& R) {
  const Eigen::AngleAxisd aa(R);
  return aa.angle() * aa.axis();
}

// Right Jacobian of SO(3) and its inverse (Forster et al. 2017, eqs. 8 and 9).
inline Mat3 so3_right_jacobian(const Vec3& phi) {
  const double th2 = phi.squaredNorm(), th = std::sqrt(th2);
  const Mat3 K = hat(phi);
  if (th < 1e-6) return Mat3::Identity() - 0.5 * K + K * K / 6.0;
  return Mat3::Identity() - (1.0 - std::cos(th)) / th2 * K + (th - std::sin(th)) / (th2 * th) * K * K;
}
inline Mat3 so3_right_jacobian_inverse(const Vec3& phi) {
  const double th2 = phi.squaredNorm(), th = std::sqrt(th2);
  const Mat3 K = hat(phi);
  if (th < 1e-6) return Mat3::Identity() + 0.5 * K + K * K / 12.0;
  return Mat3::Identity() + 0.5 * K + (1.0 / th2 - (1.0 + std::cos(th)) / (2.0 * th * std::sin(th))) * K * K;
}

// A rigid motion x -> R x + t. For a camera: camera frame to world frame.
struct Pose {
  Mat3 R = Mat3::Identity();
  Vec3 t = Vec3::Zero();

  Vec3 operator*(const Vec3& x) const { return R * x + t; }
  Pose operator*(const Pose& o) const { return {R * o.R, R * o.t + t}; }
  Pose inverse() const { return {R.transpose(), -(R.transpose() * t)}; }
  Eigen::Quaterniond quaternion() const { return Eigen::Quaterniond(R).normalized(); }
  static Pose from_quaternion(const Eigen::Quaterniond& q, const Vec3& t) {
    return {q.normalized().toRotationMatrix(), t};
  }
};

// The rotation nearest to M in the Frobenius norm: U V^T of M's SVD, with the sign of the last singular
// direction chosen so that det = +1. Composing poses as the constant-velocity prediction does,
// R_n R_{n-1}^T R_n, uses R^T as the inverse, so a deviation E from orthonormality grows as
// E_{n+1} = 2 E_n + E_{n-1} (by 1 + sqrt(2) per frame): rounding reaches percent level within 40 frames
// unless each prediction is projected back onto SO(3).
inline Mat3 nearest_rotation(const Mat3& M) {
  const Eigen::JacobiSVD<Mat3> svd(M, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Mat3 U = svd.matrixU();
  if ((U * svd.matrixV().transpose()).determinant() < 0) U.col(2) = -U.col(2);
  return U * svd.matrixV().transpose();
}

// Rotation angle of R in radians, in [0, pi].
inline double rotation_angle(const Mat3& R) {
  return std::acos(std::clamp((R.trace() - 1.0) * 0.5, -1.0, 1.0));
}

}  // namespace core::nerf
