#include "nerf/slam.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "io/safetensors.hpp"
#include "nerf/optim.hpp"

namespace core::nerf {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const char* level_name(int l) {
  static const char* names[4] = {"coarse", "middle", "fine", "colour"};
  return names[l];
}

// `count` random interior pixels (with depth when need_depth), as flat indices.
std::vector<int> sample_pixels(const RgbdFrame& f, int count, int edge, bool need_depth, Rng& rng) {
  const int W = f.depth.width, H = f.depth.height;
  const int x0 = std::min(edge, W / 4), y0 = std::min(edge, H / 4);
  std::vector<int> out;
  out.reserve(std::size_t(count));
  int attempts = 0;
  while (int(out.size()) < count && attempts < 50 * count) {
    ++attempts;
    const int x = x0 + int(rng.below(std::uint64_t(W - 2 * x0))), y = y0 + int(rng.below(std::uint64_t(H - 2 * y0)));
    const int k = y * W + x;
    if (need_depth && !(f.depth.depth[std::size_t(k)] > 0)) continue;
    out.push_back(k);
  }
  return out;
}

// Adam on one pose: a left rotation increment and a translation.
struct PoseAdam {
  Adam<double> rotation{3}, translation{3};
  void step(Pose& pose, const PoseGradient& g, double lr_rotation, double lr_translation) {
    double delta_rot[3] = {0, 0, 0}, delta_trans[3] = {0, 0, 0};
    rotation.step(delta_rot, g.rotation.data(), lr_rotation);
    translation.step(delta_trans, g.translation.data(), lr_translation);
    pose.R = so3_exp(Vec3(delta_rot[0], delta_rot[1], delta_rot[2])) * pose.R;
    pose.t += Vec3(delta_trans[0], delta_trans[1], delta_trans[2]);
  }
};

// Adds the rendering loss's gradient with respect to the pose of each ray's frame (left rotation
// increment, translation) from its gradients with respect to the ray's origin and world direction.
void add_ray_pose_gradients(const RayBundle<float>& rays, const Mat<float>& d_origins, const Mat<float>& d_dirs,
                            const std::vector<int>& ray_frame, std::vector<PoseGradient>& g) {
  for (int r = 0; r < rays.rays(); ++r) {
    PoseGradient& gf = g[std::size_t(ray_frame[std::size_t(r)])];
    const Vec3 dd = d_dirs.col(r).cast<double>(), dir = rays.dirs.col(r).cast<double>();
    const Vec3 gr = dir.cross(dd);
    for (int a = 0; a < 3; ++a) {
      gf.rotation[a] += gr[a];
      gf.translation[a] += double(d_origins(a, r));
    }
  }
}

}  // namespace

NiceSlam::NiceSlam(const SlamOptions& options, const Intrinsics& camera, NiceModel<float> model)
    : opt_(options), camera_(camera), model_(std::move(model)), rng_(options.seed ^ 0x51a3ULL) {
  pixel_rays_.reserve(std::size_t(camera.width) * camera.height);
  for (int y = 0; y < camera.height; ++y)
    for (int x = 0; x < camera.width; ++x) pixel_rays_.push_back(camera.ray(x, y));
}

const NiceModel<float>& NiceSlam::model() {
  if (device_ && device_map_newer_) {
    device_->download(model_);
    device_map_newer_ = false;
  }
  return model_;
}

void NiceSlam::use_device(std::unique_ptr<MapDevice> device) {
  if (device && opt_.mapping.decoder_lr > 0)
    throw UsageError("config key 'mapping.decoder_lr': the device path keeps the decoders fixed (0 with device=cuda, "
                     "or map on the CPU)");
  if (device && opt_.mapping.refine_poses)
    throw UsageError("config key 'mapping.refine_poses': the device path computes no pose gradients in mapping "
                     "(false with device=cuda, or map on the CPU)");
  if (!device && device_) model();  // back to the CPU path with the device's map
  device_ = std::move(device);
}

