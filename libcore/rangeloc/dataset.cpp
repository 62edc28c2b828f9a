#include "rangeloc/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

#include "common/errors.hpp"
#include "io/csv.hpp"

namespace core::rangeloc {

namespace fs = std::filesystem;

static std::string at_line(const fs::path& file, std::size_t line) {
  return file.string() + ":" + std::to_string(line);
}

void Trajectory::fill_velocities() {
  const int n = size(), d = dim();
  velocities = Eigen::MatrixXd::Zero(d, n);
  if (n < 2) return;
  for (int i = 0; i < n; ++i) {
    const int lo = std::max(0, i - 1), hi = std::min(n - 1, i + 1);
    velocities.col(i) = (positions.col(hi) - positions.col(lo)) / (times[hi] - times[lo]);
  }
}

Trajectory read_trajectory(const fs::path& path, int dim) {
  const io::NumericTable t = io::read_numeric_csv(path);
  if (dim == 0) {
    // t,x,y | t,x,y,z | t,x,y,vx,vy | t,x,y,z,vx,vy,vz
    if (t.cols == 3 || t.cols == 5) dim = 2;
    else if (t.cols == 4 || t.cols == 7) dim = 3;
    else
      throw DataError(at_line(path, t.source_lines.front()) + ": " + std::to_string(t.cols) +
                      " columns; a trajectory has 3 (t,x,y), 4 (t,x,y,z), 5 (t,x,y,vx,vy) or 7 (t,x,y,z,vx,vy,vz)");
  }
  const std::size_t with_v = 1 + 2 * dim, without_v = 1 + dim;
  if (t.cols != with_v && t.cols != without_v)
    throw DataError(at_line(path, t.source_lines.front()) + ": expected " + std::to_string(without_v) + " (t,x,y" +
                    (dim == 3 ? ",z" : "") + ") or " + std::to_string(with_v) + " columns (with velocities), got " +
                    std::to_string(t.cols));
  Trajectory traj;
  traj.times.resize(t.rows);
  traj.positions.resize(dim, t.rows);
  if (t.cols == with_v) traj.velocities.resize(dim, t.rows);
  for (std::size_t r = 0; r < t.rows; ++r) {
    traj.times[r] = t.at(r, 0);
    if (r > 0 && !(traj.times[r] > traj.times[r - 1]))
      throw DataError(at_line(path, t.source_lines[r]) + ": time " + std::to_string(traj.times[r]) +
                      (traj.times[r] == traj.times[r - 1] ? " repeats the previous row's" : " is before the previous row's") +
                      " (times must be strictly increasing)");
    for (int k = 0; k < dim; ++k) traj.positions(k, r) = t.at(r, 1 + k);
    if (t.cols == with_v)
      for (int k = 0; k < dim; ++k) traj.velocities(k, r) = t.at(r, 1 + dim + k);
  }
  if (!traj.has_velocities()) traj.fill_velocities();
  return traj;
}

void write_trajectory(const Trajectory& traj, const fs::path& path) {
  const int d = traj.dim(), n = traj.size();
  const char* axes[] = {"x", "y", "z"};
  std::vector<std::string> cols{"t"};
  for (int k = 0; k < d; ++k) cols.push_back(axes[k]);
  if (traj.has_velocities())
    for (int k = 0; k < d; ++k) cols.push_back(std::string("v") + axes[k]);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(n) * cols.size());
  for (int i = 0; i < n; ++i) {
    values.push_back(traj.times[i]);
    for (int k = 0; k < d; ++k) values.push_back(traj.positions(k, i));
    if (traj.has_velocities())
      for (int k = 0; k < d; ++k) values.push_back(traj.velocities(k, i));
  }
  io::write_numeric_csv(path, cols, values, n, cols.size());
}

void check_measurements(const Dataset& data, const std::string& where) {
  std::set<int> seen;
  for (const auto& m : data.measurements) seen.insert(m.anchor);
  if (static_cast<int>(seen.size()) < data.dim + 1)
    throw DataError(where + ": only " + std::to_string(seen.size()) + " distinct anchors have ranges; " +
                    std::to_string(data.dim) + "-D localization needs at least " + std::to_string(data.dim + 1));
}

