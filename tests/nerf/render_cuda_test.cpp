// The fused CUDA rendering (nerf/render_cuda.hpp) against the CPU reference (render_forward + render_loss
// + render_backward) on rays of a synthetic frame, with the shipped decoders and rough grids: rendered
// depth, colour, weight and variance, the loss, the grid gradients and the ray gradients (hence the pose
// gradient) agree to 1e-4 relative in float32, for the middle, fine and colour stages, plain and
// variance-normalised, and with the background model (its logits' gradient too). Then the device map of a
// whole run (make_cuda_map, NiceSlam::use_device) against the CPU path with the same rays: tracking
// iterations give the same pose, mapping iterations the same grids and background logits, with and without
// the depth-uncertainty and background extensions; a tiny `run` with device=cuda against device=cpu. Exits 77
// (skipped) where no CUDA device answers; test_nerf_cuda_emulated runs the same cases on the SIMT emulator
// (tests/support/simt).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "device_or_skip.hpp"
#include "kernels/runtime.hpp"
#include "nerf/render_cuda.hpp"
#include "nerf/slam.hpp"
#include "nerf/slam_job.hpp"
#include "nerf/synthetic.hpp"
#include "test_support.hpp"

using namespace core::nerf;

namespace {

const bool kHaveDevice = core::test::device_or_skip("fused rendering tests");

// max |a - b| / max |b| (b the reference), and max |b| for the "not all zero" checks.
double relative(const float* a, const float* b, std::size_t n, double* scale = nullptr) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    ref = std::max(ref, std::abs(double(b[i])));
  }
  if (scale) *scale = ref;
  return ref > 0 ? diff / ref : diff;
}

}  // namespace

TEST_CASE("fused CUDA rendering equals the CPU reference: outputs, loss, grid and ray gradients") {
  SynthOptions so;
  so.frames = 2;
  so.width = 40;
  so.height = 30;
  const SyntheticSequence seq = synthesize_frames(so);
  const RgbdFrame& frame = seq.frames[1];
  const Pose pose = *frame.groundtruth;
  SlamOptions slam;
  Vec3 lo, hi;
  slam_bound(slam, seq.camera, frame, pose, lo, hi);
  ModelOptions mo;
  mo.init_stddev = 0.3;  // rough grids: occupancies anywhere in (0, 1), so every term has a gradient
  NiceModel<float> model;
  model.init(mo, lo, hi, 3);
  load_decoders(shipped_decoders_path(), model);

  core::Rng rng(7);
  std::vector<Vec3> dirs;
  std::vector<float> measured;
  RayTargets<float> t;
  std::vector<float> colours;
  for (int n = 0; n < 48; ++n) {
    const int x = int(rng.below(std::uint64_t(so.width))), y = int(rng.below(std::uint64_t(so.height)));
    dirs.push_back(seq.camera.ray(x, y));
    measured.push_back(n % 12 == 5 ? 0.0f : frame.depth.at(x, y));  // a few rays without depth
    for (int c = 0; c < 3; ++c) colours.push_back(frame.color.at(x, y)[c]);
  }
  const int R = int(dirs.size());
  RayBundle<float> rays;
  camera_rays(pose, dirs, rays);
  SamplingOptions sampling;
  sampling.stratified = 16;
  sampling.surface = 8;
  sample_depths(measured, sampling, rng, rays.z);
  t.depth = Eigen::Map<const Col<float>>(measured.data(), R);
  t.colour = Eigen::Map<const Mat<float>>(colours.data(), 3, R);
  t.depth_weight.resize(R);
  t.sensor_var.resize(R);
  for (int r = 0; r < R; ++r) {
    t.depth_weight(r) = float(rng.uniform(0.5, 1.5));
    t.sensor_var(r) = float(rng.uniform(1e-4, 1e-3));
    t.active.push_back(r != 3);
  }

  BackgroundModel<float> background;  // logits in (-2, 2), so the background colours differ by direction
  background.init(8, 5);
  for (float& v : background.values) v = float(rng.uniform(-2, 2));
  // A thinner copy of the geometry for the background cases, so that light is left after the last sample
  // (the middle decoder's output shifted down until the mean transmittance T_N exceeds 0.2).
  NiceModel<float> thin = model;
  thin.background = background;
  for (int k = 0; k < 40; ++k) {
    RenderCache<float> cache;
    RenderOutput<float> o;
    render_forward(thin, Stage::colour, rays, cache, o);
    if (cache.background_trans.mean() > 0.2f) break;
    thin.decoder[1].b.back()(0) -= 0.1f;
  }
  const NiceModel<float> opaque = model;
  struct Case {
    Stage stage;
    bool normalised, background;
  };
  std::vector<Case> cases;
  for (Stage stage : {Stage::middle, Stage::fine, Stage::colour})
    for (bool normalised : {false, true}) cases.push_back({stage, normalised, false});
  cases.push_back({Stage::colour, false, true});
  cases.push_back({Stage::colour, true, true});
  for (const Case& c : cases) {
    CAPTURE(stage_name(c.stage));
    CAPTURE(c.normalised);
    CAPTURE(c.background);
    model = c.background ? thin : opaque;
    const Stage stage = c.stage;
    LossOptions lo_;
    lo_.variance_normalised = c.normalised;
    lo_.colour_weight = 0.5;
    RenderCache<float> cache;
    RenderOutput<float> ref;
    render_forward(model, stage, rays, cache, ref);
    RenderGrad<float> g;
    const double ref_loss = render_loss(ref, t, lo_, g);
    ModelGrad<float> ref_grad;
    ref_grad.zero(model);
    Mat<float> ref_do, ref_dd;
    render_backward(model, rays, cache, g, &ref_grad, false, &ref_do, &ref_dd);

    RenderOutput<float> out;
    ModelGrad<float> grad;
    grad.zero(model);
    Mat<float> d_o, d_d;
    const double loss = render_loss_backward_cuda(model, stage, rays, t, lo_, out, &grad, &d_o, &d_d);

    CHECK(loss == doctest::Approx(ref_loss).epsilon(1e-5));
    CHECK(relative(out.depth.data(), ref.depth.data(), std::size_t(R)) < 1e-4);
    CHECK(relative(out.weight.data(), ref.weight.data(), std::size_t(R)) < 1e-4);
    CHECK(relative(out.variance.data(), ref.variance.data(), std::size_t(R)) < 1e-4);
    CHECK(relative(out.colour.data(), ref.colour.data(), std::size_t(3 * R)) < 1e-4);
    double scale = 0;
    CHECK(relative(d_o.data(), ref_do.data(), std::size_t(3 * R), &scale) < 1e-4);
    CHECK(scale > 0);
    CHECK(relative(d_d.data(), ref_dd.data(), std::size_t(3 * R)) < 1e-4);
    for (int l = 0; l < 4; ++l) {
      CAPTURE(l);
      CHECK(relative(grad.grid[l].data(), ref_grad.grid[l].data(), grad.grid[l].size(), &scale) < 1e-4);
      CHECK((scale > 0) == stage_uses(stage, Level(l)));
    }
    if (c.background) {
      CHECK(relative(grad.background.data(), ref_grad.background.data(), grad.background.size(), &scale) < 1e-4);
      CHECK(scale > 0);
      // The background shows: the colour differs from the same render without it.
      NiceModel<float> plain = model;
      plain.background = BackgroundModel<float>{};
      RenderCache<float> plain_cache;
      RenderOutput<float> without;
      render_forward(plain, stage, rays, plain_cache, without);
      CHECK(relative(without.colour.data(), out.colour.data(), std::size_t(3 * R)) > 1e-2);
    }
  }
  // Beyond the per-thread limits: refused, never rendered wrongly.
  model = opaque;
  RayBundle<float> many = rays;
  many.z = Mat<float>::Zero(kCudaMaxSamples + 1, R);
  RenderOutput<float> out;
  CHECK_THROWS_AS(render_loss_backward_cuda(model, Stage::colour, many, t, LossOptions{}, out, nullptr, nullptr, nullptr),
                  std::invalid_argument);
}