double PosePrior::cost(const Pose& p, Vec3* g_rot, Vec3* g_trans) const {
  Eigen::Matrix<double, 6, 1> r;
  r.head<3>() = so3_log(mean.R.transpose() * p.R);
  r.tail<3>() = frame.transpose() * (p.t - mean.t);
  const Eigen::Matrix<double, 6, 1> Lr = information * r;
  // Log(mean.R^T Exp(d) R) = r_R + Jr^-1(r_R) R^T d to first order; r_p moves by frame^T dt.
  if (g_rot) *g_rot = weight * (p.R * so3_right_jacobian_inverse(r.head<3>()).transpose() * Lr.head<3>());
  if (g_trans) *g_trans = weight * (frame * Lr.tail<3>());
  return 0.5 * weight * r.dot(Lr);
}

Pose NiceSlam::track(const RgbdFrame& frame, const Pose& start, FrameStats& stats, const PosePrior* prior) {
  const TrackingOptions& o = opt_.tracking;
  Pose cur = start, best = start;
  double best_loss = std::numeric_limits<double>::infinity();
  PoseAdam adam;
  LossOptions lo;
  lo.variance_normalised = o.variance_normalised;
  lo.colour_weight = o.colour_weight;
  RenderCache<float> cache;
  RenderOutput<float> out;
  RenderGrad<float> grad;
  Mat<float> d_origins, d_dirs;
  std::vector<int> ray_frame;
  for (int it = 0; it < o.iterations; ++it) {
    const auto pix = sample_pixels(frame, o.pixels, o.edge, o.colour_weight == 0, rng_);
    const int R = int(pix.size());
    std::vector<Vec3> dirs(static_cast<std::size_t>(R));
    std::vector<float> depth(static_cast<std::size_t>(R));
    RayTargets<float> t;
    t.depth.resize(R);
    t.colour.resize(3, R);
    t.active.assign(std::size_t(R), 1);
    for (int r = 0; r < R; ++r) {
      const std::size_t k = std::size_t(pix[std::size_t(r)]);
      dirs[std::size_t(r)] = pixel_rays_[k];
      depth[std::size_t(r)] = frame.depth.depth[k];
      t.depth(r) = frame.depth.depth[k];
      for (int c = 0; c < 3; ++c) t.colour(c, r) = frame.color.rgb[3 * k + std::size_t(c)];
    }
    RayBundle<float> rays;
    camera_rays(cur, dirs, rays);
    sample_depths(depth, opt_.sampling, rng_, rays.z);
    if (device_) device_->render(Stage::colour, rays, out);
    else render_forward(model_, Stage::colour, rays, cache, out);
    // Rays whose depth error is far above the median (moving objects, unmapped space) do not count.
    std::vector<float> errors;
    for (int r = 0; r < R; ++r)
      if (t.depth(r) > 0) errors.push_back(std::abs(out.depth(r) - t.depth(r)));
    double l1 = 0;
    for (float e : errors) l1 += e;
    if (o.outlier_factor > 0 && !errors.empty()) {
      std::vector<float> sorted = errors;
      std::nth_element(sorted.begin(), sorted.begin() + long(sorted.size() / 2), sorted.end());
      const float limit = float(o.outlier_factor) * sorted[sorted.size() / 2];
      for (int r = 0; r < R; ++r)
        if (t.depth(r) > 0 && std::abs(out.depth(r) - t.depth(r)) > limit) t.active[std::size_t(r)] = 0;
    }
    if (opt_.uncertainty.enabled) {
      lo.variance_normalised = true;
      depth_uncertainty_weights(out, opt_.uncertainty, false, t);
    }
    std::vector<PoseGradient> g(1);
    const double prior_cost = prior ? prior->cost(cur, &g[0].rotation, &g[0].translation) : 0.0;
    double loss = 0;
    if (device_) {
      Vec3 ray_rot, ray_trans;
      loss = device_->pose_gradient(rays, t, lo, ray_rot, ray_trans) + prior_cost;
      g[0].rotation += ray_rot;
      g[0].translation += ray_trans;
    } else {
      loss = render_loss(out, t, lo, grad) + prior_cost;
      render_backward<float>(model_, rays, cache, grad, nullptr, false, &d_origins, &d_dirs);
      ray_frame.assign(std::size_t(R), 0);
      add_ray_pose_gradients(rays, d_origins, d_dirs, ray_frame, g);
    }
    if (loss < best_loss) {
      best_loss = loss;
      best = cur;
      stats.depth_l1 = errors.empty() ? 0.0 : l1 / double(errors.size());
    }
    adam.step(cur, g[0], o.lr_rotation, o.lr_translation);
  }
  stats.track_loss = std::isfinite(best_loss) ? best_loss : 0.0;
  stats.track_iterations = o.iterations;
  return best;
}

