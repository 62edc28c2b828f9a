// Slow (CI skips it): nice-slam-run's extensions measured over several seeds on the synthetic variant each
// targets against the same run with the extension off (the geometric mean ATE ratio must show a margin),
// and on the default variant (no harm); and the 50-frame synthetic run's ATE with and without noise.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>

#include "nerf/slam_job.hpp"

using namespace core;
using namespace core::nerf;

namespace {

// The CI-sized settings of configs/nice-slam-run/tiny.yaml.
RunOptions tiny(const std::string& variant, std::uint64_t seed) {
  RunOptions o;
  o.synth.frames = 20;
  o.synth.width = 80;
  o.synth.height = 60;
  o.synth.variant = variant;
  o.synth.seed = seed;
  o.seed = seed;
  o.slam.mapping.pixels = 800;
  o.slam.mapping.iterations = 40;
  o.slam.mapping.first_iterations = 150;
  o.slam.mapping.window = 4;
  o.threads = 2;
  return o;
}

double ate(const RunOptions& o, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("nerf_ext_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const RunResult r = run_slam(o, dir, nullptr);
  std::filesystem::remove_all(dir);
  return r.error.ate_rmse;
}

// Geometric mean over seeds of ATE(on) / ATE(off).
double mean_ratio(const std::string& variant, const std::function<void(SlamOptions&)>& enable, const char* label) {
  double log_sum = 0;
  const std::uint64_t seeds[] = {1, 2, 3};
  for (std::uint64_t seed : seeds) {
    RunOptions off = tiny(variant, seed), on = off;
    enable(on.slam);
    const double a = ate(off, "off"), b = ate(on, "on");
    MESSAGE(std::string(label) << " on " << variant << ", seed " << seed << ": ATE off " << 100 * a << " cm, on " << 100 * b << " cm");
    log_sum += std::log(b / a);
  }
  return std::exp(log_sum / 3);
}

}  // namespace

TEST_CASE("depth uncertainty improves noisy far depth and does not hurt the default sequence") {
  auto enable = [](SlamOptions& s) { s.uncertainty.enabled = true; };
  CHECK(mean_ratio("noisy-far-depth", enable, "uncertainty") < 0.9);
  CHECK(mean_ratio("default", enable, "uncertainty") < 1.1);
}

TEST_CASE("the background model improves distant scenery and does not hurt the default sequence") {
  auto enable = [](SlamOptions& s) { s.model.background = true; };
  CHECK(mean_ratio("distant-background", enable, "background") < 0.9);
  CHECK(mean_ratio("default", enable, "background") < 1.1);
}

TEST_CASE("the IMU factor improves fast textureless motion and does not hurt the default sequence") {
  auto enable = [](SlamOptions& s) { s.imu.enabled = true; };
  CHECK(mean_ratio("fast-textureless", enable, "imu") < 0.9);
  CHECK(mean_ratio("default", enable, "imu") < 1.1);
}

TEST_CASE("a 50-frame synthetic run: ATE < 2 cm without noise, < 3 cm with the default noise") {
  for (bool noise : {false, true}) {
    RunOptions o;  // configs/nice-slam-run/default.yaml's settings
    o.synth.frames = 50;
    o.synth.noise = noise;
    o.threads = 2;
    const double a = ate(o, noise ? "50_noisy" : "50_exact");
    MESSAGE("50 frames, noise " << noise << ": ATE " << 100 * a << " cm");
    CHECK(a < (noise ? 0.03 : 0.02));
  }
}
