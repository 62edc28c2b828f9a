#include "rangeloc/starloc.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/errors.hpp"
#include "io/csv.hpp"

namespace core::rangeloc {

namespace fs = std::filesystem;

namespace {

std::size_t column(const io::NumericTable& t, const std::string& name, const fs::path& file) {
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == name) return c;
  throw DataError(file.string() + ":1: no column '" + name + "' in the header");
}

// An id field as an integer: DataError naming FILE:LINE unless it is a whole number of at most 15 digits (a
// double holds those exactly; a larger one would not even convert to an integer).
long long integer_id(const io::NumericTable& t, std::size_t r, std::size_t c, const fs::path& file, const char* what) {
  const double v = t.at(r, c);
  if (v != std::floor(v) || std::abs(v) > 1e15)
    throw DataError(file.string() + ":" + std::to_string(t.source_lines[r]) + ": " + what + " is not an integer id");
  return static_cast<long long>(v);
}

// id -> position of one uwb_markers_*.csv (header ",x,y,z": the id column has no name).
std::map<long long, Eigen::Vector3d> read_markers(const fs::path& path) {
  const io::NumericTable t = io::read_numeric_csv(path, 4);
  std::map<long long, Eigen::Vector3d> out;
  for (std::size_t r = 0; r < t.rows; ++r) out[integer_id(t, r, 0, path, "anchor id")] = {t.at(r, 1), t.at(r, 2), t.at(r, 3)};
  return out;
}

std::string declared_landmarks(const fs::path& folder, const std::string& run) {
  const fs::path params = folder / "dataset_params.json";
  std::ifstream in(params);
  if (!in) throw InputMissingError("cannot open " + params.string() + " (the STAR-loc folder's run table)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw DataError(params.string() + ": not valid JSON: " + e.what());
  }
  // A list of runs, each an object whose "name" and "landmarks" are strings (other entries cannot be this run).
  if (!j.is_array()) throw DataError(params.string() + ": expected a JSON array of runs ({\"name\", \"landmarks\"})");
  for (const auto& entry : j) {
    if (!entry.is_object()) continue;
    const auto name = entry.find("name");
    if (name == entry.end() || !name->is_string() || name->get<std::string>() != run) continue;
    const auto landmarks = entry.find("landmarks");
    if (landmarks == entry.end() || !landmarks->is_string())
      throw DataError(params.string() + ": run '" + run + "' has no \"landmarks\" string");
    return landmarks->get<std::string>();
  }
  throw DataError(params.string() + ": no run named '" + run + "'");
}

}  // namespace

