// Synthetic line data (see synthetic.hpp).
#include "linefit/synthetic.hpp"

#include <cmath>

#include "common/rng.hpp"

namespace core::linefit {

SyntheticPoints generate_line_points(const SyntheticLine& spec, std::uint64_t seed) {
  Rng rng(seed);
  const double theta = spec.angle_deg * M_PI / 180.0;
  const double dx = std::cos(theta), dy = std::sin(theta);  // direction along the line
  const double nx = -dy, ny = dx;                           // unit normal
  const double fx = spec.offset * nx, fy = spec.offset * ny;  // foot point of the origin
  SyntheticPoints out;
  const auto n = static_cast<std::size_t>(spec.n);
  out.points.x.resize(n);
  out.points.y.resize(n);
  out.is_outlier.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const bool outlier = rng.uniform() < spec.outliers;
    double x, y;
    if (outlier) {
      x = fx + rng.uniform(-0.5, 0.5) * spec.extent;
      y = fy + rng.uniform(-0.5, 0.5) * spec.extent;
    } else {
      const double t = rng.uniform(-0.5, 0.5) * spec.extent;
      const double e = spec.noise * rng.normal();
      x = fx + t * dx + e * nx;
      y = fy + t * dy + e * ny;
    }
    out.points.x[i] = x;
    out.points.y[i] = y;
    out.is_outlier[i] = outlier;
  }
  return out;
}

}  // namespace core::linefit
