// Seeded synthetic point sets shared by the line-fitting tests: n points, an outlier fraction, noise
// across the line, and a line angle that changes with the seed.
#pragma once
#include <cstdint>

#include "linefit/synthetic.hpp"

namespace core::linefit::fixtures {

inline Points line_data(int n, double outliers, double noise, std::uint64_t seed) {
  SyntheticLine spec;
  spec.n = n;
  spec.outliers = outliers;
  spec.noise = noise;
  spec.angle_deg = 15.0 + 37.0 * static_cast<double>(seed);
  return generate_line_points(spec, seed).points;
}

}  // namespace core::linefit::fixtures
