// Loading and validating point sets (see points.hpp).
#include "linefit/points.hpp"

#include <cmath>

#include "common/errors.hpp"
#include "io/csv.hpp"

namespace core::linefit {

Points read_points_csv(const std::filesystem::path& path) {
  const auto table = io::read_numeric_csv(path, 2);
  Points pts;
  pts.x.reserve(table.rows);
  pts.y.reserve(table.rows);
  for (std::size_t r = 0; r < table.rows; ++r) {
    pts.x.push_back(table.at(r, 0));
    pts.y.push_back(table.at(r, 1));
  }
  check_fit_input(pts, path.string());
  return pts;
}

Points points_from_list(const std::vector<std::vector<double>>& list, const std::string& where) {
  Points pts;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i].size() != 2)
      throw DataError(where + ": point " + std::to_string(i) + " has " + std::to_string(list[i].size()) +
                      " coordinates, expected 2 ([x, y])");
    pts.x.push_back(list[i][0]);
    pts.y.push_back(list[i][1]);
  }
  check_fit_input(pts, where);
  return pts;
}

void check_fit_input(const Points& pts, const std::string& where) {
  if (pts.size() < 2)
    throw DataError(where + ": a line fit needs at least 2 points, got " + std::to_string(pts.size()));
  bool all_same = true;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (!std::isfinite(pts.x[i]) || !std::isfinite(pts.y[i]))
      throw DataError(where + ": point " + std::to_string(i) + " is not finite");
    all_same = all_same && pts.x[i] == pts.x[0] && pts.y[i] == pts.y[0];
  }
  if (all_same) throw DataError(where + ": all points are identical, so no line is defined");
}

}  // namespace core::linefit
