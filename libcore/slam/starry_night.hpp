// UTIAS "Starry Night" (Barfoot, State Estimation for Robotics, assignment dataset 3) as a landmark
// g2o problem for `slam-certify starry`. Conventions of the dataset (checked against its ground truth:
// stereo reprojection error ~4 px with them, ~3000 px with the opposite sign): C_vk_i = exp(-theta^)
// (inertial to vehicle), p_c = C_c_v (p_v - rho_v_c_v), u_l = fu x/z + cu, v_l = fv y/z + cv,
// u_r = fu (x - b)/z + cu. So with R_k = C_vk_i^T and t_k = r_i_vk_i:
//  - odometry k-1 -> k from the velocities at k-1 over T = t_k - t_{k-1}: R~ = exp(-T w^)^T, t~ = T v,
//    information diag(1/(T^2 v_var), 1/(T^2 w_var)) (so tau, kappa follow the reader's rules);
//  - landmark edges: the stereo point triangulated in the camera (z = fu b / (u_l - u_r)) and moved to
//    the vehicle frame, information the inverse of its first-order covariance from the pixel variances
//    y_var (u_l, v_l, u_r), so that tau = 3 / tr(covariance); zero or negative disparities are skipped.
// Vertices: poses by dead reckoning from the first step's ground truth, landmarks placed from their
// first sighting on the dead-reckoned pose. The ground truth of the same steps can be written in TUM format for trajectory errors.
#pragma once
#include <filesystem>
#include <string>

#include "slam/g2o.hpp"

namespace core::slam {

struct StarryNightProblem {
  std::string g2o;        // the problem as g2o text
  std::string truth_tum;  // ground-truth poses of the same steps, TUM format (index = step)
  int steps = 0, landmarks = 0, observations = 0, skipped_observations = 0;
};

// Steps [first, last) of the dataset in `folder` (last = 0: to the end).
StarryNightProblem starry_night_problem(const std::filesystem::path& folder, int first, int last);

}  // namespace core::slam
