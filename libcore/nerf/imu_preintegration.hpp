// IMU preintegration on the manifold (Forster, Carlone, Dellaert, Scaramuzza, "On-Manifold Preintegration
// for Real-Time Visual-Inertial Odometry", IEEE T-RO 2017). Between two frames i and j the gyroscope and
// accelerometer samples (piecewise constant over each sample interval dt) are summed into
//   Delta R_ij = prod_k Exp((w_k - b_g) dt)                                       (eq. 33)
//   Delta v_ij = sum_k Delta R_ik (a_k - b_a) dt
//   Delta p_ij = sum_k [Delta v_ik dt + 1/2 Delta R_ik (a_k - b_a) dt^2]
// independent of the state at i. The 9x9 covariance of (delta phi, delta v, delta p) is propagated
// sample by sample, Sigma_{k+1} = A_k Sigma_k A_k^T + B_k Sigma_eta B_k^T (eq. 63, Appendix A), and the
// Jacobians with respect to the biases are accumulated (Appendix B) so that a bias change delta b
// corrects the deltas to first order (eq. 44):
//   Delta R(b) = Delta R Exp(dR/db_g delta b_g), Delta v(b) = Delta v + dv/db_g delta b_g + dv/db_a delta b_a, ...
// The state at j follows from the state at i (eq. 35): R_j = R_i Delta R, v_j = v_i + g dt_ij + R_i Delta v,
// p_j = p_i + v_i dt_ij + 1/2 g dt_ij^2 + R_i Delta p; the residuals r_R, r_v, r_p of eq. 45 measure how
// far an estimated pair of states is from that. The IMU frame is the camera frame (as `synth` writes it).
#pragma once
#include <Eigen/Core>

#include <filesystem>
#include <vector>

#include "nerf/se3.hpp"

namespace core::nerf {

using Mat9 = Eigen::Matrix<double, 9, 9>;
using Vec9 = Eigen::Matrix<double, 9, 1>;

inline const Vec3 kGravity(0.0, 0.0, -9.81);

struct ImuSample {
  double timestamp;
  Vec3 gyro, accel;  // measured angular rate (rad/s) and specific force (m/s^2) in the IMU frame
};

struct ImuBias {
  Vec3 gyro = Vec3::Zero(), accel = Vec3::Zero();
};

// Discrete white noise of one sample (standard deviations, as `synth` draws them).
struct ImuNoise {
  double gyro = 2.4e-3, accel = 2.8e-2;
};

class ImuPreintegration {
 public:
  ImuPreintegration(const ImuBias& bias, const ImuNoise& noise) : bias_(bias), noise_(noise) {}
  // Adds one measurement held constant for dt seconds.
  void integrate(const Vec3& gyro, const Vec3& accel, double dt);
  // Integrates the samples over [t0, t1] (each sample holds until the next one).
  void integrate(const std::vector<ImuSample>& samples, double t0, double t1);

  double dt() const { return dt_; }
  const ImuBias& bias() const { return bias_; }  // the linearisation point
  const Mat9& covariance() const { return cov_; }
  // Deltas corrected to first order for the bias b (eq. 44).
  Mat3 delta_R(const ImuBias& b) const;
  Vec3 delta_v(const ImuBias& b) const;
  Vec3 delta_p(const ImuBias& b) const;
  const Mat3& dR_dbg() const { return dR_dbg_; }
  const Mat3& dv_dbg() const { return dv_dbg_; }
  const Mat3& dv_dba() const { return dv_dba_; }
  const Mat3& dp_dbg() const { return dp_dbg_; }
  const Mat3& dp_dba() const { return dp_dba_; }

  // The state at j from the state at i (eq. 35).
  void predict(const Pose& pose_i, const Vec3& v_i, const ImuBias& b, Pose& pose_j, Vec3& v_j) const;
  // (r_R, r_v, r_p) of eq. 45 for states i and j.
  Vec9 residual(const Pose& pose_i, const Vec3& v_i, const Pose& pose_j, const Vec3& v_j, const ImuBias& b) const;

 private:
  ImuBias bias_;
  ImuNoise noise_;
  double dt_ = 0;
  Mat3 dR_ = Mat3::Identity();
  Vec3 dv_ = Vec3::Zero(), dp_ = Vec3::Zero();
  Mat9 cov_ = Mat9::Zero();
  Mat3 dR_dbg_ = Mat3::Zero(), dv_dbg_ = Mat3::Zero(), dv_dba_ = Mat3::Zero(), dp_dbg_ = Mat3::Zero(),
       dp_dba_ = Mat3::Zero();
};

// imu.txt of a dataset: `timestamp wx wy wz ax ay az` per line, '#' comments; increasing timestamps.
// InputMissingError when absent, DataError (naming file and line) when malformed.
std::vector<ImuSample> read_imu_file(const std::filesystem::path& path);

}  // namespace core::nerf
