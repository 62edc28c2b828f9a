// Rendering and its hand-written backward pass: float64 central differences with respect to grid
// features, decoder weights and the camera pose (left perturbation on SO(3), translation), for every
// stage and both losses, and the background model's logits (colour stage); rendering identities.
#include <doctest/doctest.h>

#include <cmath>

#include "nerf/render.hpp"

using namespace core;
using namespace core::nerf;

namespace {

struct Fixture {
  NiceModel<double> model;
  std::vector<Vec3> pixel_rays;
  Pose pose;
  RayBundle<double> rays;
  RayTargets<double> targets;
  // Seed 0 is the original draw; other seeds draw other models, rays, depths and targets.
  explicit Fixture(std::uint64_t seed = 0) {
    ModelOptions o;
    o.voxel_coarse = 1.0;
    o.voxel_middle = 0.5;
    o.voxel_fine = 0.25;
    o.voxel_colour = 0.25;
    o.channels = 4;
    o.hidden = 8;
    o.occupancy_scale = 2.0;
    o.init_stddev = 0.6;
    o.background = true;
    o.background_azimuth = 8;
    o.background_elevation = 5;
    model.init(o, Vec3(-1.5, -1.5, -1.5), Vec3(1.5, 1.5, 1.5), 7 + seed);
    Rng bg_rng(11 + seed);
    for (double& v : model.background.values) v = bg_rng.normal();
    // Non-zero biases: with the zero biases of init, a hidden unit whose inputs are all cut by the ReLU sits
    // exactly at relu(0), where the bias has no derivative (central differences average the two sides).
    for (auto& decoder : model.decoder)
      for (auto& b : decoder.b)
        for (Eigen::Index i = 0; i < b.size(); ++i) b(i) = 0.3 * bg_rng.normal();
    Rng rng(3 + seed);
    const int R = 6;
    for (int r = 0; r < R; ++r) pixel_rays.push_back(Vec3(rng.uniform(-0.5, 0.5), rng.uniform(-0.4, 0.4), 1.0));
    pose.R = so3_exp(Vec3(0.2, -0.3, 0.1));
    pose.t = Vec3(0.1, -0.2, -0.9);
    camera_rays(pose, pixel_rays, rays);
    std::vector<float> measured;
    for (int r = 0; r < R; ++r) measured.push_back(r == 2 ? 0.0f : float(rng.uniform(0.8, 1.8)));
    SamplingOptions so;
    so.stratified = 8;
    so.surface = 4;
    so.near = 0.2;
    so.far = 2.6;
    sample_depths(measured, so, rng, rays.z);
    targets.depth = Col<double>(R);
    targets.colour = Mat<double>(3, R);
    targets.sensor_var = Col<double>(R);
    targets.depth_weight = Col<double>(R);
    for (int r = 0; r < R; ++r) {
      targets.depth(r) = measured[std::size_t(r)];
      for (int c = 0; c < 3; ++c) targets.colour(c, r) = rng.uniform();
      targets.sensor_var(r) = 1e-3 * (r + 1);
      targets.depth_weight(r) = 0.5 + 0.2 * r;
      targets.active.push_back(r != 4);
    }
  }
  double loss(Stage stage, const LossOptions& lo, const RayBundle<double>& b) const {
    RenderCache<double> cache;
    RenderOutput<double> out;
    render_forward(model, stage, b, cache, out);
    RenderGrad<double> g;
    return render_loss(out, targets, lo, g);
  }
};

void check_close(double analytic, double numeric, const char* what) {
  const std::string label = what;
  CAPTURE(label);
  CAPTURE(analytic);
  CAPTURE(numeric);
  CHECK(std::abs(analytic - numeric) <= 1e-6 * std::max(1.0, std::abs(numeric)) + 1e-9);
}

// With `noise`, the depth-uncertainty weights are set from this forward pass and held fixed (constants of
// the step, as tracking and mapping use them).
void check_stage(Stage stage, const LossOptions& lo, const DepthNoiseModel* noise = nullptr, bool per_ray = false,
                 std::uint64_t seed = 0) {
  const std::string stage_label = stage_name(stage);
  CAPTURE(stage_label);
  CAPTURE(seed);
  Fixture f(seed);
  RenderCache<double> cache;
  RenderOutput<double> out;
  render_forward(f.model, stage, f.rays, cache, out);
  if (noise) depth_uncertainty_weights(out, *noise, per_ray, f.targets);
  RenderGrad<double> g;
  const double L = render_loss(out, f.targets, lo, g);
  CHECK(L > 0);
  ModelGrad<double> grad;
  grad.zero(f.model);
  Mat<double> d_origins, d_dirs;
  render_backward(f.model, f.rays, cache, g, &grad, true, &d_origins, &d_dirs);
  const double h = 1e-6;
  int checked_nonzero = 0;
  // Grid features: every entry with a gradient, and some without.
  for (int l = 0; l < 4; ++l) {
    auto& values = f.model.grid[l].values;
    int taken = 0;
    for (std::size_t i = 0; i < values.size() && taken < 12; i += 1) {
      const bool nonzero = grad.grid[l][i] != 0;
      if (!nonzero && i % 97 != 0) continue;
      const double keep = values[i];
      values[i] = keep + h;
      const double lp = f.loss(stage, lo, f.rays);
      values[i] = keep - h;
      const double lm = f.loss(stage, lo, f.rays);
      values[i] = keep;
      check_close(grad.grid[l][i], (lp - lm) / (2 * h), "grid feature");
      checked_nonzero += nonzero;
      ++taken;
    }
  }
  CHECK(checked_nonzero >= 8);
  // Decoder weights of the decoders the stage uses.
  for (int l = 0; l < 4; ++l) {
    std::vector<std::size_t> sizes, gsizes;
    auto blocks = f.model.decoder[l].parameter_blocks(sizes);
    auto gblocks = grad.decoder[l].parameter_blocks(gsizes);
    for (std::size_t b = 0; b < blocks.size(); ++b)
      for (std::size_t i = 0; i < sizes[b]; i += 1 + sizes[b] / 5) {
        const double keep = blocks[b][i];
        blocks[b][i] = keep + h;
        const double lp = f.loss(stage, lo, f.rays);
        blocks[b][i] = keep - h;
        const double lm = f.loss(stage, lo, f.rays);
        blocks[b][i] = keep;
        check_close(gblocks[b][i], (lp - lm) / (2 * h), "decoder weight");
      }
  }
  // Background logits (colour stage only): every one with a gradient.
  int background_nonzero = 0;
  for (std::size_t i = 0; i < f.model.background.values.size(); ++i) {
    if (grad.background[i] == 0) continue;
    double& v = f.model.background.values[i];
    const double keep = v;
    v = keep + h;
    const double lp = f.loss(stage, lo, f.rays);
    v = keep - h;
    const double lm = f.loss(stage, lo, f.rays);
    v = keep;
    check_close(grad.background[i], (lp - lm) / (2 * h), "background logit");
    ++background_nonzero;
  }
  CHECK((background_nonzero > 0) == (stage == Stage::colour && lo.colour_weight > 0));
  // Pose: p = Exp(phi) R x + t + tau moves origins by tau and directions by Exp(phi).
  const Vec3 g_t = d_origins.rowwise().sum();
  Vec3 g_phi = Vec3::Zero();
  for (int r = 0; r < f.rays.rays(); ++r) g_phi += Vec3(f.rays.dirs.col(r)).cross(Vec3(d_dirs.col(r)));
  CHECK(g_t.norm() > 1e-6);
  for (int a = 0; a < 6; ++a) {
    double lpm[2];
    for (int sgn = 0; sgn < 2; ++sgn) {
      Vec3 delta = Vec3::Zero();
      delta[a % 3] = sgn == 0 ? h : -h;
      Pose p = f.pose;
      if (a < 3) p.R = so3_exp(delta) * p.R;
      else p.t += delta;
      RayBundle<double> b = f.rays;
      camera_rays(p, f.pixel_rays, b);
      b.z = f.rays.z;
      lpm[sgn] = f.loss(stage, lo, b);
    }
    check_close(a < 3 ? g_phi[a] : g_t[a - 3], (lpm[0] - lpm[1]) / (2 * h), a < 3 ? "rotation" : "translation");
  }
}

}  // namespace

