// Trajectory error metrics of the TUM RGB-D benchmark (Sturm et al. 2012, Sec. VI):
// ATE: RMSE of position differences after the least-squares alignment of the estimate to the ground
// truth (Umeyama 1991, eqs. 38-42: rotation, translation and optionally scale);
// RPE: the error of relative motions over `delta` associated poses, E_i = (Q_i^-1 Q_{i+d})^-1 (P_i^-1 P_{i+d}),
// reported as the RMSE of its translation (metres) and of its rotation angle (degrees).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "nerf/trajectory.hpp"

namespace core::nerf {

// x -> s R x + t
struct Similarity {
  Mat3 R = Mat3::Identity();
  Vec3 t = Vec3::Zero();
  double s = 1.0;
  Vec3 operator*(const Vec3& x) const { return s * (R * x) + t; }
};

// The similarity (or rigid motion when with_scale is false) minimising sum |dst_i - (s R src_i + t)|^2.
// DataError when fewer than 3 points or all points coincide.
Similarity umeyama_alignment(const std::vector<Vec3>& src, const std::vector<Vec3>& dst, bool with_scale);

struct EvalOptions {
  double max_dt = 0.02;         // association tolerance in seconds
  std::string align = "se3";    // se3 | sim3 | none
  int rpe_delta = 1;            // RPE over pairs this many associated poses apart
};

struct TrajectoryError {
  std::size_t pairs = 0;
  double ate_rmse = 0, ate_mean = 0, ate_median = 0, ate_max = 0;
  double rpe_trans = 0, rpe_rot_deg = 0;  // RMSE over the relative motions
  Similarity alignment;                   // applied to the estimate
  nlohmann::json to_json() const;
};

// DataError when fewer than 3 poses associate (the message gives both time ranges).
TrajectoryError evaluate_trajectory(const Trajectory& estimate, const Trajectory& groundtruth,
                                    const EvalOptions& options = {});

}  // namespace core::nerf