Dataset read_dataset(const fs::path& folder) {
  if (!fs::is_directory(folder))
    throw InputMissingError("dataset folder '" + folder.string() + "' does not exist (expected anchors.csv and ranges.csv in it)");
  Dataset data;
  data.source = folder.string();

  const fs::path anchors_path = folder / "anchors.csv";
  const io::NumericTable a = io::read_numeric_csv(anchors_path);
  if (a.cols != 3 && a.cols != 4)
    throw DataError(at_line(anchors_path, a.source_lines.front()) + ": expected 3 columns (id,x,y) or 4 (id,x,y,z), got " +
                    std::to_string(a.cols));
  data.dim = static_cast<int>(a.cols) - 1;
  data.anchors.resize(data.dim, a.rows);
  std::unordered_map<long long, int> anchor_index;
  for (std::size_t r = 0; r < a.rows; ++r) {
    const double id = a.at(r, 0);
    if (id != std::floor(id) || std::abs(id) > 1e15)
      throw DataError(at_line(anchors_path, a.source_lines[r]) + ": anchor id " + std::to_string(id) + " is not an integer");
    const auto key = static_cast<long long>(id);
    if (!anchor_index.emplace(key, static_cast<int>(r)).second)
      throw DataError(at_line(anchors_path, a.source_lines[r]) + ": anchor id " + std::to_string(key) + " appears twice");
    data.anchor_ids.push_back(key);
    for (int k = 0; k < data.dim; ++k) data.anchors(k, r) = a.at(r, 1 + k);
  }

  const fs::path ranges_path = folder / "ranges.csv";
  const io::NumericTable m = io::read_numeric_csv(ranges_path);
  if (m.cols != 3)
    throw DataError(at_line(ranges_path, m.source_lines.front()) + ": expected 3 columns (t,anchor,range), got " +
                    std::to_string(m.cols));
  std::set<int> anchors_at_time;
  for (std::size_t r = 0; r < m.rows; ++r) {
    const double t = m.at(r, 0), id = m.at(r, 1), range = m.at(r, 2);
    const std::string where = at_line(ranges_path, m.source_lines[r]);
    // An id that is no integer, or too large for one (ids are whole numbers of at most 15 digits), names no anchor.
    const bool integral = id == std::floor(id) && std::abs(id) <= 1e15;
    const auto it = integral ? anchor_index.find(static_cast<long long>(id)) : anchor_index.end();
    if (it == anchor_index.end())
      throw DataError(where + ": anchor " + std::to_string(id) + " is not in " + anchors_path.string());
    if (range < 0) throw DataError(where + ": negative range " + std::to_string(range));
    if (!data.times.empty() && t < data.times.back())
      throw DataError(where + ": time " + std::to_string(t) + " is before the previous row's (rows must be sorted by time)");
    if (data.times.empty() || t > data.times.back()) {
      data.times.push_back(t);
      anchors_at_time.clear();
    }
    if (!anchors_at_time.insert(it->second).second)
      throw DataError(where + ": a second range to anchor " + std::to_string(it->first) + " at time " + std::to_string(t) +
                      " (duplicate row)");
    data.measurements.push_back({data.num_states() - 1, it->second, range});
  }
  check_measurements(data, ranges_path.string());

  const fs::path gt_path = folder / "groundtruth.csv";
  if (fs::exists(gt_path)) data.groundtruth = read_trajectory(gt_path, data.dim);
  return data;
}

void write_anchors(const Dataset& data, const fs::path& path) {
  const int d = data.dim;
  const char* axes[] = {"x", "y", "z"};
  std::vector<std::string> cols{"id"};
  for (int k = 0; k < d; ++k) cols.push_back(axes[k]);
  std::vector<double> values;
  for (int j = 0; j < data.anchors.cols(); ++j) {
    values.push_back(static_cast<double>(data.anchor_ids[j]));
    for (int k = 0; k < d; ++k) values.push_back(data.anchors(k, j));
  }
  io::write_numeric_csv(path, cols, values, data.anchors.cols(), cols.size());
}

void write_dataset(const Dataset& data, const fs::path& folder) {
  fs::create_directories(folder);
  write_anchors(data, folder / "anchors.csv");
  std::vector<double> values;
  for (const auto& m : data.measurements)
    values.insert(values.end(), {data.times[m.state], static_cast<double>(data.anchor_ids[m.anchor]), m.range});
  io::write_numeric_csv(folder / "ranges.csv", {"t", "anchor", "range"}, values, data.measurements.size(), 3);
  if (data.has_groundtruth()) {
    Trajectory positions_only = data.groundtruth;
    positions_only.velocities.resize(0, 0);
    write_trajectory(positions_only, folder / "groundtruth.csv");
  }
}

}  // namespace core::rangeloc
