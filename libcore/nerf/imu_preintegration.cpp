#include "nerf/imu_preintegration.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "io/input.hpp"

namespace core::nerf {

void ImuPreintegration::integrate(const Vec3& gyro, const Vec3& accel, double dt) {
  if (!(dt > 0)) return;
  const Vec3 a = accel - bias_.accel;
  const Vec3 phi = (gyro - bias_.gyro) * dt;
  const Mat3 dRk = so3_exp(phi), Jr = so3_right_jacobian(phi), Ra = hat(a);
  // Covariance of (delta phi, delta v, delta p): A Sigma A^T + B Sigma_eta B^T (Forster et al., eq. 63).
  Mat9 A = Mat9::Identity();
  A.block<3, 3>(0, 0) = dRk.transpose();
  A.block<3, 3>(3, 0) = -dR_ * Ra * dt;
  A.block<3, 3>(6, 0) = -0.5 * dR_ * Ra * dt * dt;
  A.block<3, 3>(6, 3) = Mat3::Identity() * dt;
  Eigen::Matrix<double, 9, 3> Bg = Eigen::Matrix<double, 9, 3>::Zero(), Ba = Eigen::Matrix<double, 9, 3>::Zero();
  Bg.block<3, 3>(0, 0) = Jr * dt;
  Ba.block<3, 3>(3, 0) = dR_ * dt;
  Ba.block<3, 3>(6, 0) = 0.5 * dR_ * dt * dt;
  cov_ = A * cov_ * A.transpose() + noise_.gyro * noise_.gyro * Bg * Bg.transpose() +
         noise_.accel * noise_.accel * Ba * Ba.transpose();
  // Bias Jacobians (Appendix B), each from the values at sample k.
  dp_dba_ += dv_dba_ * dt - 0.5 * dR_ * dt * dt;
  dp_dbg_ += dv_dbg_ * dt - 0.5 * dR_ * Ra * dR_dbg_ * dt * dt;
  dv_dba_ -= dR_ * dt;
  dv_dbg_ -= dR_ * Ra * dR_dbg_ * dt;
  dR_dbg_ = dRk.transpose() * dR_dbg_ - Jr * dt;
  // Deltas (eq. 33).
  dp_ += dv_ * dt + 0.5 * dR_ * a * dt * dt;
  dv_ += dR_ * a * dt;
  dR_ = dR_ * dRk;
  dt_ += dt;
}

void ImuPreintegration::integrate(const std::vector<ImuSample>& s, double t0, double t1) {
  if (s.empty() || !(t1 > t0)) return;
  auto it = std::upper_bound(s.begin(), s.end(), t0, [](double t, const ImuSample& m) { return t < m.timestamp; });
  std::size_t k = it == s.begin() ? 0 : std::size_t(it - s.begin()) - 1;  // the sample holding at t0
  double start = t0;
  while (start < t1) {
    const double end = k + 1 < s.size() ? std::min(t1, s[k + 1].timestamp) : t1;
    integrate(s[k].gyro, s[k].accel, end - start);
    start = end;
    if (k + 1 < s.size()) ++k;
  }
}

Mat3 ImuPreintegration::delta_R(const ImuBias& b) const { return dR_ * so3_exp(dR_dbg_ * (b.gyro - bias_.gyro)); }

Vec3 ImuPreintegration::delta_v(const ImuBias& b) const {
  return dv_ + dv_dbg_ * (b.gyro - bias_.gyro) + dv_dba_ * (b.accel - bias_.accel);
}

Vec3 ImuPreintegration::delta_p(const ImuBias& b) const {
  return dp_ + dp_dbg_ * (b.gyro - bias_.gyro) + dp_dba_ * (b.accel - bias_.accel);
}

void ImuPreintegration::predict(const Pose& pi, const Vec3& vi, const ImuBias& b, Pose& pj, Vec3& vj) const {
  pj.R = pi.R * delta_R(b);
  vj = vi + kGravity * dt_ + pi.R * delta_v(b);
  pj.t = pi.t + vi * dt_ + 0.5 * kGravity * dt_ * dt_ + pi.R * delta_p(b);
}

Vec9 ImuPreintegration::residual(const Pose& pi, const Vec3& vi, const Pose& pj, const Vec3& vj,
                                 const ImuBias& b) const {
  Vec9 r;
  r.segment<3>(0) = so3_log(delta_R(b).transpose() * pi.R.transpose() * pj.R);
  r.segment<3>(3) = pi.R.transpose() * (vj - vi - kGravity * dt_) - delta_v(b);
  r.segment<3>(6) = pi.R.transpose() * (pj.t - pi.t - vi * dt_ - 0.5 * kGravity * dt_ * dt_) - delta_p(b);
  return r;
}

std::vector<ImuSample> read_imu_file(const std::filesystem::path& path) {
  std::ifstream in = io::open_input(path);
  std::vector<ImuSample> out;
  std::string line;
  for (std::size_t lineno = 1; std::getline(in, line); ++lineno) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream ss(line);
    ImuSample m{};
    std::string extra;
    bool ok = bool(ss >> m.timestamp >> m.gyro.x() >> m.gyro.y() >> m.gyro.z() >> m.accel.x() >> m.accel.y() >>
                   m.accel.z()) &&
              !(ss >> extra) && std::isfinite(m.timestamp) && m.gyro.allFinite() && m.accel.allFinite();
    if (!ok)
      throw DataError(path.string() + ":" + std::to_string(lineno) + ": expected 'timestamp wx wy wz ax ay az', got " +
                      io::quote_excerpt(line));
    if (!out.empty() && !(m.timestamp > out.back().timestamp))
      throw DataError(path.string() + ":" + std::to_string(lineno) + ": timestamp does not increase");
    out.push_back(m);
  }
  if (out.empty()) throw DataError(path.string() + ": no IMU samples");
  return out;
}

}  // namespace core::nerf
