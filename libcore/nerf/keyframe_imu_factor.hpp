// The IMU factor between two frames of the mapping window (extension 2 in mapping, with
// `mapping.refine_poses`): the samples between frame i (earlier) and frame j are preintegrated
// (imu_preintegration.hpp) and the pair of poses is scored by the rotation and position residuals of
// Forster et al. 2017, eq. 45,
//   r_R = Log(Delta R(b)^T R_i^T R_j),  r_p = R_i^T (p_j - p_i - v_i dt - g dt^2 / 2) - Delta p(b),
// with the velocity v_i and the bias b the tracker's estimates held fixed; the cost is
// weight * r^T information r / 2. Gradients are with respect to left rotation increments
// (R <- Exp(d) R) and translations of both poses, as the mapping window's Adam steps them.
#pragma once
#include <Eigen/Core>

#include "nerf/imu_preintegration.hpp"

namespace core::nerf {

struct PoseGradient {
  Vec3 rotation = Vec3::Zero(), translation = Vec3::Zero();
};

class KeyframeImuFactor {
 public:
  using Mat6 = Eigen::Matrix<double, 6, 6>;
  KeyframeImuFactor(int i, int j, ImuPreintegration preintegration, const ImuBias& bias, const Vec3& velocity_i,
                    const Mat6& information, double weight)
      : i_(i), j_(j), pre_(std::move(preintegration)), bias_(bias), v_i_(velocity_i), information_(information),
        weight_(weight) {}
  int first() const { return i_; }   // window entry of the earlier frame
  int second() const { return j_; }  // window entry of the later frame
  // (r_R, r_p) for the two poses.
  Eigen::Matrix<double, 6, 1> residual(const Pose& pose_i, const Pose& pose_j) const;
  // The cost; adds its gradient to g_i and g_j when given.
  double cost(const Pose& pose_i, const Pose& pose_j, PoseGradient* g_i, PoseGradient* g_j) const;

 private:
  int i_, j_;
  ImuPreintegration pre_;
  ImuBias bias_;
  Vec3 v_i_;
  Mat6 information_;
  double weight_;
};

}  // namespace core::nerf
