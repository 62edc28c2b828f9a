// Continuous-time queries of an estimated trajectory: the posterior mean of the motion prior between
// two states. Prior cv (white-noise-on-acceleration GP, Barfoot, Tong, Sarkka RSS 2014, eq. (14)):
// x(tau) = Lambda x_n + Psi x_{n+1}, Psi = Q(tau - t_n) Phi(t_{n+1} - tau)^T Q(dt)^-1,
// Lambda = Phi(tau - t_n) - Psi Phi(dt), Q(s) = [[s^3/3, s^2/2], [s^2/2, s]] per axis; outside the
// states, constant-velocity extrapolation. Priors zv and none: linear interpolation (the
// Brownian-motion posterior mean), held constant outside.
#pragma once
#include <Eigen/Dense>

#include <filesystem>
#include <string>
#include <vector>

#include "rangeloc/dataset.hpp"
#include "rangeloc/problem.hpp"

namespace core::rangeloc {

// Positions (d x Q) at the query times; `states` must have velocities for prior cv.
Eigen::MatrixXd interpolate_positions(const Trajectory& states, Prior prior, const std::vector<double>& query);

// Query times for continuous-time output, from a CSV whose column `t` (or whose only column) lists
// them in any order (DataError FILE:LINE for a bad field) ...
std::vector<double> read_query_times(const std::filesystem::path& times_file);
// ... or the grid t_first, t_first + dt, ... up to t_last of `states` (dt > 0).
std::vector<double> query_grid(const Trajectory& states, double dt);

// The trajectory's positions at `times` (velocities left empty), for write_trajectory.
Trajectory query_trajectory(const Trajectory& states, Prior prior, const std::vector<double>& times);

// Root-mean-square position error of `states` against the ground truth at its own times.
// axes: how many leading coordinates count (2: the horizontal x-y error of a 3-D trajectory).
double rmse(const Trajectory& states, Prior prior, const Trajectory& groundtruth, int axes = -1);

}  // namespace core::rangeloc
