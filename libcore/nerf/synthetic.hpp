// The synthetic RGB-D + IMU sequence of nice-slam-run: an analytic textured room (walls, floor, ceiling,
// seeded boxes and spheres) rendered by exact ray casting along a smooth camera trajectory (uniform cubic
// B-splines of position, yaw, pitch and roll, so velocity, angular rate and acceleration are analytic),
// with a Kinect-style depth noise model sigma(z) = a + b (z - 0.4)^2 (Nguyen et al. 2012), holes
// (grazing angles, range limits, random dropout blobs), 8-bit colour noise, and a 200 Hz IMU (gyroscope
// and accelerometer with constant seeded biases and white noise). Variants:
//   default              textured room, moderate motion;
//   noisy-far-depth      the quadratic noise term ten times larger (far depth unreliable);
//   fast-textureless     three times faster motion through nearly uniform walls;
//   distant-background   a wide window in one wall opens onto distant scenery: those rays have colour but no depth.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "nerf/dataset.hpp"
#include "nerf/imu_preintegration.hpp"

namespace core::nerf {

struct SynthOptions {
  int frames = 100;
  std::string variant = "default";
  std::uint64_t seed = 1;
  int width = 160, height = 120;
  double fov_deg = 70.0;     // horizontal field of view
  double fps = 15.0;
  double speed = 0.25;       // mean camera speed in m/s (x3 in fast-textureless)
  double imu_rate = 200.0;
  double depth_noise_a = 0.0012, depth_noise_b = 0.0019;  // sigma(z) = a + b (z - 0.4)^2, metres
  double depth_min = 0.3, depth_max = 6.0;
  double hole_fraction = 0.02;  // share of pixels dropped in random blobs
  double colour_noise = 0.01;
  double gyro_noise = 1.7e-4 * 14.142, accel_noise = 2.0e-3 * 14.142;  // per sample (density x sqrt(200 Hz))
  double gyro_bias = 0.005, accel_bias = 0.05;                         // magnitude of the constant biases
  bool noise = true;  // false: exact depth and colour, exact IMU (no bias or noise), no holes
  template <class V>
  void visit(V& v) {
    v("frames", frames, "number of frames", core::in_range(2, 100000));
    v("variant", variant, "default | noisy-far-depth | fast-textureless | distant-background",
      core::one_of({"default", "noisy-far-depth", "fast-textureless", "distant-background"}));
    v("seed", seed, "seed of the scene, trajectory and noise");
    v("width", width, "image width in pixels", core::in_range(8, 4096));
    v("height", height, "image height in pixels", core::in_range(8, 4096));
    v("fov_deg", fov_deg, "horizontal field of view in degrees", core::in_range(20.0, 150.0));
    v("fps", fps, "frames per second", core::in_range(1.0, 1000.0));
    v("speed", speed, "mean camera speed in m/s", core::in_range(0.0, 10.0));
    v("imu_rate", imu_rate, "IMU samples per second", core::in_range(10.0, 10000.0));
    v("depth_noise_a", depth_noise_a, "depth noise sigma(z) = a + b (z - 0.4)^2: a in metres", core::at_least(0.0));
    v("depth_noise_b", depth_noise_b, "depth noise quadratic coefficient b", core::at_least(0.0));
    v("depth_min", depth_min, "no depth nearer than this (m)", core::at_least(0.0));
    v("depth_max", depth_max, "no depth farther than this (m)", core::positive<double>());
    v("hole_fraction", hole_fraction, "share of pixels dropped in random blobs", core::in_range(0.0, 0.9));
    v("colour_noise", colour_noise, "colour noise standard deviation (0..1 scale)", core::at_least(0.0));
    v("gyro_noise", gyro_noise, "gyroscope white noise per sample (rad/s)", core::at_least(0.0));
    v("accel_noise", accel_noise, "accelerometer white noise per sample (m/s^2)", core::at_least(0.0));
    v("gyro_bias", gyro_bias, "gyroscope bias magnitude (rad/s)", core::at_least(0.0));
    v("accel_bias", accel_bias, "accelerometer bias magnitude (m/s^2)", core::at_least(0.0));
    v("noise", noise, "false: exact images and IMU (no noise, holes or biases)");
  }
};

// A ray's first surface.
struct SurfaceHit {
  double t = std::numeric_limits<double>::infinity();  // distance along the unit direction; inf: none
  Vec3 normal = Vec3::Zero();
  int material = -1;
  bool hit() const { return std::isfinite(t); }
};

class SyntheticScene {
 public:
  SyntheticScene(std::uint64_t seed, const std::string& variant);
  SurfaceHit cast(const Vec3& origin, const Vec3& unit_dir) const;
  Vec3 albedo(const Vec3& p, int material) const;       // surface colour in [0, 1]
  Vec3 background(const Vec3& unit_dir) const;          // colour of the distant scenery
  bool occupied(const Vec3& p) const;                   // inside an object or outside the room
  Vec3 room_min() const { return room_min_; }
  Vec3 room_max() const { return room_max_; }
  bool open_wall() const { return open_wall_; }         // the +x wall has a window (|y| < 1.6, 0.6 < z < 2.3)