void NiceSlam::map_frames(const std::vector<const RgbdFrame*>& frames, const std::vector<Pose>& poses,
                          int iterations) {
  std::vector<Pose> fixed = poses;
  map_window(frames, fixed, iterations, nullptr);
}

void NiceSlam::map_and_refine(const std::vector<const RgbdFrame*>& frames, std::vector<Pose>& poses,
                              const std::vector<bool>& free, const std::vector<KeyframeImuFactor>& factors,
                              int iterations) {
  if (free.size() != frames.size() || poses.size() != frames.size())
    throw std::invalid_argument("map_and_refine: one pose and one free flag per frame");
  const WindowRefinement refinement{free, factors};
  map_window(frames, poses, iterations, &refinement);
}

void NiceSlam::map_window(const std::vector<const RgbdFrame*>& frames, std::vector<Pose>& poses, int iterations,
                          const WindowRefinement* refinement) {
  const MappingOptions& o = opt_.mapping;
  // Optimiser states live where the map does: on the host here, on the device for device_.
  std::vector<Adam<float>> adam;
  for (int l = 0; l < 4; ++l) adam.emplace_back(device_ ? 0 : model_.grid[l].size());
  Adam<float> background_adam(device_ ? 0 : model_.background.values.size());
  std::vector<Adam<float>> dec_adam;
  const bool train_decoders = o.decoder_lr > 0;
  if (train_decoders)
    for (int l = 0; l < 4; ++l) dec_adam.emplace_back(model_.decoder[l].parameter_count());
  if (device_) {
    device_->start_mapping();
    device_map_newer_ = device_map_newer_ || iterations > 0;
  }
  ModelGrad<float> grad;
  RenderCache<float> cache;
  RenderOutput<float> out;
  RenderGrad<float> rgrad;
  const int F = int(frames.size());
  const int per_frame = std::max(1, o.pixels / F);
  // Bundle adjustment: an Adam per free pose.
  std::vector<PoseAdam> pose_adam(static_cast<std::size_t>(F));
  std::vector<int> ray_frame;
  Mat<float> d_origins, d_dirs;

  auto step = [&](Stage stage, int it_in_stage) {
    std::vector<float> depth;
    RayBundle<float> rays;
    RayTargets<float> t;
    const int R = per_frame * F;
    rays.origins.resize(3, R);
    rays.dirs.resize(3, R);
    t.depth.resize(R);
    t.colour.resize(3, R);
    t.active.assign(std::size_t(R), 1);
    int r = 0;
    ray_frame.clear();
    for (int f = 0; f < F; ++f) {
      const RgbdFrame& fr = *frames[std::size_t(f)];
      const auto pix = sample_pixels(fr, per_frame, opt_.tracking.edge, stage != Stage::colour, rng_);
      for (int k : pix) {
        rays.origins.col(r) = poses[std::size_t(f)].t.cast<float>();
        rays.dirs.col(r) = (poses[std::size_t(f)].R * pixel_rays_[std::size_t(k)]).cast<float>();
        t.depth(r) = fr.depth.depth[std::size_t(k)];
        depth.push_back(fr.depth.depth[std::size_t(k)]);
        for (int c = 0; c < 3; ++c) t.colour(c, r) = fr.color.rgb[3 * std::size_t(k) + std::size_t(c)];
        ray_frame.push_back(f);
        ++r;
      }
    }
    rays.origins.conservativeResize(3, r);
    rays.dirs.conservativeResize(3, r);
    t.depth.conservativeResize(r);
    t.colour.conservativeResize(3, r);
    t.active.resize(std::size_t(r));
    sample_depths(depth, opt_.sampling, rng_, rays.z);
    LossOptions lo;
    lo.colour_weight = stage == Stage::colour ? o.colour_weight : 0.0;
    double lr[4] = {0, 0, 0, 0};
    for (int l = 0; l < 4; ++l) {
      if (!stage_uses(stage, Level(l))) continue;
      switch (Level(l)) {
        case Level::coarse: lr[l] = o.lr_coarse; break;
        case Level::middle: lr[l] = stage == Stage::middle ? o.lr_middle : o.lr_middle_late; break;
        case Level::fine: lr[l] = o.lr_fine; break;
        case Level::colour: lr[l] = o.lr_colour; break;
      }
    }
    if (device_) {
      if (opt_.uncertainty.enabled) {
        device_->render(stage, rays, out);
        depth_uncertainty_weights(out, opt_.uncertainty, true, t);
      }
      const double loss = device_->map_step(stage, rays, t, lo, lr, o.lr_background);
      if (it_in_stage == 0 || it_in_stage + 1 == iterations)
        log::debug("mapping iteration {} ({} stage, device): loss {:.5f} over {} rays", it_in_stage, stage_name(stage),
                   loss, r);
      return;
    }
    render_forward(model_, stage, rays, cache, out);
    if (opt_.uncertainty.enabled) depth_uncertainty_weights(out, opt_.uncertainty, true, t);
    const double loss = render_loss(out, t, lo, rgrad);
    if (it_in_stage == 0 || it_in_stage + 1 == iterations)
      log::debug("mapping iteration {} ({} stage): loss {:.5f} over {} rays", it_in_stage, stage_name(stage), loss, r);
    const bool refine = refinement && stage == Stage::colour;
    grad.zero(model_);
    render_backward<float>(model_, rays, cache, rgrad, &grad, train_decoders, refine ? &d_origins : nullptr,
                           refine ? &d_dirs : nullptr);
    if (refine) {
      std::vector<PoseGradient> g(static_cast<std::size_t>(F));
      add_ray_pose_gradients(rays, d_origins, d_dirs, ray_frame, g);
      for (const KeyframeImuFactor& factor : refinement->factors)
        factor.cost(poses[std::size_t(factor.first())], poses[std::size_t(factor.second())],
                    &g[std::size_t(factor.first())], &g[std::size_t(factor.second())]);
      for (int f = 0; f < F; ++f)
        if (refinement->free[std::size_t(f)])
          pose_adam[std::size_t(f)].step(poses[std::size_t(f)], g[std::size_t(f)], o.lr_pose_rotation,
                                         o.lr_pose_translation);
    }
    if (stage == Stage::colour && model_.background.enabled())
      background_adam.step(model_.background.values.data(), grad.background.data(), o.lr_background);
    for (int l = 0; l < 4; ++l) {
      if (!stage_uses(stage, Level(l))) continue;
      adam[std::size_t(l)].step(model_.grid[l].values.data(), grad.grid[l].data(), lr[l]);
      if (train_decoders) {
        // Decoder parameters as one flat array per decoder.
        std::vector<std::size_t> sizes, gsizes;
        auto blocks = model_.decoder[l].parameter_blocks(sizes);
        auto gblocks = grad.decoder[l].parameter_blocks(gsizes);
        std::vector<float> flat, gflat;
        for (std::size_t b = 0; b < blocks.size(); ++b) {
          flat.insert(flat.end(), blocks[b], blocks[b] + sizes[b]);
          gflat.insert(gflat.end(), gblocks[b], gblocks[b] + sizes[b]);
        }
        dec_adam[std::size_t(l)].step(flat.data(), gflat.data(), o.decoder_lr);
        std::size_t off = 0;
        for (std::size_t b = 0; b < blocks.size(); ++b) {
          std::copy(flat.begin() + long(off), flat.begin() + long(off + sizes[b]), blocks[b]);
          off += sizes[b];
        }
      }
    }
  };
  for (int it = 0; it < iterations; ++it) {
    const Stage stage = it < o.middle_ratio * iterations ? Stage::middle
                        : it < o.fine_ratio * iterations ? Stage::fine
                                                         : Stage::colour;
    step(stage, it);
    if (o.coarse_every > 0 && stage == Stage::middle && it % o.coarse_every == 0) step(Stage::coarse, it);
  }
}

