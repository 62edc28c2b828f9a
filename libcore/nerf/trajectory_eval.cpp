#include "nerf/trajectory_eval.hpp"

#include <Eigen/SVD>

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"

namespace core::nerf {

Similarity umeyama_alignment(const std::vector<Vec3>& src, const std::vector<Vec3>& dst, bool with_scale) {
  const std::size_t n = src.size();
  if (n < 3 || dst.size() != n) throw DataError("alignment needs at least 3 corresponding positions");
  Vec3 ms = Vec3::Zero(), md = Vec3::Zero();
  for (std::size_t i = 0; i < n; ++i) {
    ms += src[i];
    md += dst[i];
  }
  ms /= double(n);
  md /= double(n);
  Mat3 cov = Mat3::Zero();
  double var_src = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cov += (dst[i] - md) * (src[i] - ms).transpose();
    var_src += (src[i] - ms).squaredNorm();
  }
  cov /= double(n);
  var_src /= double(n);
  if (!(var_src > 0)) throw DataError("alignment: all estimated positions coincide");
  Eigen::JacobiSVD<Mat3> svd(cov, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Mat3 S = Mat3::Identity();
  if (svd.matrixU().determinant() * svd.matrixV().determinant() < 0) S(2, 2) = -1;
  Similarity out;
  out.R = svd.matrixU() * S * svd.matrixV().transpose();
  out.s = with_scale ? (svd.singularValues().asDiagonal() * S).trace() / var_src : 1.0;
  out.t = md - out.s * (out.R * ms);
  return out;
}

static double rmse(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return v.empty() ? 0.0 : std::sqrt(s / double(v.size()));
}

TrajectoryError evaluate_trajectory(const Trajectory& estimate, const Trajectory& groundtruth,
                                    const EvalOptions& options) {
  const auto pairs = associate(estimate, groundtruth, options.max_dt);
  if (pairs.size() < 3)
    throw DataError("only " + std::to_string(pairs.size()) + " poses associate within " +
                    std::to_string(options.max_dt) + " s (estimate " + std::to_string(estimate.front().timestamp) +
                    ".." + std::to_string(estimate.back().timestamp) + ", ground truth " +
                    std::to_string(groundtruth.front().timestamp) + ".." +
                    std::to_string(groundtruth.back().timestamp) + "); at least 3 are needed");
  TrajectoryError e;
  e.pairs = pairs.size();
  std::vector<Vec3> src, dst;
  for (const auto& [i, j] : pairs) {
    src.push_back(estimate[i].pose.t);
    dst.push_back(groundtruth[j].pose.t);
  }
  if (options.align != "none") e.alignment = umeyama_alignment(src, dst, options.align == "sim3");
  std::vector<double> err;
  for (std::size_t k = 0; k < src.size(); ++k) err.push_back((e.alignment * src[k] - dst[k]).norm());
  e.ate_rmse = rmse(err);
  double sum = 0;
  for (double x : err) sum += x;
  e.ate_mean = sum / double(err.size());
  e.ate_max = *std::max_element(err.begin(), err.end());
  std::vector<double> sorted = err;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t m = sorted.size();
  e.ate_median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);

  // Relative motions are invariant to a rigid alignment; a similarity's scale applies to the estimate's
  // translations.
  std::vector<double> trans, rot;
  const std::size_t d = std::size_t(std::max(1, options.rpe_delta));
  for (std::size_t k = 0; k + d < pairs.size(); ++k) {
    Pose pe0 = estimate[pairs[k].first].pose, pe1 = estimate[pairs[k + d].first].pose;
    pe0.t *= e.alignment.s;
    pe1.t *= e.alignment.s;
    const Pose dg = groundtruth[pairs[k].second].pose.inverse() * groundtruth[pairs[k + d].second].pose;
    const Pose de = pe0.inverse() * pe1;
    const Pose err_k = dg.inverse() * de;
    trans.push_back(err_k.t.norm());
    rot.push_back(rotation_angle(err_k.R) * 180.0 / M_PI);
  }
  e.rpe_trans = rmse(trans);
  e.rpe_rot_deg = rmse(rot);
  return e;
}

nlohmann::json TrajectoryError::to_json() const {
  const Eigen::Quaterniond q(alignment.R);
  return {{"pairs", pairs},
          {"ate_rmse", ate_rmse},
          {"ate_mean", ate_mean},
          {"ate_median", ate_median},
          {"ate_max", ate_max},
          {"rpe_trans", rpe_trans},
          {"rpe_rot", rpe_rot_deg},
          {"alignment",
           {{"scale", alignment.s},
            {"t", {alignment.t.x(), alignment.t.y(), alignment.t.z()}},
            {"q_xyzw", {q.x(), q.y(), q.z(), q.w()}}}}};
}

}  // namespace core::nerf