namespace {

// A tiny scene for the device map against the CPU path: 40x30 synthetic frames, 8 channels, random
// decoders of width 16 (cheap on the emulator), rough grids so that every term has a gradient.
struct TinyScene {
  SyntheticSequence seq;
  SlamOptions options;
  NiceModel<float> model;
  TinyScene(bool extensions) {
    SynthOptions so;
    so.frames = 3;
    so.width = 40;
    so.height = 30;
    so.seed = 4;
    seq = synthesize_frames(so);
    options.model.channels = 8;
    options.model.hidden = 16;
    options.model.voxel_middle = 0.5;
    options.model.voxel_fine = 0.25;
    options.model.voxel_colour = 0.25;
    options.model.init_stddev = 0.3;
    options.model.background = extensions;
    options.uncertainty.enabled = extensions;
    options.sampling.stratified = 12;
    options.sampling.surface = 6;
    options.tracking.pixels = 48;
    options.tracking.iterations = 6;
    options.mapping.pixels = 96;
    options.seed = 11;
    Vec3 lo, hi;
    slam_bound(options, seq.camera, seq.frames[0], *seq.frames[0].groundtruth, lo, hi);
    model.init(options.model, lo, hi, 5);
    core::Rng rng(3);
    for (float& w : model.decoder[2].W.back().reshaped()) w = float(rng.uniform(-0.3, 0.3));  // a live fine level
    if (extensions) {
      model.background.init(options.model.background_azimuth, options.model.background_elevation);
      for (float& v : model.background.values) v = float(rng.uniform(-1, 1));
    }
  }
};

// Largest |a - b| over two grids' values.
double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

}  // namespace

