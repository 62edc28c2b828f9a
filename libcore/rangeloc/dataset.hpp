// Range-only localization data (range-certify): fixed anchors a_m in R^d, range measurements r_mn of a
// tag at times t_n, optional ground truth, and trajectories (estimates or candidates).
//
// A dataset folder holds anchors.csv (id,x,y[,z]), ranges.csv (t,anchor,range) and optionally
// groundtruth.csv (t,x,y[,z]). The states of the problem are the distinct times of ranges.csv
// (Dümbgen, Holmes, Barfoot, "Safe and Smooth", RA-L 2023, Sec. III). Bad content is a DataError
// naming FILE:LINE (exit 65), a missing file an InputMissingError (exit 66).
#pragma once
#include <Eigen/Dense>

#include <filesystem>
#include <string>
#include <vector>

namespace core::rangeloc {

struct Measurement {
  int state = 0;   // index n of the state time t_n
  int anchor = 0;  // column m of Dataset::anchors
  double range = 0.0;
};

// Positions (d x N) at strictly increasing times, with velocities (d x N) when known.
struct Trajectory {
  std::vector<double> times;
  Eigen::MatrixXd positions;
  Eigen::MatrixXd velocities;  // empty when unknown
  int dim() const { return static_cast<int>(positions.rows()); }
  int size() const { return static_cast<int>(times.size()); }
  bool has_velocities() const { return velocities.size() > 0; }
  // Velocities by finite differences (central inside, one-sided at the ends) when they are missing.
  void fill_velocities();
};

struct Dataset {
  std::string source;              // folder or starloc:... for messages
  int dim = 2;
  std::vector<long long> anchor_ids;
  Eigen::MatrixXd anchors;         // d x M
  std::vector<double> times;       // N distinct state times, increasing
  std::vector<Measurement> measurements;  // sorted by state
  Trajectory groundtruth;          // empty (size 0) when absent

  int num_states() const { return static_cast<int>(times.size()); }
  int num_measurements() const { return static_cast<int>(measurements.size()); }
  bool has_groundtruth() const { return groundtruth.size() > 0; }
};

// Reads a dataset folder. Throws InputMissingError (folder, anchors.csv or ranges.csv missing) or
// DataError: an unknown anchor id, a negative range, decreasing times, a repeated (t, anchor) pair,
// a duplicate anchor id, fewer than d+1 anchors seen, a wrong column count (each naming FILE:LINE).
Dataset read_dataset(const std::filesystem::path& folder);

// Writes anchors.csv, ranges.csv and (when present) groundtruth.csv into `folder` (created).
void write_dataset(const Dataset& data, const std::filesystem::path& folder);

// Writes only anchors.csv (id,x,y[,z]) to `path`.
void write_anchors(const Dataset& data, const std::filesystem::path& path);

// Checks the measurements of a dataset built in memory (at least d+1 anchors seen, ranges >= 0,
// states in range); `where` names the source in the DataError.
void check_measurements(const Dataset& data, const std::string& where);

// Reads t,x,y[,z][,vx,vy[,vz]] for dimension `dim` (0: from the column count, 3/5 -> 2-D, 4/7 -> 3-D):
// times strictly increasing (DataError FILE:LINE). Missing velocities are filled by finite differences.
Trajectory read_trajectory(const std::filesystem::path& path, int dim);
// Writes t,x,y[,z] and, when present, vx,vy[,vz].
void write_trajectory(const Trajectory& trajectory, const std::filesystem::path& path);

}  // namespace core::rangeloc
