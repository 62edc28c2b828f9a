#include "nerf/trajectory.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "io/input.hpp"

namespace core::nerf {

Trajectory read_tum_trajectory(const std::filesystem::path& path) {
  std::ifstream in = io::open_input(path);
  Trajectory out;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path.string() + ":" + std::to_string(lineno);
    std::istringstream ss(line);
    std::vector<std::string> fields;
    for (std::string f; ss >> f;) fields.push_back(f);
    if (fields.size() != 8)
      throw DataError(where + ": expected 8 numbers 'timestamp tx ty tz qx qy qz qw', got " +
                      std::to_string(fields.size()) + " fields in " + io::quote_excerpt(line));
    double v[8];
    for (int k = 0; k < 8; ++k) {
      char* end = nullptr;
      v[k] = std::strtod(fields[k].c_str(), &end);
      if (end == fields[k].c_str() || *end != '\0')
        throw DataError(where + ": field " + std::to_string(k + 1) + " is not a number: " + io::quote_excerpt(fields[k]));
      if (!std::isfinite(v[k])) throw DataError(where + ": non-finite value in " + io::quote_excerpt(line));
    }
    const Eigen::Quaterniond q(v[7], v[4], v[5], v[6]);
    const double n = q.norm();
    if (!(n > 0.9 && n < 1.1))
      throw DataError(where + ": quaternion (qx qy qz qw) has norm " + std::to_string(n) + ", not 1");
    if (!out.empty() && !(v[0] > out.back().timestamp))
      throw DataError(where + ": timestamp " + std::to_string(v[0]) + " does not increase");
    out.push_back({v[0], Pose::from_quaternion(q, Vec3(v[1], v[2], v[3]))});
  }
  if (in.bad()) throw IoError(path.string() + ": read failed");
  if (out.empty()) throw DataError(path.string() + ": no poses (empty trajectory)");
  return out;
}

std::string format_tum_trajectory(const Trajectory& trajectory) {
  std::ostringstream os;
  os.precision(17);
  os << "# timestamp tx ty tz qx qy qz qw\n";
  for (const auto& sp : trajectory) {
    const Eigen::Quaterniond q = sp.pose.quaternion();
    os << sp.timestamp << ' ' << sp.pose.t.x() << ' ' << sp.pose.t.y() << ' ' << sp.pose.t.z() << ' ' << q.x() << ' '
       << q.y() << ' ' << q.z() << ' ' << q.w() << '\n';
  }
  return os.str();
}

void write_tum_trajectory(const std::filesystem::path& path, const Trajectory& trajectory) {
  write_file_atomic(path, format_tum_trajectory(trajectory));
}

std::vector<std::pair<std::size_t, std::size_t>> associate(const Trajectory& a, const Trajectory& b,
                                                           double max_dt) {
  struct Candidate {
    double dt;
    std::size_t i, j;
  };
  std::vector<Candidate> cands;
  std::size_t lo = 0;  // both are sorted by time: a window walk finds every pair within max_dt
  for (std::size_t i = 0; i < a.size(); ++i) {
    while (lo < b.size() && b[lo].timestamp < a[i].timestamp - max_dt) ++lo;
    for (std::size_t j = lo; j < b.size() && b[j].timestamp <= a[i].timestamp + max_dt; ++j)
      cands.push_back({std::abs(a[i].timestamp - b[j].timestamp), i, j});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& x, const Candidate& y) { return x.dt < y.dt; });
  std::vector<char> used_a(a.size(), 0), used_b(b.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const auto& c : cands) {
    if (used_a[c.i] || used_b[c.j]) continue;
    used_a[c.i] = used_b[c.j] = 1;
    out.emplace_back(c.i, c.j);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace core::nerf
