// 2-D point sets for line fitting: loading from CSV (x,y) or an inline list, with the checks that
// make a fit meaningful (at least two points, finite values, not all identical).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace core::linefit {

struct Points {
  std::vector<double> x, y;
  std::size_t size() const { return x.size(); }
};

// Reads a CSV of x,y rows (header optional). DataError names file and line; InputMissingError when
// the file is absent.
Points read_points_csv(const std::filesystem::path& path);

// Builds points from an inline list [[x, y], ...]; `where` names the source in errors.
Points points_from_list(const std::vector<std::vector<double>>& list, const std::string& where);

// Throws DataError when a line fit is undefined: fewer than two points, a non-finite value, or all
// points identical.
void check_fit_input(const Points& pts, const std::string& where);

}  // namespace core::linefit
