// The synthetic sequence: analytic motion derivatives against finite differences, exact depth against
// the scene's occupancy, determinism, the variants' defining properties.
#include <doctest/doctest.h>

#include <cmath>

#include "nerf/synthetic.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::nerf;
using namespace core::test;

TEST_CASE("spline trajectory: velocity, acceleration and body rate match finite differences") {
  const SyntheticScene scene(3, "default");
  const SplineTrajectory traj(3, 6.0, 0.5, scene);
  const double h = 1e-5;
  for (double t : {0.3, 1.7, 2.2, 4.9}) {
    const auto s = traj.at(t), sp = traj.at(t + h), sm = traj.at(t - h);
    CHECK((s.velocity - (sp.pose.t - sm.pose.t) / (2 * h)).norm() < 1e-6);
    CHECK((s.acceleration - (sp.velocity - sm.velocity) / (2 * h)).norm() < 1e-5);
    const Vec3 w = so3_log(sm.pose.R.transpose() * sp.pose.R) / (2 * h);
    CHECK((s.omega_body - w).norm() < 1e-6);
    // The camera stays in the free part of the room.
    CHECK_FALSE(scene.occupied(s.pose.t));
  }
  // The noise-free IMU is the exact motion: gravity appears as +9.81 up in specific force.
  SynthOptions o;
  o.noise = false;
  const auto imu = synthesize_imu(traj, o, 1.0, 1.1);
  CHECK(imu.size() == 21);
  const auto s = traj.at(imu[4].timestamp);
  CHECK((imu[4].accel - s.pose.R.transpose() * (s.acceleration - kGravity)).norm() < 1e-12);
}

TEST_CASE("noise-free depth lies on the scene's surfaces") {
  SynthOptions o;
  o.noise = false;
  o.width = 40;
  o.height = 30;
  const SyntheticScene scene(5, "default");
  const SplineTrajectory traj(5, 2.0, 0.3, scene);
  const Intrinsics cam = synth_camera(o);
  ColorImage c;
  DepthImage d;
  const Pose pose = traj.at(0.5).pose;
  render_synthetic_frame(scene, cam, pose, o, 1, c, d);
  int checked = 0;
  for (int y = 0; y < o.height; ++y)
    for (int x = 0; x < o.width; ++x) {
      const double z = d.at(x, y);
      REQUIRE(z > 0);  // a closed room: every ray hits
      const Vec3 ray = cam.ray(x, y);
      const Vec3 dir = (pose.R * ray).normalized();
      const Vec3 p = pose * (ray * z);
      CHECK_FALSE(scene.occupied(p - 1e-6 * dir));
      CHECK(scene.occupied(p + 1e-6 * dir));
      ++checked;
    }
  CHECK(checked == 1200);
}

TEST_CASE("synth writes a deterministic TUM dataset; variants differ as designed") {
  TempDir dir("nerf-synth");
  SynthOptions o;
  o.frames = 3;
  o.width = 32;
  o.height = 24;
  const auto r1 = write_synthetic_sequence(o, dir / "a");
  write_synthetic_sequence(o, dir / "b");
  for (const char* f : {"rgb.txt", "depth.txt", "groundtruth.txt", "imu.txt", "camera.json"}) {
    CHECK(fs::exists(dir / "a" / f));
    CHECK(read_text(dir / "a" / f) == read_text(dir / "b" / f));
  }
  CHECK(r1.imu_samples == std::size_t(std::floor(2 / 15.0 * 200)) + 1);
  const Dataset d = open_dataset(dir / "a", DatasetOptions{});
  REQUIRE(d.frames.size() == 3);
  CHECK(d.camera.width == 32);
  CHECK(d.frames[2].groundtruth.has_value());
  const RgbdFrame f = load_frame(d, 1);
  CHECK(f.depth.width == 32);

  // Distant background: some rays leave the room (no depth) and the mean valid fraction drops.
  o.variant = "distant-background";
  o.frames = 4;
  const auto bg = write_synthetic_sequence(o, dir / "bg");
  o.variant = "default";
  const auto base = write_synthetic_sequence(o, dir / "base");
  MESSAGE("valid depth: default " << base.valid_depth_fraction << ", distant-background " << bg.valid_depth_fraction);
  CHECK(bg.valid_depth_fraction < base.valid_depth_fraction - 0.1);
}

TEST_CASE("depth noise grows with depth; the noisy-far-depth variant is ten times noisier far away") {
  SynthOptions o;
  o.width = 64;
  o.height = 48;
  o.hole_fraction = 0;
  auto error_far = [&](const std::string& variant) {
    const SyntheticScene scene(2, variant);
    const SplineTrajectory traj(2, 1.0, 0.3, scene);
    SynthOptions exact = o;
    exact.noise = false;
    SynthOptions noisy = o;
    noisy.variant = variant;
    ColorImage c;
    DepthImage d0, d1;
    const Pose pose = traj.at(0.2).pose;
    render_synthetic_frame(scene, synth_camera(o), pose, exact, 1, c, d0);
    render_synthetic_frame(scene, synth_camera(o), pose, noisy, 1, c, d1);
    double se = 0, n = 0;
    for (std::size_t k = 0; k < d0.depth.size(); ++k)
      if (d0.depth[k] > 2.5 && d1.depth[k] > 0) {
        se += (d1.depth[k] - d0.depth[k]) * (d1.depth[k] - d0.depth[k]);
        ++n;
      }
    REQUIRE(n > 50);
    return std::sqrt(se / n);
  };
  const double normal = error_far("default"), far = error_far("noisy-far-depth");
  MESSAGE("RMS depth error beyond 2.5 m: default " << normal << ", noisy-far-depth " << far);
  CHECK(normal > 0.005);
  CHECK(normal < 0.03);
  CHECK(far > 5 * normal);
}