Dataset read_starloc(const std::string& spec, const StarlocOptions& o, StarlocInfo* info) {
  const fs::path run_dir = fs::path(spec).lexically_normal();
  const std::string run = run_dir.filename().string();
  const fs::path folder = run_dir.parent_path();
  const fs::path uwb_path = run_dir / "uwb.csv";
  if (!fs::exists(uwb_path)) throw InputMissingError("STAR-loc run '" + spec + "': " + uwb_path.string() + " does not exist");
  const io::NumericTable t = io::read_numeric_csv(uwb_path);
  const std::size_t c_time = column(t, "time_s", uwb_path), c_range = column(t, "range", uwb_path),
                    c_from = column(t, "from_id", uwb_path), c_to = column(t, "to_id", uwb_path),
                    c_x = column(t, "tag_pos_x", uwb_path), c_y = column(t, "tag_pos_y", uwb_path),
                    c_z = column(t, "tag_pos_z", uwb_path);
  const auto tag_position = [&](std::size_t r) { return Eigen::Vector3d(t.at(r, c_x), t.at(r, c_y), t.at(r, c_z)); };
  const auto anchor_of = [&](std::size_t r) { return integer_id(t, r, c_to, uwb_path, "to_id"); };

  // The run's anchor file: the one dataset_params.json names, unless it lacks anchors the run ranges to.
  std::set<long long> used;
  for (std::size_t r = 0; r < t.rows; ++r)
    if (t.at(r, c_from) == o.tag) used.insert(anchor_of(r));
  if (used.empty()) throw DataError(uwb_path.string() + ": no rows of tag (from_id) " + std::to_string(o.tag));
  const std::string declared = declared_landmarks(folder, run);
  std::vector<std::string> candidates{declared};
  for (const char* v : {"v1", "v2", "v3"})
    if (v != declared) candidates.push_back(v);
  std::map<long long, Eigen::Vector3d> markers;
  std::string chosen;
  for (const auto& v : candidates) {
    const fs::path p = folder / ("uwb_markers_" + v + ".csv");
    if (!fs::exists(p)) continue;
    auto m = read_markers(p);
    bool all = true;
    for (long long id : used) all = all && m.count(id);
    if (all) {
      markers = std::move(m);
      chosen = p.string();
      break;
    }
  }
  if (chosen.empty())
    throw DataError(uwb_path.string() + ": no uwb_markers_*.csv in " + folder.string() + " holds every anchor the run ranges to");

  Dataset data;
  data.source = "starloc:" + spec;
  data.dim = 3;
  std::map<long long, int> index;
  for (long long id : used) {
    index[id] = static_cast<int>(data.anchor_ids.size());
    data.anchor_ids.push_back(id);
  }
  data.anchors.resize(3, used.size());
  for (const auto& [id, j] : index) data.anchors.col(j) = markers[id];

  // Rows of the tag inside the time range, grouped onto states.
  std::vector<double> gt_t;
  std::vector<Eigen::Vector3d> gt_p;
  std::vector<std::size_t> rows;
  for (std::size_t r = 0; r < t.rows; ++r) {
    const double time = t.at(r, c_time);
    if (t.at(r, c_from) != o.tag) continue;
    if (o.time_range.size() == 2 && (time < o.time_range[0] || time > o.time_range[1])) continue;
    if (!rows.empty() && time < t.at(rows.back(), c_time))
      throw DataError(uwb_path.string() + ":" + std::to_string(t.source_lines[r]) + ": time before the previous row's");
    if (t.at(r, c_range) < 0)
      throw DataError(uwb_path.string() + ":" + std::to_string(t.source_lines[r]) + ": negative range");
    rows.push_back(r);
  }
  if (rows.empty()) throw DataError(uwb_path.string() + ": no rows of tag " + std::to_string(o.tag) + " in the time range");

  std::vector<double> bias(used.size(), 0.0);
  std::vector<int> count(used.size(), 0);
  if (o.calibrate) {
    for (std::size_t r : rows) {
      const int j = index[anchor_of(r)];
      bias[j] += t.at(r, c_range) - (data.anchors.col(j) - tag_position(r)).norm();
      ++count[j];
    }
    for (std::size_t j = 0; j < bias.size(); ++j) bias[j] /= std::max(1, count[j]);
  }

  std::set<int> in_group;
  double group_start = 0.0, group_sum = 0.0;
  int group_size = 0;
  auto close_group = [&] {
    if (group_size > 0) data.times.push_back(group_sum / group_size);
    in_group.clear();
    group_sum = 0.0;
    group_size = 0;
  };
  for (std::size_t r : rows) {
    const double time = t.at(r, c_time);
    const int j = index[anchor_of(r)];
    if (group_size == 0 || time - group_start > o.group_window || in_group.count(j)) {
      close_group();
      if (!data.times.empty() && time <= data.times.back())
        throw DataError(uwb_path.string() + ":" + std::to_string(t.source_lines[r]) + ": a second range to anchor " +
                        std::to_string(data.anchor_ids[j]) + " at the time of the previous state");
      group_start = time;
    }
    in_group.insert(j);
    group_sum += time;
    ++group_size;
    data.measurements.push_back({static_cast<int>(data.times.size()), j, std::max(0.0, t.at(r, c_range) - bias[j])});
    if (gt_t.empty() || time > gt_t.back()) {
      gt_t.push_back(time);
      gt_p.push_back(tag_position(r));
    }
  }
  close_group();
  data.groundtruth.times = gt_t;
  data.groundtruth.positions.resize(3, gt_t.size());
  for (std::size_t i = 0; i < gt_p.size(); ++i) data.groundtruth.positions.col(i) = gt_p[i];
  data.groundtruth.fill_velocities();
  check_measurements(data, uwb_path.string());
  if (info) {
    info->anchors_file = chosen;
    if (chosen.find("uwb_markers_" + declared) == std::string::npos)
      info->anchors_note = "dataset_params.json names landmarks " + declared +
                           ", which lack anchors this run ranges to; used " + chosen;
    info->biases = bias;
  }
  return data;
}

}  // namespace core::rangeloc
