// Seeded landmark worlds for `slam-certify sim` and the certificate-versus-noise study (the
// simulations of Holmes & Barfoot, RA-L 2023, Sec. VI): poses along a circle (2D) or a helix (3D), or
// a lawn-mower grid; landmarks uniform in a box around them; odometry between consecutive poses,
// optional loop closures, and each pose observing the landmarks within sensor_range (every landmark
// at least from its two nearest poses). Measurements are the true ones perturbed by Gaussian noise
// (rotations by the exponential of a Gaussian rotation vector) scaled by noise_scale; the g2o
// information matrices are 1/sigma^2 I whatever noise_scale is, so noise_scale = 0 gives noise-free
// data with the same weights (whose optimum, the truth, has cost 0).
#pragma once
#include <cstdint>
#include <string>

#include "common/config.hpp"
#include "slam/g2o.hpp"

namespace core::slam {

struct WorldOptions {
  int dimension = 2;
  std::string path = "circle";  // circle (helix in 3D) | grid
  int poses = 50;
  int landmarks = 20;
  double radius = 10.0;           // circle radius / grid extent
  double sensor_range = 8.0;      // 0: every pose sees every landmark
  int loop_closures = 0;
  double rotation_sigma = 0.02;   // rad
  double translation_sigma = 0.05;
  double landmark_sigma = 0.05;
  double noise_scale = 1.0;
  std::uint64_t seed = 0;

  template <class V>
  void visit(V& v) {
    v("dimension", dimension, "2 or 3", core::in_range(2, 3));
    v("path", path, "pose layout: circle (a helix in 3D) or grid", core::one_of({"circle", "grid"}));
    v("poses", poses, "number of poses", core::in_range(2, 10000000));
    v("landmarks", landmarks, "number of landmarks", core::in_range(0, 10000000));
    v("radius", radius, "circle radius or grid extent", core::positive<double>());
    v("sensor_range", sensor_range, "a pose sees the landmarks within this distance (0: all)", core::in_range(0.0, 1e12));
    v("loop_closures", loop_closures, "random pose-pose measurements besides odometry", core::in_range(0, 10000000));
    v("rotation_sigma", rotation_sigma, "rotation noise (rad) and weight", core::positive<double>());
    v("translation_sigma", translation_sigma, "odometry translation noise and weight", core::positive<double>());
    v("landmark_sigma", landmark_sigma, "landmark measurement noise and weight", core::positive<double>());
    v("noise_scale", noise_scale, "multiplies the noise, not the weights (0: noise-free data)", core::in_range(0.0, 1e6));
    v("seed", seed, "seed of the world and its noise");
  }
};

struct World {
  G2oGraph graph;  // the vertices' estimates are the ground truth
  Estimate truth;
};

World simulate_world(const WorldOptions& options);

}  // namespace core::slam