std::vector<std::size_t> NiceSlam::select_window(const RgbdFrame& frame, const Pose& pose) {
  std::vector<std::size_t> chosen;
  if (keyframes_.empty() || opt_.mapping.window <= 1) return chosen;
  // Points of the current frame in the world.
  Rng rng(frames_seen_);
  const auto pix = sample_pixels(frame, 200, 0, true, rng);
  std::vector<Vec3> points;
  for (int k : pix) points.push_back(pose * (pixel_rays_[std::size_t(k)] * double(frame.depth.depth[std::size_t(k)])));
  std::vector<std::pair<double, std::size_t>> overlap;
  for (std::size_t i = 0; i + 1 < keyframes_.size(); ++i) {  // the newest keyframe is always in the window
    const Pose inv = keyframes_[i].pose.inverse();
    int inside = 0;
    for (const Vec3& p : points) {
      const Vec3 q = inv * p;
      if (q.z() <= 0) continue;
      const double u = camera_.fx * q.x() / q.z() + camera_.cx, v = camera_.fy * q.y() / q.z() + camera_.cy;
      inside += u >= 0 && v >= 0 && u <= camera_.width - 1 && v <= camera_.height - 1;
    }
    if (inside > 0) overlap.push_back({double(inside) / double(points.size()), i});
  }
  std::stable_sort(overlap.begin(), overlap.end(), [](auto& a, auto& b) { return a.first > b.first; });
  chosen.push_back(keyframes_.size() - 1);
  for (const auto& [score, i] : overlap) {
    if (int(chosen.size()) >= opt_.mapping.window - 1) break;
    chosen.push_back(i);
  }
  return chosen;
}

