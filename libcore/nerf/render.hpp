// Volume rendering of NICE-SLAM (Zhu et al. 2022, Sec. 3.2) with hand-written backward passes.
// A ray r has origin o_r and direction d_r (the camera ray at unit depth, in world axes), so the sample
// at depth z is p = o_r + z d_r and z is directly comparable to a depth image. With occupancies o_k of the
// sorted samples, w_k = o_k prod_{j<k} (1 - o_j) (eq. 4), and
//   depth D = sum w_k z_k, colour I = sum w_k c_k, weight W = sum w_k, variance V = sum w_k (z_k - D)^2 (eq. 5-6).
// The backward pass uses, for any composite Q = sum w_k q_k, dQ/do_k = T_k (q_k - S_k) with the suffix
// composite S_k = sum_{i>k} o_i q_i prod_{k<j<i} (1 - o_j), which is stable when an occupancy reaches 1.
// Gradients flow to grid features (trilinear weights), decoder weights, and ray origins/directions
// (hence the camera pose) through the trilinear weights' derivatives.
// With a background model (model.hpp) the colour stage adds T_N c_bg(d_r), T_N = prod_k (1 - o_k): the
// background acts as an opaque last sample, so the backward pass starts the suffix composite at c_bg.
#pragma once
#include <vector>

#include "common/config.hpp"
#include "common/rng.hpp"
#include "nerf/model.hpp"

