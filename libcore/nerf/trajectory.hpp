// Camera trajectories in the TUM RGB-D benchmark's text format (Sturm et al. 2012): one line per pose,
// `timestamp tx ty tz qx qy qz qw`, the camera-to-world motion; `#` lines are comments. Association of
// two trajectories by nearest timestamps (the benchmark's associate.py: greedy by time difference).
#pragma once
#include <cstddef>
#include <filesystem>
#include <utility>
#include <vector>

#include "nerf/se3.hpp"

namespace core::nerf {

struct StampedPose {
  double timestamp = 0;
  Pose pose;
};
using Trajectory = std::vector<StampedPose>;

// Reads a TUM trajectory. InputMissingError when the file cannot be opened; DataError naming FILE:LINE
// for a line without 8 numbers, a non-finite value, a quaternion far from unit length (|q| not in
// [0.9, 1.1]) or timestamps that do not increase; an empty file is a DataError too.
Trajectory read_tum_trajectory(const std::filesystem::path& path);

// Writes a TUM trajectory (17 significant digits) through a temporary file and rename.
void write_tum_trajectory(const std::filesystem::path& path, const Trajectory& trajectory);
// The same text (for atomic writers that own the file).
std::string format_tum_trajectory(const Trajectory& trajectory);

// Index pairs (i in a, j in b) with |a_i.t - b_j.t| <= max_dt, each index used at most once, chosen
// greedily by increasing time difference, returned in increasing i.
std::vector<std::pair<std::size_t, std::size_t>> associate(const Trajectory& a, const Trajectory& b,
                                                           double max_dt);

}  // namespace core::nerf