TEST_CASE("backward pass matches float64 central differences") {
  LossOptions tracking;
  tracking.variance_normalised = true;
  tracking.colour_weight = 0.5;
  LossOptions mapping;
  mapping.colour_weight = 0.3;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    for (Stage s : {Stage::coarse, Stage::middle, Stage::fine, Stage::colour}) check_stage(s, mapping, nullptr, false, seed);
    check_stage(Stage::colour, tracking, nullptr, false, seed);
    check_stage(Stage::fine, tracking, nullptr, false, seed);
  }
}

TEST_CASE("depth uncertainty: sigma(z) model, mean-1 weights, gradients of the weighted losses") {
  DepthNoiseModel noise;
  CHECK(noise.sigma(0.4) == doctest::Approx(0.0012));
  CHECK(noise.sigma(3.4) == doctest::Approx(0.0012 + 0.0019 * 9));
  Fixture f;
  RenderCache<double> cache;
  RenderOutput<double> out;
  render_forward(f.model, Stage::colour, f.rays, cache, out);
  for (bool per_ray : {false, true}) {
    RayTargets<double> t = f.targets;
    depth_uncertainty_weights(out, noise, per_ray, t);
    double mean = 0;
    int n = 0;
    for (int r = 0; r < f.rays.rays(); ++r) {
      if (!(t.depth(r) > 0)) {
        CHECK(t.sensor_var(r) == 0);
        continue;
      }
      const double s = noise.sigma(t.depth(r));
      CHECK(t.sensor_var(r) == doctest::Approx(s * s));
      if (!t.active[std::size_t(r)]) continue;
      mean += per_ray ? t.depth_weight(r) : t.depth_weight(r) / std::sqrt(out.variance(r) + s * s);
      ++n;
    }
    CHECK(n == 4);
    CHECK(mean / n == doctest::Approx(1.0).epsilon(1e-12));
  }
  // Tracking: normalised residuals with the sensor variance; mapping: per-ray weights on plain L1.
  LossOptions tracking;
  tracking.variance_normalised = true;
  tracking.colour_weight = 0.5;
  LossOptions mapping;
  mapping.colour_weight = 0.3;
  check_stage(Stage::colour, tracking, &noise, false);
  check_stage(Stage::fine, mapping, &noise, true);
}

