// The fused CUDA rendering (nerf/render_cuda.hpp) against the CPU reference (render_forward + render_loss
// + render_backward) on rays of a synthetic frame, with the shipped decoders and rough grids: rendered
// depth, colour, weight and variance, the loss, the grid gradients and the ray gradients (hence the pose
// gradient) agree to 1e-4 relative in float32, for the middle, fine and colour stages, plain and
// variance-normalised; a model with the background extension is refused. Exits 77 (skipped) where no
// CUDA device answers; test_nerf_cuda_emulated runs the same cases on the SIMT emulator (tests/support/simt).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "kernels/runtime.hpp"
#include "nerf/render_cuda.hpp"
#include "nerf/slam.hpp"
#include "nerf/synthetic.hpp"

using namespace core::nerf;

namespace {

const bool kHaveDevice = [] {
  if (core::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device answers: fused rendering tests skipped\n");
    std::exit(77);
  }
  return true;
}();

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

  for (Stage stage : {Stage::middle, Stage::fine, Stage::colour})
    for (bool normalised : {false, true}) {
      CAPTURE(stage_name(stage));
      CAPTURE(normalised);
      LossOptions lo_;
      lo_.variance_normalised = normalised;
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
    }
  // The background extension has no device path: refused, never silently rendered without it.
  model.background.init(4, 2);
  RenderOutput<float> out;
  CHECK_THROWS_AS(render_loss_backward_cuda(model, Stage::colour, rays, t, LossOptions{}, out, nullptr, nullptr, nullptr),
                  std::invalid_argument);
}