PosePrior NiceSlam::imu_prior(const ImuPreintegration& pre, const Pose& previous, const Vec3& velocity) const {
  const ImuOptions& o = opt_.imu;
  PosePrior prior;
  Vec3 v;
  pre.predict(previous, velocity, bias_, prior.mean, v);
  prior.frame = previous.R;
  prior.information = imu_information(pre, previous.R);
  prior.weight = o.weight;
  return prior;
}

Eigen::Matrix<double, 6, 6> NiceSlam::imu_information(const ImuPreintegration& pre, const Mat3& R) const {
  const ImuOptions& o = opt_.imu;
  // Covariance of (r_R, r_p): the preintegrated one with the velocity marginalised out (the velocity is
  // not a variable of the factor, so its rows and columns drop), plus the earlier state's uncertainty.
  const Mat9& C = pre.covariance();
  Eigen::Matrix<double, 6, 6> S;
  S << C.block<3, 3>(0, 0), C.block<3, 3>(0, 6), C.block<3, 3>(6, 0), C.block<3, 3>(6, 6);
  const double dt = pre.dt();
  S.block<3, 3>(0, 0) += Mat3::Identity() * o.sigma_rotation * o.sigma_rotation;
  // The velocity's covariance (from the window's least squares) moves the predicted position by v dt.
  S.block<3, 3>(3, 3) +=
      Mat3::Identity() * o.sigma_position * o.sigma_position + R.transpose() * velocity_cov_ * R * dt * dt;
  return S.inverse();
}

NiceSlam::WindowRefinement NiceSlam::window_refinement(const std::vector<std::size_t>& indices,
                                                       const std::vector<Pose>& poses) const {
  WindowRefinement w;
  std::vector<int> order(indices.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return indices[std::size_t(a)] < indices[std::size_t(b)]; });
  w.free.assign(indices.size(), true);
  w.free[std::size_t(order.front())] = false;  // the earliest frame holds the gauge
  if (!opt_.imu.enabled || !velocity_known_) return w;
  const ImuNoise noise{opt_.imu.gyro_noise, opt_.imu.accel_noise};
  for (std::size_t k = 0; k + 1 < order.size(); ++k) {
    const int a = order[k], b = order[k + 1];
    const std::size_t ia = indices[std::size_t(a)], ib = indices[std::size_t(b)];
    ImuPreintegration pre(bias_, noise);
    pre.integrate(imu_, trajectory_[ia].timestamp, trajectory_[ib].timestamp);
    const Eigen::Matrix<double, 6, 6> information = imu_information(pre, poses[std::size_t(a)].R);
    w.factors.emplace_back(a, b, std::move(pre), bias_, velocities_[ia], information, opt_.imu.mapping_weight);
  }
  return w;
}