TEST_CASE("rendering identities: weights sum to at most 1, variance >= 0") {
  Fixture f;
  for (Stage s : {Stage::coarse, Stage::middle, Stage::fine, Stage::colour}) {
    RenderCache<double> cache;
    RenderOutput<double> out;
    render_forward(f.model, s, f.rays, cache, out);
    for (int r = 0; r < f.rays.rays(); ++r) {
      CHECK(out.weight(r) >= 0);
      CHECK(out.weight(r) <= 1 + 1e-12);
      CHECK(out.variance(r) >= 0);
      // Depth is a weighted mean of sample depths scaled by the total weight.
      CHECK(out.depth(r) <= out.weight(r) * f.rays.z(f.rays.samples() - 1, r) + 1e-12);
    }
  }
}

TEST_CASE("a step occupancy renders at its depth with zero variance") {
  // One channel; middle decoder raw = 2000 relu(f) - 1000, so occupancy jumps from 0 to 1 where the
  // interpolated feature crosses 0.5: halfway between the vertex planes x = 0.5 (f = 0) and x = 1.0 (f = 1).
  NiceModel<double> m;
  ModelOptions o;
  o.channels = 1;
  o.hidden = 1;
  o.voxel_middle = 0.5;
  o.voxel_fine = o.voxel_colour = o.voxel_coarse = 0.5;
  o.init_stddev = 0;
  m.init(o, Vec3(-2, -2, -2), Vec3(2, 2, 2), 1);
  auto& dec = m.decoder[1];
  dec.W = {Mat<double>::Constant(1, 1, 1.0), Mat<double>::Constant(1, 1, 1.0), Mat<double>::Constant(1, 1, 2000.0)};
  dec.b = {Col<double>::Zero(1), Col<double>::Zero(1), Col<double>::Constant(1, -1000.0)};
  auto& g = m.grid[int(Level::middle)];
  for (int z = 0; z < g.nz; ++z)
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x) g.values[std::size_t((z * g.ny + y) * g.nx + x)] = g.lo.x() + x * g.voxel >= 1.0 ? 1 : 0;
  RayBundle<double> rays;
  rays.origins = Mat<double>::Zero(3, 1);
  rays.dirs = Mat<double>(3, 1);
  rays.dirs << 1, 0, 0;
  const int N = 4000;
  rays.z.resize(N, 1);
  for (int k = 0; k < N; ++k) rays.z(k, 0) = 0.1 + 1.8 * k / (N - 1);
  RenderCache<double> cache;
  RenderOutput<double> out;
  render_forward(m, Stage::middle, rays, cache, out);
  CHECK(out.weight(0) == doctest::Approx(1.0).epsilon(1e-9));
  CHECK(std::abs(out.depth(0) - 0.75) < 2 * 1.8 / N);
  CHECK(out.variance(0) < 1e-5);
}

TEST_CASE("a ray that leaves the scene bound unoccluded renders the background model's colour") {
  NiceModel<double> m;
  ModelOptions o;
  o.channels = 2;
  o.hidden = 4;
  o.background = true;
  o.background_azimuth = 16;
  o.background_elevation = 9;
  m.init(o, Vec3(-1, -1, -1), Vec3(1, 1, 1), 3);
  m.decoder[1].b.back().setConstant(-1000.0);  // empty space: occupancy 0 everywhere
  for (int l = 0; l < 4; ++l)
    for (double& v : m.grid[l].values) v = 0;
  Rng rng(2);
  for (double& v : m.background.values) v = rng.normal();
  RayBundle<double> rays;
  rays.origins = Mat<double>::Zero(3, 1);
  rays.dirs = Mat<double>(3, 1);
  // Straight along azimuth 0 at elevation 0: vertex (azimuth cell 8 of 16, elevation row 4 of 9).
  rays.dirs << 1, 0, 0;
  rays.z = Mat<double>(4, 1);
  rays.z << 0.5, 1.0, 1.5, 2.0;
  RenderCache<double> cache;
  RenderOutput<double> out;
  render_forward(m, Stage::colour, rays, cache, out);
  CHECK(out.weight(0) < 1e-12);
  for (int ch = 0; ch < 3; ++ch) {
    const double logit = m.background.values[3 * (4 * 16 + 8) + std::size_t(ch)];
    CHECK(out.colour(ch, 0) == doctest::Approx(1 / (1 + std::exp(-logit))).epsilon(1e-9));
  }
}
