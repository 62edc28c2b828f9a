// Seeded synthetic data for line fitting: N points on the line at angle `angle_deg` (the line's
// direction) and signed distance `offset` from the origin, spread uniformly over `extent` along
// the line, Gaussian noise `noise` across it, and a fraction `outliers` replaced by points drawn
// uniformly from the square [-extent/2, extent/2]^2 shifted to the line's foot point.
#pragma once
#include <cstdint>

#include "common/config.hpp"
#include "linefit/points.hpp"

namespace core::linefit {

struct SyntheticLine {
  std::int64_t n = 200;
  double angle_deg = 30.0;
  double offset = 1.0;
  double noise = 0.05;
  double outliers = 0.0;
  double extent = 10.0;
  template <class V>
  void visit(V& v) {
    v("n", n, "number of points", core::in_range<std::int64_t>(2, 100000000));
    v("angle_deg", angle_deg, "direction of the line in degrees", core::in_range(-360.0, 360.0));
    // Finite bounds: YAML's .inf passes at_least/positive, and the points would be infinite.
    v("offset", offset, "signed distance of the line from the origin", core::in_range(-1e100, 1e100));
    v("noise", noise, "standard deviation of the noise across the line", core::in_range(0.0, 1e100));
    v("outliers", outliers, "fraction of points replaced by uniform outliers", core::in_range(0.0, 1.0));
    v("extent", extent, "length of the segment the points cover", core::in_range(1e-100, 1e100));
  }
};

// Points and, for each, whether it is an outlier.
struct SyntheticPoints {
  Points points;
  std::vector<bool> is_outlier;
};

SyntheticPoints generate_line_points(const SyntheticLine& spec, std::uint64_t seed);

}  // namespace core::linefit

namespace core::linefit {

// Options of `tls-fit gen`: the synthetic line flattened to top-level keys, plus seed and output.
struct GenOptions {
  std::string output;
  std::uint64_t seed = 0;
  SyntheticLine line;
  template <class V>
  void visit(V& v) {
    v("output", output, "CSV file to write (x,y with a header)");
    v("seed", seed, "random seed");
    line.visit(v);
  }
  void validate() const {
    if (output.empty()) throw UsageError("config key 'output' (--output) is required: where to write the CSV");
  }
};

}  // namespace core::linefit