TEST_CASE("device map: tracking iterations give the CPU path's pose") {
  for (bool extensions : {false, true}) {
    CAPTURE(extensions);
    TinyScene scene(extensions);
    NiceSlam cpu(scene.options, scene.seq.camera, scene.model), dev(scene.options, scene.seq.camera, scene.model);
    dev.use_device(make_cuda_map(dev.model()));
    const RgbdFrame& f = scene.seq.frames[1];
    Pose start = *f.groundtruth;
    start.R = so3_exp(Vec3(0.02, -0.03, 0.01)) * start.R;
    start.t += Vec3(0.03, 0.02, -0.02);
    FrameStats sc, sd;
    const Pose pc = cpu.track(f, start, sc), pd = dev.track(f, start, sd);
    const double moved = (pc.t - start.t).norm();
    const double dt = (pc.t - pd.t).norm(), dr = rotation_angle(pc.R.transpose() * pd.R);
    MESSAGE("tracking moved the pose by " << moved << " m; device vs CPU: " << dt << " m, " << dr << " rad, loss "
                                          << sd.track_loss << " vs " << sc.track_loss);
    CHECK(moved > 1e-3);  // the comparison is not of two unmoved starts
    CHECK(dt < 2e-5);
    CHECK(dr < 2e-5);
    CHECK(sd.track_loss == doctest::Approx(sc.track_loss).epsilon(1e-4));
    CHECK(sd.depth_l1 == doctest::Approx(sc.depth_l1).epsilon(1e-4));
  }
}

TEST_CASE("device map: mapping iterations update the grids and background as the CPU path does") {
  for (bool extensions : {false, true}) {
    CAPTURE(extensions);
    TinyScene scene(extensions);
    NiceSlam cpu(scene.options, scene.seq.camera, scene.model), dev(scene.options, scene.seq.camera, scene.model);
    dev.use_device(make_cuda_map(dev.model()));
    const std::vector<const RgbdFrame*> frames{&scene.seq.frames[0], &scene.seq.frames[2]};
    const std::vector<Pose> poses{*frames[0]->groundtruth, *frames[1]->groundtruth};
    // Five iterations: middle, middle, fine, colour, colour (ratios 0.4 / 0.6).
    cpu.map_frames(frames, poses, 5);
    dev.map_frames(frames, poses, 5);
    const NiceModel<float>&mc = cpu.model(), &md = dev.model();
    const MappingOptions& o = scene.options.mapping;
    const double lr[4] = {o.lr_coarse, o.lr_middle, o.lr_fine, o.lr_colour};
    for (int l = 1; l < 4; ++l) {
      CAPTURE(l);
      const double moved = max_difference(mc.grid[l].values, scene.model.grid[l].values);
      const double diff = max_difference(mc.grid[l].values, md.grid[l].values);
      MESSAGE("level " << l << ": moved up to " << moved << ", device vs CPU up to " << diff << " (step size " << lr[l] << ")");
      CHECK(moved > 0.5 * lr[l]);
      CHECK(diff < 1e-3 * moved);
    }
    if (extensions) {
      const double moved = max_difference(mc.background.values, scene.model.background.values);
      const double diff = max_difference(mc.background.values, md.background.values);
      MESSAGE("background: moved up to " << moved << ", device vs CPU up to " << diff);
      CHECK(moved > 0.5 * o.lr_background);
      CHECK(diff < 1e-3 * moved);
    }
  }
}

TEST_CASE("device map: a tiny run with device=cuda tracks as device=cpu does") {
  RunOptions o;
  o.synth.frames = 4;
  o.synth.width = 40;
  o.synth.height = 30;
  o.synth.seed = 2;
  o.slam = TinyScene(false).options;
  o.slam.bound = {-2.6, -2.6, -0.1, 2.6, 2.6, 2.7};
  o.slam.decoders = "none";
  o.slam.mapping.every = 2;
  o.slam.mapping.iterations = 5;
  o.slam.mapping.first_iterations = 10;
  o.slam.mapping.window = 2;
  o.seed = 3;
  core::test::TempDir dir("nice-cuda-run");
  const RunResult cpu = run_slam(o, dir / "cpu", nullptr);
  o.device = "cuda";
  const RunResult dev = run_slam(o, dir / "cuda", nullptr);
  REQUIRE(cpu.trajectory.size() == 4);
  REQUIRE(dev.trajectory.size() == 4);
  double worst = 0;
  for (std::size_t i = 0; i < 4; ++i) worst = std::max(worst, (cpu.trajectory[i].pose.t - dev.trajectory[i].pose.t).norm());
  MESSAGE("ATE RMSE: CPU " << cpu.error.ate_rmse << " m, device " << dev.error.ate_rmse << " m; positions differ by up to "
                           << worst << " m");
  CHECK(dev.to_json()["device"] == "cuda");
  CHECK(worst < 1e-4);
  CHECK(std::abs(dev.error.ate_rmse - cpu.error.ate_rmse) < 1e-4);  // the stated ATE tolerance: 0.1 mm
  CHECK(max_difference(cpu.model.grid[2].values, dev.model.grid[2].values) < 1e-3);
}