void NiceSlam::estimate_velocities_and_bias() {
  const ImuOptions& o = opt_.imu;
  const std::size_t n = trajectory_.size();
  const std::size_t first = n > std::size_t(o.window) ? n - std::size_t(o.window) : 0;
  const int F = int(n - first), V = 3 * F, X = V + 3;  // velocities, then the accelerometer bias update
  // Gyroscope bias update: r_R = Log(Delta R(b)^T R_i^T R_j) - dR/db_g delta b_g.
  Mat3 Hg = Mat3::Identity() / (o.prior_gyro_bias * o.prior_gyro_bias);
  Vec3 bg = Vec3::Zero();
  for (std::size_t j = first + 1; j < n; ++j) {
    const ImuPreintegration& pre = preintegrations_[j - 1];
    const Pose &pi = trajectory_[j - 1].pose, &pj = trajectory_[j].pose;
    const Vec3 r = so3_log(pre.delta_R(bias_).transpose() * pi.R.transpose() * pj.R);
    const double var = pre.covariance().block<3, 3>(0, 0).trace() / 3 + 2 * o.sigma_rotation * o.sigma_rotation;
    Hg += pre.dR_dbg().transpose() * pre.dR_dbg() / var;
    bg += pre.dR_dbg().transpose() * r / var;
  }
  bias_.gyro += Hg.ldlt().solve(bg);
  // Velocities and accelerometer bias update from the velocity and position residuals (linear in both).
  Eigen::MatrixXd H = Eigen::MatrixXd::Zero(X, X);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(X);
  H.block<3, 3>(V, V) = Mat3::Identity() / (o.prior_accel_bias * o.prior_accel_bias);
  auto add = [&](const Eigen::Matrix<double, 3, Eigen::Dynamic>& J, const Vec3& c, double var) {
    // residual = J x - c
    H += J.transpose() * J / var;
    b += J.transpose() * c / var;
  };
  for (std::size_t j = first + 1; j < n; ++j) {
    const ImuPreintegration& pre = preintegrations_[j - 1];
    const Pose &pi = trajectory_[j - 1].pose, &pj = trajectory_[j].pose;
    const double dt = pre.dt();
    const int ci = 3 * int(j - 1 - first), cj = ci + 3;
    const Mat3 RiT = pi.R.transpose();
    Eigen::Matrix<double, 3, Eigen::Dynamic> J = Eigen::Matrix<double, 3, Eigen::Dynamic>::Zero(3, X);
    // r_v = R_i^T (v_j - v_i - g dt) - Delta v(b) - dv/db_a delta b_a
    J.block<3, 3>(0, cj) = RiT;
    J.block<3, 3>(0, ci) = -RiT;
    J.block<3, 3>(0, V) = -pre.dv_dba();
    add(J, RiT * kGravity * dt + pre.delta_v(bias_),
        pre.covariance().block<3, 3>(3, 3).trace() / 3 + 2 * std::pow(o.sigma_rotation * 9.81 * dt, 2));
    // r_p = R_i^T (p_j - p_i - v_i dt - g dt^2 / 2) - Delta p(b) - dp/db_a delta b_a
    J.setZero();
    J.block<3, 3>(0, ci) = -RiT * dt;
    J.block<3, 3>(0, V) = -pre.dp_dba();
    add(J, -RiT * (pj.t - pi.t - 0.5 * kGravity * dt * dt) + pre.delta_p(bias_),
        pre.covariance().block<3, 3>(6, 6).trace() / 3 + 2 * o.sigma_position * o.sigma_position);
  }
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(H);
  const Eigen::VectorXd x = ldlt.solve(b);
  for (int f = 0; f < F; ++f) velocities_[first + std::size_t(f)] = x.segment<3>(3 * f);
  // Covariance of the newest velocity: the corresponding block of H^-1.
  Eigen::MatrixXd E = Eigen::MatrixXd::Zero(X, 3);
  E.block<3, 3>(V - 3, 0) = Mat3::Identity();
  velocity_cov_ = ldlt.solve(E).block<3, 3>(V - 3, 0);
  bias_.accel += x.segment<3>(V);
  velocity_known_ = true;
}