 private:
  struct Box {
    Vec3 lo, hi;
  };
  struct Sphere {
    Vec3 c;
    double r;
  };
  struct Material {
    Vec3 base, tint;
    Vec3 freq;
    double amplitude;
  };
  Vec3 room_min_, room_max_;
  bool open_wall_ = false;
  std::vector<Box> boxes_;
  std::vector<Sphere> spheres_;
  std::vector<Material> materials_;  // 0..5 room faces, then boxes, then spheres
};

// Smooth camera motion: world-from-camera pose, its velocity, body angular rate and acceleration.
struct TrajectorySample {
  Pose pose;
  Vec3 velocity;      // world frame
  Vec3 acceleration;  // world frame, without gravity
  Vec3 omega_body;    // angular rate in the camera (= IMU) frame
};

class SplineTrajectory {
 public:
  SplineTrajectory(std::uint64_t seed, double duration, double speed, const SyntheticScene& scene);
  TrajectorySample at(double t) const;
  double duration() const { return duration_; }

 private:
  double duration_, segment_;
  std::vector<Vec3> ctrl_pos_;
  std::vector<Vec3> ctrl_ang_;  // yaw, pitch, roll
};


struct SynthResult {
  std::filesystem::path dir;
  int frames = 0;
  std::size_t imu_samples = 0;
  double path_length = 0;
  double valid_depth_fraction = 0;
  Vec3 gyro_bias = Vec3::Zero(), accel_bias = Vec3::Zero();
  nlohmann::json to_json() const;
};

Intrinsics synth_camera(const SynthOptions& options);

// Renders one frame at pose (camera to world); rng drives noise and holes when options.noise.
void render_synthetic_frame(const SyntheticScene& scene, const Intrinsics& camera, const Pose& pose,
                            const SynthOptions& options, std::uint64_t frame_seed, ColorImage& colour,
                            DepthImage& depth);

// The sequence in memory: frames with their ground-truth poses (timestamps from 1000 s) and camera.
struct SyntheticSequence {
  Intrinsics camera;
  std::vector<RgbdFrame> frames;
  double path_length = 0;
};
SyntheticSequence synthesize_frames(const SynthOptions& options);

// Writes the sequence in the TUM layout into dir: rgb/ and depth/ PNGs, rgb.txt, depth.txt,
// groundtruth.txt, imu.txt (`timestamp wx wy wz ax ay az`), camera.json, synth.json (the options and
// the biases drawn).
SynthResult write_synthetic_sequence(const SynthOptions& options, const std::filesystem::path& dir);

// IMU samples of the trajectory at options.imu_rate over [t0, t1], with the options' biases and noise.
std::vector<ImuSample> synthesize_imu(const SplineTrajectory& trajectory, const SynthOptions& options, double t0,
                                      double t1, Vec3* gyro_bias = nullptr, Vec3* accel_bias = nullptr);

}  // namespace core::nerf
