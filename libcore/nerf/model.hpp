// NICE-SLAM's scene representation (Zhu et al. 2022, Sec. 3.1): four dense feature grids over the scene
// bound (coarse, middle, fine geometry and colour), read by trilinear interpolation (eq. 1), and small
// MLP decoders: o_coarse = f0(phi0), o_middle = f1(phi1), o_fine = f1(phi1) + f2(phi1, phi2) (the fine
// level is a residual on the middle one, eq. 2-3), colour c = f_c(phi_c). Occupancy probabilities are
// sigmoid(occupancy_scale * raw), as the reference renderer does. Grids and decoders are templates on
// the scalar type: float for runs, double for the finite-difference checks of the backward passes.
#pragma once
#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/rng.hpp"
#include "nerf/se3.hpp"

namespace core::nerf {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using Col = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// Values at the vertices of a regular grid over [lo, lo + voxel * (dims - 1)], `channels` per vertex.
template <class T>
struct FeatureGrid {
  Vec3 lo = Vec3::Zero();
  double voxel = 1;
  int nx = 0, ny = 0, nz = 0, channels = 0;
  std::vector<T> values;  // vertex-major: values[vertex * channels + c], vertex = (z * ny + y) * nx + x

  // Covers [lo, hi] (hi rounded up to whole voxels); features drawn from N(0, stddev^2).
  void init(const Vec3& lo, const Vec3& hi, double voxel, int channels, Rng& rng, double stddev);
  std::size_t vertices() const { return std::size_t(nx) * ny * nz; }
  std::size_t size() const { return values.size(); }
};

// Fully connected network: Linear, ReLU, ..., Linear (no activation on the output).
template <class T>
struct Mlp {
  std::vector<Mat<T>> W;  // W[l]: out x in
  std::vector<Col<T>> b;

  // sizes = {in, hidden..., out}; He-uniform weights, zero biases.
  void init(const std::vector<int>& sizes, Rng& rng);
  void zero_like(const Mlp& other);
  int inputs() const { return int(W.front().cols()); }
  int outputs() const { return int(W.back().rows()); }
  std::size_t parameter_count() const;
  // Parameters in a fixed order (W0, b0, W1, b1, ...) for optimisers and files.
  std::vector<T*> parameter_blocks(std::vector<std::size_t>& sizes);

  // acts[0] = X; acts[l+1] = relu(W_l acts[l] + b_l) for hidden layers; returns the output.
  void forward(const Mat<T>& X, Mat<T>& Y, std::vector<Mat<T>>& acts) const;
  // Given dL/dY: dL/dX (when dX) and parameter gradients added into grad (when grad).
  void backward(const std::vector<Mat<T>>& acts, const Mat<T>& dY, Mat<T>* dX, Mlp* grad) const;
};

// Direction-only colour of what lies beyond the scene bound (the background extension): colour logits on
// an azimuth x elevation grid (azimuth wraps around, elevation from -90 to +90 degrees), read bilinearly,
// colour = sigmoid(logit). Rendering composites it with the transmittance left after the last sample.
template <class T>
struct BackgroundModel {
  int azimuth = 0, elevation = 0;  // 0: no background model
  std::vector<T> values;           // (e * azimuth + a) * 3 + channel
  bool enabled() const { return azimuth > 0; }
  void init(int azimuth_cells, int elevation_cells);  // all logits 0 (grey)
  // The four vertices and bilinear weights for direction d; du, dv: d(cell coordinates)/d(d) (3 each).
  void locate(const Vec3& d, std::size_t vertex[4], double w[4], Vec3& du, Vec3& dv, double& fu, double& fv) const;
};

enum class Level { coarse = 0, middle = 1, fine = 2, colour = 3 };
enum class Stage { coarse, middle, fine, colour };
const char* stage_name(Stage s);

struct ModelOptions {
  double voxel_coarse = 2.0, voxel_middle = 0.32, voxel_fine = 0.16, voxel_colour = 0.16;
  int channels = 32;
  int hidden = 32;
  double occupancy_scale = 10.0;
  double init_stddev = 0.01;
  bool background = false;
  int background_azimuth = 32, background_elevation = 16;
  template <class V>
  void visit(V& v);
};

template <class T>
struct NiceModel {
  Vec3 bound_lo = Vec3::Zero(), bound_hi = Vec3::Zero();
  double occupancy_scale = 10.0;
  FeatureGrid<T> grid[4];  // indexed by Level
  Mlp<T> decoder[4];       // coarse (C -> 1), middle (C -> 1), fine (2C -> 1), colour (C -> 3)
  BackgroundModel<T> background;

  void init(const ModelOptions& options, const Vec3& lo, const Vec3& hi, std::uint64_t seed);
  // Fresh grids over a new bound, decoders kept (pretrained decoders, a new scene).
  void reset_grids(const ModelOptions& options, const Vec3& lo, const Vec3& hi, std::uint64_t seed);
  bool inside(const Vec3& p) const {
    return (p.array() >= bound_lo.array()).all() && (p.array() <= bound_hi.array()).all();
  }
  template <class U>
  NiceModel<U> cast() const;
};

template <class V>
void ModelOptions::visit(V& v) {
  v("voxel_coarse", voxel_coarse, "coarse grid spacing in metres", core::positive<double>());
  v("voxel_middle", voxel_middle, "middle grid spacing in metres", core::positive<double>());
  v("voxel_fine", voxel_fine, "fine grid spacing in metres", core::positive<double>());
  v("voxel_colour", voxel_colour, "colour grid spacing in metres", core::positive<double>());
  v("channels", channels, "features per grid vertex", core::in_range(1, 256));
  v("hidden", hidden, "decoder hidden width", core::in_range(1, 1024));
  v("occupancy_scale", occupancy_scale, "occupancy = sigmoid(scale * decoder output)", core::positive<double>());
  v("init_stddev", init_stddev, "initial grid features ~ N(0, s^2)", core::at_least(0.0));
  v("background", background, "direction-only colour model for rays leaving the scene bound");
  v("background_azimuth", background_azimuth, "background model: azimuth cells", core::in_range(2, 4096));
  v("background_elevation", background_elevation, "background model: elevation vertices", core::in_range(2, 4096));
}

}  // namespace core::nerf