namespace core::nerf {

template <class T>
struct RayBundle {
  Mat<T> origins;  // 3 x R
  Mat<T> dirs;     // 3 x R, z component of the camera-frame direction is 1
  Mat<T> z;        // N x R, increasing along each column
  int rays() const { return int(origins.cols()); }
  int samples() const { return int(z.rows()); }
};

struct SamplingOptions {
  int stratified = 32;        // samples spread over [near, far]
  int surface = 16;           // samples near the measured depth
  double near = 0.1, far = 6.0;
  double surface_band = 0.05;  // surface samples within +-max(band * depth, surface_min) of the depth
  double surface_min = 0.04;
  template <class V>
  void visit(V& v) {
    v("stratified", stratified, "stratified samples per ray", core::in_range(1, 1024));
    v("surface", surface, "samples per ray near the measured depth", core::in_range(0, 1024));
    v("near", near, "nearest sample depth (m)", core::at_least(0.0));
    v("far", far, "farthest sample depth (m)", core::positive<double>());
    v("surface_band", surface_band, "surface samples within +- band * depth", core::in_range(0.0, 1.0));
    v("surface_min", surface_min, "surface sample half-width at least this (m)", core::at_least(0.0));
  }
};

// Sample depths for rays with measured depths (0: none; then all samples are stratified up to far).
template <class T>
void sample_depths(const std::vector<float>& measured, const SamplingOptions& options, Rng& rng, Mat<T>& z);

template <class T>
struct RenderOutput {
  Col<T> depth, weight, variance;  // R
  Mat<T> colour;                   // 3 x R (zero unless the stage renders colour)
};

template <class T>
struct RenderGrad {  // dL/d(outputs)
  Col<T> depth, weight, variance;
  Mat<T> colour;
  void zero(int rays);
};

template <class T>
struct RenderCache {
  Stage stage = Stage::colour;
  Mat<T> points;              // 3 x S, sample s = r * N + k
  std::vector<char> inside;   // S
  Mat<T> features[4];         // C x S of the levels the stage reads
  std::vector<Mat<T>> acts[4];
  std::vector<Mat<T>> fine_acts;  // the fine decoder's (middle decoder's are in acts[middle])
  Mat<T> raw;                 // 1 x S geometry decoder output
  Mat<T> rgb;                 // 3 x S colour after the sigmoid
  Mat<T> occupancy;           // N x R
  Mat<T> transmittance;       // N x R: prod_{j<k} (1 - o_j)
  Mat<T> background_rgb;      // 3 x R: the background model's colour of each ray (colour stage, when enabled)
  Col<T> background_trans;    // R: transmittance left after the last sample
};

// Parameter gradients, shaped like the model.
template <class T>
struct ModelGrad {
  std::vector<T> grid[4];
  Mlp<T> decoder[4];
  std::vector<T> background;  // logits of the background model
  void zero(const NiceModel<T>& model);
};

// Which levels a stage reads: coarse {coarse}; middle {middle}; fine {middle, fine}; colour {middle, fine, colour}.
bool stage_uses(Stage stage, Level level);

template <class T>
void render_forward(const NiceModel<T>& model, Stage stage, const RayBundle<T>& rays, RenderCache<T>& cache,
                    RenderOutput<T>& out);

// Backward of render_forward. Adds into `grad` (grid features of the levels read; decoder weights when
// decoder_grads) when given, and writes dL/d origins and dL/d dirs (3 x R) when given.
template <class T>
void render_backward(const NiceModel<T>& model, const RayBundle<T>& rays, const RenderCache<T>& cache,
                     const RenderGrad<T>& g, ModelGrad<T>* grad, bool decoder_grads, Mat<T>* d_origins,
                     Mat<T>* d_dirs);

// Per-ray targets of the losses.
template <class T>
struct RayTargets {
  Col<T> depth;         // measured depth, 0: none
  Mat<T> colour;        // 3 x R
  Col<T> depth_weight;  // per-ray weight of the depth term (1 unless the uncertainty model sets it)
  Col<T> sensor_var;    // sensor depth variance added to the rendered variance (tracking)
  std::vector<char> active;  // rays that count
};

struct LossOptions {
  bool variance_normalised = false;  // tracking: |D - D*| / sqrt(V + sensor_var + eps) (NICE-SLAM eq. 9)
  double colour_weight = 0.0;        // weight of the L1 colour term
  double eps = 1e-10;
};

// Depth sensor noise model sigma(z) = a + b (z - z0)^2 (Kinect-style, Nguyen et al. 2012; the synthetic
// sequence's model by default): the depth-uncertainty extension adds sigma(z)^2 to the rendered variance.
struct DepthNoiseModel {
  bool enabled = false;
  double a = 0.0012, b = 0.0019, z0 = 0.4;
  double sigma(double z) const { return a + b * (z - z0) * (z - z0); }
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "normalise depth residuals by rendered variance + sensor sigma(z)^2 (tracking and mapping)");
    v("a", a, "sensor depth noise sigma(z) = a + b (z - z0)^2: a in metres", core::at_least(0.0));
    v("b", b, "sensor depth noise quadratic coefficient b (1/m)", core::at_least(0.0));
    v("z0", z0, "sensor depth noise: depth of the smallest noise (m)", core::at_least(0.0));
  }
};

// Sets the targets' per-ray sensor variance sigma(z)^2 and depth weights from the rendered variance V:
// weight_r = c / sqrt(V_r + sigma_r^2) (c / 1 when per_ray is false, then the loss itself normalises),
// with c chosen so that the active depth rays' weights times 1 / sqrt(V + sigma^2) (per_ray false) or the
// weights themselves (per_ray true) have mean 1: the loss keeps the scale of plain L1 and the learning
// rates stay valid. The weights are constants of the step (no gradient flows through c or V here).
template <class T>
void depth_uncertainty_weights(const RenderOutput<T>& out, const DepthNoiseModel& noise, bool per_ray,
                               RayTargets<T>& targets);

// Mean over active rays of w_r f_depth + colour_weight * |I - I*|_1; writes dL/d(outputs).
template <class T>
double render_loss(const RenderOutput<T>& out, const RayTargets<T>& targets, const LossOptions& options,
                   RenderGrad<T>& grad);

// Rays for pixels (u, v) of a camera at pose (camera to world).
template <class T>
void camera_rays(const Pose& pose, const std::vector<Vec3>& unit_depth_rays, RayBundle<T>& rays);

}  // namespace core::nerf
