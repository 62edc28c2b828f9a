#include "nerf/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "common/rundir.hpp"

namespace core::nerf {

namespace fs = std::filesystem;

namespace {

Vec3 uniform_vec(Rng& rng, const Vec3& lo, const Vec3& hi) {
  return Vec3(rng.uniform(lo.x(), hi.x()), rng.uniform(lo.y(), hi.y()), rng.uniform(lo.z(), hi.z()));
}

Mat3 rot_x(double a) { return Eigen::AngleAxisd(a, Vec3::UnitX()).toRotationMatrix(); }
Mat3 rot_y(double a) { return Eigen::AngleAxisd(a, Vec3::UnitY()).toRotationMatrix(); }
Mat3 rot_z(double a) { return Eigen::AngleAxisd(a, Vec3::UnitZ()).toRotationMatrix(); }

// Camera looking along +x with y down: columns are the world images of the camera axes.
Mat3 base_rotation() {
  Mat3 R0;
  R0 << 0, 0, 1, -1, 0, 0, 0, -1, 0;
  return R0;
}

}  // namespace

SyntheticScene::SyntheticScene(std::uint64_t seed, const std::string& variant)
    : room_min_(-2.5, -2.5, 0.0), room_max_(2.5, 2.5, 2.6), open_wall_(variant == "distant-background") {
  Rng rng(seed ^ 0x5ce7e5ULL);
  const double amplitude = variant == "fast-textureless" ? 0.02 : 0.3;
  auto material = [&] {
    Material m;
    m.base = uniform_vec(rng, Vec3(0.25, 0.25, 0.25), Vec3(0.75, 0.75, 0.75));
    m.tint = uniform_vec(rng, Vec3(0.3, 0.3, 0.3), Vec3(1, 1, 1));
    m.freq = uniform_vec(rng, Vec3(3, 3, 3), Vec3(10, 10, 10));
    m.amplitude = amplitude;
    return m;
  };
  for (int f = 0; f < 6; ++f) materials_.push_back(material());
  // Objects in a ring near the walls; the camera stays within 1 m of the room's vertical axis.
  for (int k = 0; k < 4; ++k) {
    const double a = rng.uniform(0, 2 * M_PI), r = rng.uniform(1.7, 2.0);
    const Vec3 half(rng.uniform(0.15, 0.35), rng.uniform(0.15, 0.35), 0);
    const double h = rng.uniform(0.4, 1.2);
    Vec3 c(r * std::cos(a), r * std::sin(a), 0);
    Box b{c - half, c + half + Vec3(0, 0, h)};
    b.lo = b.lo.cwiseMax(room_min_ + Vec3(0.05, 0.05, 0));
    b.hi = b.hi.cwiseMin(room_max_ - Vec3(0.05, 0.05, 0.05));
    boxes_.push_back(b);
    materials_.push_back(material());
  }
  for (int k = 0; k < 3; ++k) {
    const double a = rng.uniform(0, 2 * M_PI), r = rng.uniform(1.7, 2.0);
    spheres_.push_back({Vec3(r * std::cos(a), r * std::sin(a), rng.uniform(0.4, 1.8)), rng.uniform(0.2, 0.4)});
    materials_.push_back(material());
  }
}

SurfaceHit SyntheticScene::cast(const Vec3& o, const Vec3& d) const {
  SurfaceHit best;
  // The room, seen from inside: the nearest exit plane.
  for (int ax = 0; ax < 3; ++ax) {
    if (d[ax] == 0) continue;
    const bool positive = d[ax] > 0;
    const double t = ((positive ? room_max_[ax] : room_min_[ax]) - o[ax]) / d[ax];
    if (t > 0 && t < best.t) {
      best.t = t;
      best.normal = Vec3::Zero();
      best.normal[ax] = positive ? -1 : 1;
      best.material = 2 * ax + (positive ? 1 : 0);
    }
  }
  if (open_wall_ && best.material == 1) {  // through the window in the +x wall
    const Vec3 p = o + best.t * d;
    if (std::abs(p.y()) < 1.6 && p.z() > 0.6 && p.z() < 2.3) best = SurfaceHit{};
  }
  for (std::size_t k = 0; k < boxes_.size(); ++k) {
    const Box& b = boxes_[k];
    double t0 = 0, t1 = best.t;
    int axis = -1;
    bool ok = true;
    for (int ax = 0; ax < 3 && ok; ++ax) {
      if (d[ax] == 0) {
        ok = o[ax] >= b.lo[ax] && o[ax] <= b.hi[ax];
        continue;
      }
      double ta = (b.lo[ax] - o[ax]) / d[ax], tb = (b.hi[ax] - o[ax]) / d[ax];
      if (ta > tb) std::swap(ta, tb);
      if (ta > t0) {
        t0 = ta;
        axis = ax;
      }
      t1 = std::min(t1, tb);
      ok = t0 <= t1;
    }
    if (ok && axis >= 0 && t0 > 0 && t0 < best.t) {
      best.t = t0;
      best.normal = Vec3::Zero();
      best.normal[axis] = d[axis] > 0 ? -1 : 1;
      best.material = 6 + int(k);
    }
  }
  for (std::size_t k = 0; k < spheres_.size(); ++k) {
    const Vec3 oc = o - spheres_[k].c;
    const double b = oc.dot(d), c = oc.squaredNorm() - spheres_[k].r * spheres_[k].r, disc = b * b - c;
    if (disc < 0) continue;
    const double t = -b - std::sqrt(disc);
    if (t > 0 && t < best.t) {
      best.t = t;
      best.normal = (o + t * d - spheres_[k].c).normalized();
      best.material = 6 + int(boxes_.size() + k);
    }
  }
  return best;
}

Vec3 SyntheticScene::albedo(const Vec3& p, int material) const {
  const Material& m = materials_.at(std::size_t(material));
  const double s1 = std::sin(m.freq.x() * (p.x() + 0.7 * p.y()));
  const double s2 = std::sin(m.freq.y() * (p.y() - 0.3 * p.z()));
  const double s3 = std::sin(m.freq.z() * (p.z() + 0.5 * p.x()) + 1.0);
  const double tex = 0.5 * (s1 + s2 * s3);
  return (m.base + m.amplitude * tex * m.tint).cwiseMax(0.0).cwiseMin(1.0);
}

Vec3 SyntheticScene::background(const Vec3& d) const {
  const double az = std::atan2(d.y(), d.x()), el = std::asin(std::clamp(d.z(), -1.0, 1.0));
  const double hills = 0.15 * std::sin(4 * az) + 0.08 * std::sin(11 * az + 1);
  if (el < hills) return Vec3(0.25, 0.45, 0.2) * (0.8 + 0.2 * std::sin(20 * az) * std::cos(9 * el));
  return Vec3(0.55, 0.7, 0.95) * (0.75 + 0.25 * std::min(1.0, el * 2)) + Vec3(0.1, 0.1, 0.1) * std::sin(6 * az) * std::cos(5 * el);
}

bool SyntheticScene::occupied(const Vec3& p) const {
  for (int ax = 0; ax < 3; ++ax) {
    if (ax == 0 && open_wall_ && p.x() > room_max_.x() && std::abs(p.y()) < 1.6 && p.z() > 0.6 && p.z() < 2.3) return false;
    if (p[ax] < room_min_[ax] || p[ax] > room_max_[ax]) return true;
  }
  for (const Box& b : boxes_)
    if ((p.array() >= b.lo.array()).all() && (p.array() <= b.hi.array()).all()) return true;
  for (const Sphere& s : spheres_)
    if ((p - s.c).norm() <= s.r) return true;
  return false;
}

SplineTrajectory::SplineTrajectory(std::uint64_t seed, double duration, double speed, const SyntheticScene& scene)
    : duration_(duration) {
  Rng rng(seed ^ 0x7a1ec7ULL);
  // About 0.5 m of path per segment at the asked speed.
  const int segments = std::max(1, int(std::ceil(duration * speed / 0.5)));
  segment_ = duration / segments;
  const bool face_opening = scene.open_wall();
  double yaw = rng.uniform(-M_PI, M_PI);
  if (face_opening) yaw = 0;
  for (int k = 0; k < segments + 3; ++k) {
    ctrl_pos_.push_back(uniform_vec(rng, Vec3(-0.7, -0.7, 1.0), Vec3(0.7, 0.7, 1.7)));
    yaw = face_opening ? rng.uniform(-1.2, 1.2) : yaw + rng.uniform(-0.8, 0.8);
    ctrl_ang_.push_back(Vec3(yaw, rng.uniform(-0.25, 0.1), rng.uniform(-0.05, 0.05)));
  }
}

TrajectorySample SplineTrajectory::at(double t) const {
  const int segments = int(ctrl_pos_.size()) - 3;
  const double s = std::clamp(t / segment_, 0.0, double(segments));
  const int i = std::min(int(s), segments - 1);
  const double u = s - i, u2 = u * u, u3 = u2 * u;
  const double B[4] = {(1 - u) * (1 - u) * (1 - u) / 6, (3 * u3 - 6 * u2 + 4) / 6, (-3 * u3 + 3 * u2 + 3 * u + 1) / 6,
                       u3 / 6};
  const double dB[4] = {-(1 - u) * (1 - u) / 2, (3 * u2 - 4 * u) / 2, (-3 * u2 + 2 * u + 1) / 2, u2 / 2};
  const double ddB[4] = {1 - u, 3 * u - 2, -3 * u + 1, u};
  Vec3 p = Vec3::Zero(), v = Vec3::Zero(), a = Vec3::Zero(), ang = Vec3::Zero(), dang = Vec3::Zero();
  for (int k = 0; k < 4; ++k) {
    const std::size_t c = std::size_t(i + k);
    p += B[k] * ctrl_pos_[c];
    v += dB[k] / segment_ * ctrl_pos_[c];
    a += ddB[k] / (segment_ * segment_) * ctrl_pos_[c];
    ang += B[k] * ctrl_ang_[c];
    dang += dB[k] / segment_ * ctrl_ang_[c];
  }
  const double yaw = ang.x(), pitch = ang.y(), roll = ang.z();
  const Mat3 Rx = rot_x(roll), Ry = rot_y(pitch), Rz = rot_z(yaw);
  TrajectorySample out;
  out.pose.R = Rz * Ry * Rx * base_rotation();
  out.pose.t = p;
  out.velocity = v;
  out.acceleration = a;
  // Body rate of A = Rz Ry Rx: A^T dA/dt = hat(Rx^T Ry^T e_z yaw' + Rx^T e_y pitch' + e_x roll').
  const Vec3 omega_a = Rx.transpose() * Ry.transpose() * Vec3::UnitZ() * dang.x() +
                       Rx.transpose() * Vec3::UnitY() * dang.y() + Vec3::UnitX() * dang.z();
  out.omega_body = base_rotation().transpose() * omega_a;
  return out;
}

Intrinsics synth_camera(const SynthOptions& o) {
  Intrinsics c;
  c.width = o.width;
  c.height = o.height;
  c.fx = c.fy = 0.5 * o.width / std::tan(0.5 * o.fov_deg * M_PI / 180.0);
  c.cx = 0.5 * o.width - 0.5;
  c.cy = 0.5 * o.height - 0.5;
  return c;
}

void render_synthetic_frame(const SyntheticScene& scene, const Intrinsics& cam, const Pose& pose,
                            const SynthOptions& o, std::uint64_t frame_seed, ColorImage& colour, DepthImage& depth) {
  const int W = cam.width, H = cam.height;
  colour.width = depth.width = W;
  colour.height = depth.height = H;
  colour.rgb.assign(std::size_t(W) * H * 3, 0.0f);
  depth.depth.assign(std::size_t(W) * H, 0.0f);
  const double b = o.variant == "noisy-far-depth" ? 10 * o.depth_noise_b : o.depth_noise_b;
  const Vec3 light = Vec3(0.3, 0.5, 0.8).normalized();
  Rng rng(frame_seed);
  auto shade = [&](const Vec3& dir_cam, SurfaceHit* centre) {
    const Vec3 d = (pose.R * dir_cam).normalized();
    const SurfaceHit h = scene.cast(pose.t, d);
    if (centre) *centre = h;
    if (!h.hit()) return scene.background(d);
    return Vec3(scene.albedo(pose.t + h.t * d, h.material) * (0.7 + 0.3 * std::abs(h.normal.dot(light))));
  };
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      const std::size_t k = std::size_t(y) * W + x;
      SurfaceHit h;
      const Vec3 ray = cam.ray(x, y);
      shade(ray, &h);
      Vec3 c = Vec3::Zero();  // 2x2 supersampled colour
      for (double dy : {-0.25, 0.25})
        for (double dx : {-0.25, 0.25}) c += 0.25 * shade(cam.ray(x + dx, y + dy), nullptr);
      if (o.noise) c += o.colour_noise * Vec3(rng.normal(), rng.normal(), rng.normal());
      for (int ch = 0; ch < 3; ++ch) colour.rgb[3 * k + std::size_t(ch)] = float(std::clamp(c[ch], 0.0, 1.0));
      if (!h.hit()) continue;
      const Vec3 d = (pose.R * ray).normalized();
      double z = h.t / ray.norm();
      if (o.noise) {
        if (std::abs(h.normal.dot(d)) < 0.1) continue;  // grazing: no return
        z += (o.depth_noise_a + b * (z - 0.4) * (z - 0.4)) * rng.normal();
      }
      if (z < o.depth_min || z > o.depth_max) continue;
      depth.depth[k] = float(z);
    }
  if (!o.noise || o.hole_fraction <= 0) return;
  const double radius = std::max(1.5, 0.03 * W);
  const int blobs = int(std::lround(o.hole_fraction * W * H / (M_PI * radius * radius)));
  for (int n = 0; n < blobs; ++n) {
    const double cx = rng.uniform(0, W), cy = rng.uniform(0, H), r = radius * rng.uniform(0.5, 1.5);
    for (int y = std::max(0, int(cy - r)); y < std::min(H, int(cy + r) + 1); ++y)
      for (int x = std::max(0, int(cx - r)); x < std::min(W, int(cx + r) + 1); ++x)
        if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) depth.depth[std::size_t(y) * W + x] = 0.0f;
  }
}