FrameStats NiceSlam::process(const RgbdFrame& frame) {
  FrameStats s;
  s.index = frames_seen_;
  s.timestamp = frame.timestamp;
  const auto t0 = std::chrono::steady_clock::now();
  Pose pose;
  if (frames_seen_ == 0) {
    pose = frame.groundtruth.value_or(Pose{});  // the first pose anchors the map, as the reference does
  } else if (opt_.use_groundtruth_poses) {
    if (!frame.groundtruth)
      throw DataError("frame " + std::to_string(frames_seen_) + " has no ground-truth pose (use_groundtruth_poses)");
    pose = *frame.groundtruth;
  } else {
    const std::size_t n = trajectory_.size();
    Pose predicted = trajectory_[n - 1].pose;
    if (n >= 2) predicted = predicted * (trajectory_[n - 2].pose.inverse() * trajectory_[n - 1].pose);
    predicted.R = nearest_rotation(predicted.R);  // the composition amplifies rounding off SO(3) (se3.hpp)
    std::optional<PosePrior> prior;
    if (opt_.imu.enabled) {
      ImuPreintegration pre(bias_, ImuNoise{opt_.imu.gyro_noise, opt_.imu.accel_noise});
      pre.integrate(imu_, trajectory_[n - 1].timestamp, frame.timestamp);
      if (velocity_known_) prior = imu_prior(pre, trajectory_[n - 1].pose, velocities_.back());
      if (prior) predicted = prior->mean;
      preintegrations_.push_back(std::move(pre));
    }
    pose = track(frame, predicted, s, prior ? &*prior : nullptr);
  }
  s.track_s = seconds_since(t0);
  trajectory_.push_back({frame.timestamp, pose});
  if (opt_.imu.enabled) {
    velocities_.push_back(velocities_.empty() ? Vec3::Zero() : velocities_.back());
    if (frames_seen_ > 0 && !opt_.use_groundtruth_poses) estimate_velocities_and_bias();
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (frames_seen_ == 0) {
    map_frames({&frame}, {pose}, opt_.mapping.first_iterations);
    s.map_iterations = opt_.mapping.first_iterations;
  } else if (frames_seen_ % std::size_t(opt_.mapping.every) == 0) {
    const std::vector<std::size_t> window = select_window(frame, pose);
    std::vector<const RgbdFrame*> frames{&frame};
    std::vector<Pose> poses{pose};
    std::vector<std::size_t> indices{frames_seen_};
    for (std::size_t i : window) {
      frames.push_back(&keyframes_[i].frame);
      poses.push_back(keyframes_[i].pose);
      indices.push_back(keyframes_[i].index);
    }
    if (opt_.mapping.refine_poses && !opt_.use_groundtruth_poses && frames.size() > 1) {
      const WindowRefinement refinement = window_refinement(indices, poses);
      map_window(frames, poses, opt_.mapping.iterations, &refinement);
      pose = poses[0];
      trajectory_.back().pose = pose;
      for (std::size_t k = 0; k < window.size(); ++k) {
        Keyframe& kf = keyframes_[window[k]];
        kf.pose = poses[k + 1];
        trajectory_[kf.index].pose = kf.pose;
      }
    } else {
      map_window(frames, poses, opt_.mapping.iterations, nullptr);
    }
    s.map_iterations = opt_.mapping.iterations;
  }
  s.map_s = seconds_since(t1);
  s.keyframe = frames_seen_ % std::size_t(opt_.mapping.keyframe_every) == 0;
  s.pose = pose;
  if (s.keyframe) keyframes_.push_back({frame, pose, frames_seen_});
  if (frame.groundtruth) s.position_error = (pose.t - frame.groundtruth->t).norm();
  ++frames_seen_;
  return s;
}

void slam_bound(const SlamOptions& o, const Intrinsics& camera, const RgbdFrame& first, const Pose& pose, Vec3& lo,
                Vec3& hi) {
  if (o.bound.size() == 6) {
    lo = Vec3(o.bound[0], o.bound[1], o.bound[2]);
    hi = Vec3(o.bound[3], o.bound[4], o.bound[5]);
    if (!((hi - lo).array() > 0).all()) throw UsageError("config key 'bound': every max must exceed its min");
    return;
  }
  if (!o.bound.empty()) throw UsageError("config key 'bound': expected 6 numbers or []");
  lo = Vec3::Constant(1e300);
  hi = Vec3::Constant(-1e300);
  for (int y = 0; y < camera.height; ++y)
    for (int x = 0; x < camera.width; ++x) {
      const double z = first.depth.at(x, y);
      if (!(z > 0)) continue;
      const Vec3 p = pose * (camera.ray(x, y) * z);
      lo = lo.cwiseMin(p);
      hi = hi.cwiseMax(p);
    }
  if (!(hi.array() >= lo.array()).all()) throw DataError("the first frame has no valid depth: cannot size the scene bound");
  lo = lo.cwiseMin(pose.t) - Vec3::Constant(o.bound_margin);
  hi = hi.cwiseMax(pose.t) + Vec3::Constant(o.bound_margin);
}

void add_decoders(io::SafetensorsWriter& w, const NiceModel<float>& model) {
  for (int l = 0; l < 4; ++l) {
    const auto& d = model.decoder[l];
    for (std::size_t k = 0; k < d.W.size(); ++k) {
      const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rm = d.W[k];
      w.add<float>(std::string("decoder.") + level_name(l) + ".W" + std::to_string(k), {rm.rows(), rm.cols()},
                   std::span<const float>(rm.data(), std::size_t(rm.size())));
      w.add<float>(std::string("decoder.") + level_name(l) + ".b" + std::to_string(k), {d.b[k].size()},
                   std::span<const float>(d.b[k].data(), std::size_t(d.b[k].size())));
    }
  }
}

void save_decoders(const std::filesystem::path& path, const NiceModel<float>& model, const nlohmann::json& provenance) {
  io::SafetensorsWriter w;
  add_decoders(w, model);
  w.set_metadata("provenance", provenance.dump());
  w.write(path);
}

void load_decoders(const std::filesystem::path& path, NiceModel<float>& model) {
  const io::SafetensorsFile f(path);
  for (int l = 0; l < 4; ++l) {
    auto& d = model.decoder[l];
    for (std::size_t k = 0; k < d.W.size(); ++k) {
      const std::string wn = std::string("decoder.") + level_name(l) + ".W" + std::to_string(k);
      const std::string bn = std::string("decoder.") + level_name(l) + ".b" + std::to_string(k);
      const auto wt = f.get(wn), bt = f.get(bn);
      if (wt.shape != std::vector<std::int64_t>{d.W[k].rows(), d.W[k].cols()} ||
          bt.shape != std::vector<std::int64_t>{d.b[k].size()})
        throw DataError(path.string() + ": tensor " + wn + " has shape [" + std::to_string(wt.shape.at(0)) + ", " +
                        std::to_string(wt.shape.size() > 1 ? wt.shape[1] : 0) +
                        "], which does not fit model.channels / model.hidden of this run");
      const auto wv = io::to_f32(wt), bv = io::to_f32(bt);
      d.W[k] = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
          wv.data(), d.W[k].rows(), d.W[k].cols());
      d.b[k] = Eigen::Map<const Col<float>>(bv.data(), d.b[k].size());
    }
  }
}

std::filesystem::path shipped_decoders_path() {
  return std::filesystem::path(NERF_SOURCE_DIR) / "datasets/nice-slam-run/decoders.safetensors";
}

}  // namespace core::nerf
