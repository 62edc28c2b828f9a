#include "nerf/keyframe_imu_factor.hpp"

namespace core::nerf {

Eigen::Matrix<double, 6, 1> KeyframeImuFactor::residual(const Pose& pi, const Pose& pj) const {
  const double dt = pre_.dt();
  Eigen::Matrix<double, 6, 1> r;
  r.head<3>() = so3_log(pre_.delta_R(bias_).transpose() * pi.R.transpose() * pj.R);
  r.tail<3>() = pi.R.transpose() * (pj.t - pi.t - v_i_ * dt - 0.5 * kGravity * dt * dt) - pre_.delta_p(bias_);
  return r;
}

double KeyframeImuFactor::cost(const Pose& pi, const Pose& pj, PoseGradient* g_i, PoseGradient* g_j) const {
  const Eigen::Matrix<double, 6, 1> r = residual(pi, pj);
  const Eigen::Matrix<double, 6, 1> Lr = weight_ * (information_ * r);
  if (g_i || g_j) {
    // Left increments: R_j <- Exp(d) R_j moves r_R by Jr^-1(r_R) R_j^T d, R_i <- Exp(d) R_i by the
    // negative of that; R_i^T <- R_i^T Exp(-d) moves r_p by R_i^T hat(D) d with D the bracket of r_p.
    const double dt = pre_.dt();
    const Vec3 D = pj.t - pi.t - v_i_ * dt - 0.5 * kGravity * dt * dt;
    const Mat3 JR = so3_right_jacobian_inverse(r.head<3>()) * pj.R.transpose();
    const Vec3 g_rot_j = JR.transpose() * Lr.head<3>();
    const Vec3 g_trans_j = pi.R * Lr.tail<3>();
    if (g_j) {
      g_j->rotation += g_rot_j;
      g_j->translation += g_trans_j;
    }
    if (g_i) {
      g_i->rotation += -g_rot_j + (pi.R.transpose() * hat(D)).transpose() * Lr.tail<3>();
      g_i->translation -= g_trans_j;
    }
  }
  return 0.5 * r.dot(Lr);
}

}  // namespace core::nerf