std::vector<ImuSample> synthesize_imu(const SplineTrajectory& traj, const SynthOptions& o, double t0, double t1,
                                      Vec3* gyro_bias, Vec3* accel_bias) {
  Rng rng(o.seed ^ 0x1a1a1aULL);
  Vec3 bg = Vec3::Zero(), ba = Vec3::Zero();
  if (o.noise) {
    bg = Vec3(rng.normal(), rng.normal(), rng.normal()).normalized() * o.gyro_bias;
    ba = Vec3(rng.normal(), rng.normal(), rng.normal()).normalized() * o.accel_bias;
  }
  if (gyro_bias) *gyro_bias = bg;
  if (accel_bias) *accel_bias = ba;
  std::vector<ImuSample> out;
  const long n = long(std::floor((t1 - t0) * o.imu_rate + 1e-9));
  for (long k = 0; k <= n; ++k) {
    const double t = t0 + double(k) / o.imu_rate;
    const TrajectorySample s = traj.at(t);
    ImuSample m{t, s.omega_body + bg, s.pose.R.transpose() * (s.acceleration - kGravity) + ba};
    if (o.noise) {
      m.gyro += o.gyro_noise * Vec3(rng.normal(), rng.normal(), rng.normal());
      m.accel += o.accel_noise * Vec3(rng.normal(), rng.normal(), rng.normal());
    }
    out.push_back(m);
  }
  return out;
}

namespace {
constexpr double kTimeBase = 1000.0;  // timestamps in seconds, as TUM's (any origin)
}

SyntheticSequence synthesize_frames(const SynthOptions& o) {
  const SyntheticScene scene(o.seed, o.variant);
  const double speed = o.variant == "fast-textureless" ? 3 * o.speed : o.speed;
  const SplineTrajectory traj(o.seed, (o.frames - 1) / o.fps, speed, scene);
  SyntheticSequence seq;
  seq.camera = synth_camera(o);
  Rng seeds(o.seed ^ 0xf4a3e5ULL);
  Vec3 last = traj.at(0).pose.t;
  for (int i = 0; i < o.frames; ++i) {
    const double t = i / o.fps;
    const TrajectorySample s = traj.at(t);
    seq.path_length += (s.pose.t - last).norm();
    last = s.pose.t;
    RgbdFrame f;
    f.timestamp = kTimeBase + t;
    f.groundtruth = s.pose;
    render_synthetic_frame(scene, seq.camera, s.pose, o, seeds(), f.color, f.depth);
    seq.frames.push_back(std::move(f));
  }
  return seq;
}

SynthResult write_synthetic_sequence(const SynthOptions& o, const fs::path& dir) {
  fs::create_directories(dir / "rgb");
  fs::create_directories(dir / "depth");
  const SyntheticSequence seq = synthesize_frames(o);
  SynthResult r;
  r.dir = dir;
  r.frames = o.frames;
  r.path_length = seq.path_length;
  std::string rgb = "# colour images\n# timestamp filename\n", dep = "# depth images\n# timestamp filename\n";
  Trajectory gt;
  std::size_t valid = 0;
  for (const RgbdFrame& f : seq.frames) {
    valid += std::size_t(std::count_if(f.depth.depth.begin(), f.depth.depth.end(), [](float z) { return z > 0; }));
    char name[64];
    std::snprintf(name, sizeof name, "%.6f.png", f.timestamp);
    write_color_png(dir / "rgb" / name, f.color);
    write_depth_png(dir / "depth" / name, f.depth, 5000.0);
    char line[128];
    std::snprintf(line, sizeof line, "%.6f rgb/%s\n", f.timestamp, name);
    rgb += line;
    std::snprintf(line, sizeof line, "%.6f depth/%s\n", f.timestamp, name);
    dep += line;
    gt.push_back({f.timestamp, *f.groundtruth});
  }
  r.valid_depth_fraction = double(valid) / (double(o.frames) * seq.camera.width * seq.camera.height);
  const SyntheticScene scene(o.seed, o.variant);
  const double speed = o.variant == "fast-textureless" ? 3 * o.speed : o.speed;
  const double duration = (o.frames - 1) / o.fps;
  const SplineTrajectory traj(o.seed, duration, speed, scene);
  const auto imu = synthesize_imu(traj, o, 0.0, duration, &r.gyro_bias, &r.accel_bias);
  std::string imu_text = "# timestamp wx wy wz ax ay az (rad/s, m/s^2, IMU = camera frame)\n";
  for (const auto& m : imu) {
    char line[256];
    std::snprintf(line, sizeof line, "%.6f %.9g %.9g %.9g %.9g %.9g %.9g\n", kTimeBase + m.timestamp, m.gyro.x(),
                  m.gyro.y(), m.gyro.z(), m.accel.x(), m.accel.y(), m.accel.z());
    imu_text += line;
  }
  r.imu_samples = imu.size();
  write_file_atomic(dir / "rgb.txt", rgb);
  write_file_atomic(dir / "depth.txt", dep);
  write_file_atomic(dir / "imu.txt", imu_text);
  write_tum_trajectory(dir / "groundtruth.txt", gt);
  write_camera_json(dir / "camera.json", seq.camera, 5000.0);
  nlohmann::json info = r.to_json();
  info["options"] = {{"frames", o.frames},        {"variant", o.variant},       {"seed", o.seed},
                     {"width", o.width},          {"height", o.height},         {"fps", o.fps},
                     {"speed", o.speed},          {"imu_rate", o.imu_rate},     {"noise", o.noise},
                     {"depth_noise_a", o.depth_noise_a}, {"depth_noise_b", o.depth_noise_b},
                     {"gyro_noise", o.gyro_noise}, {"accel_noise", o.accel_noise}};
  write_file_atomic(dir / "synth.json", info.dump(2) + "\n");
  return r;
}

nlohmann::json SynthResult::to_json() const {
  return {{"dir", dir.string()},
          {"frames", frames},
          {"imu_samples", imu_samples},
          {"path_length_m", path_length},
          {"valid_depth_fraction", valid_depth_fraction},
          {"gyro_bias", {gyro_bias.x(), gyro_bias.y(), gyro_bias.z()}},
          {"accel_bias", {accel_bias.x(), accel_bias.y(), accel_bias.z()}}};
}

}  // namespace core::nerf
