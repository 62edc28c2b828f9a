#include "nerf/slam.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

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

}  // namespace

NiceSlam::NiceSlam(const SlamOptions& options, const Intrinsics& camera, NiceModel<float> model)
    : opt_(options), camera_(camera), model_(std::move(model)), rng_(options.seed ^ 0x51a3ULL) {
  pixel_rays_.reserve(std::size_t(camera.width) * camera.height);
  for (int y = 0; y < camera.height; ++y)
    for (int x = 0; x < camera.width; ++x) pixel_rays_.push_back(camera.ray(x, y));
}

Pose NiceSlam::track(const RgbdFrame& frame, const Pose& start, FrameStats& stats) {
  const TrackingOptions& o = opt_.tracking;
  Pose cur = start, best = start;
  double best_loss = std::numeric_limits<double>::infinity();
  Adam<double> adam_rot(3), adam_trans(3);
  LossOptions lo;
  lo.variance_normalised = o.variance_normalised;
  lo.colour_weight = o.colour_weight;
  RenderCache<float> cache;
  RenderOutput<float> out;
  RenderGrad<float> grad;
  Mat<float> d_origins, d_dirs;
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
    render_forward(model_, Stage::colour, rays, cache, out);
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
    const double loss = render_loss(out, t, lo, grad);
    if (loss < best_loss) {
      best_loss = loss;
      best = cur;
      stats.depth_l1 = errors.empty() ? 0.0 : l1 / double(errors.size());
    }
    render_backward<float>(model_, rays, cache, grad, nullptr, false, &d_origins, &d_dirs);
    double g_rot[3] = {0, 0, 0}, g_trans[3] = {0, 0, 0};
    for (int r = 0; r < R; ++r) {
      const Vec3 dd = d_dirs.col(r).cast<double>(), dir = rays.dirs.col(r).cast<double>();
      const Vec3 gr = dir.cross(dd);
      for (int a = 0; a < 3; ++a) {
        g_rot[a] += gr[a];
        g_trans[a] += double(d_origins(a, r));
      }
    }
    double delta_rot[3] = {0, 0, 0}, delta_trans[3] = {0, 0, 0};
    adam_rot.step(delta_rot, g_rot, o.lr_rotation);
    adam_trans.step(delta_trans, g_trans, o.lr_translation);
    cur.R = so3_exp(Vec3(delta_rot[0], delta_rot[1], delta_rot[2])) * cur.R;
    cur.t += Vec3(delta_trans[0], delta_trans[1], delta_trans[2]);
  }
  stats.track_loss = std::isfinite(best_loss) ? best_loss : 0.0;
  stats.track_iterations = o.iterations;
  return best;
}

void NiceSlam::map_frames(const std::vector<const RgbdFrame*>& frames, const std::vector<Pose>& poses,
                          int iterations) {
  const MappingOptions& o = opt_.mapping;
  std::vector<Adam<float>> adam;
  for (int l = 0; l < 4; ++l) adam.emplace_back(model_.grid[l].size());
  std::vector<Adam<float>> dec_adam;
  const bool train_decoders = o.decoder_lr > 0;
  if (train_decoders)
    for (int l = 0; l < 4; ++l) dec_adam.emplace_back(model_.decoder[l].parameter_count());
  ModelGrad<float> grad;
  RenderCache<float> cache;
  RenderOutput<float> out;
  RenderGrad<float> rgrad;
  const int F = int(frames.size());
  const int per_frame = std::max(1, o.pixels / F);

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
    for (int f = 0; f < F; ++f) {
      const RgbdFrame& fr = *frames[std::size_t(f)];
      const auto pix = sample_pixels(fr, per_frame, opt_.tracking.edge, stage != Stage::colour, rng_);
      for (int k : pix) {
        rays.origins.col(r) = poses[std::size_t(f)].t.cast<float>();
        rays.dirs.col(r) = (poses[std::size_t(f)].R * pixel_rays_[std::size_t(k)]).cast<float>();
        t.depth(r) = fr.depth.depth[std::size_t(k)];
        depth.push_back(fr.depth.depth[std::size_t(k)]);
        for (int c = 0; c < 3; ++c) t.colour(c, r) = fr.color.rgb[3 * std::size_t(k) + std::size_t(c)];
        ++r;
      }
    }
    rays.origins.conservativeResize(3, r);
    rays.dirs.conservativeResize(3, r);
    t.depth.conservativeResize(r);
    t.colour.conservativeResize(3, r);
    t.active.resize(std::size_t(r));
    sample_depths(depth, opt_.sampling, rng_, rays.z);
    render_forward(model_, stage, rays, cache, out);
    LossOptions lo;
    lo.colour_weight = stage == Stage::colour ? o.colour_weight : 0.0;
    if (opt_.uncertainty.enabled) depth_uncertainty_weights(out, opt_.uncertainty, true, t);
    const double loss = render_loss(out, t, lo, rgrad);
    if (it_in_stage == 0 || it_in_stage + 1 == iterations)
      log::debug("mapping iteration {} ({} stage): loss {:.5f} over {} rays", it_in_stage, stage_name(stage), loss, r);
    grad.zero(model_);
    render_backward<float>(model_, rays, cache, rgrad, &grad, train_decoders, nullptr, nullptr);
    for (int l = 0; l < 4; ++l) {
      if (!stage_uses(stage, Level(l))) continue;
      double lr = 0;
      switch (Level(l)) {
        case Level::coarse: lr = o.lr_coarse; break;
        case Level::middle: lr = stage == Stage::middle ? o.lr_middle : o.lr_middle_late; break;
        case Level::fine: lr = o.lr_fine; break;
        case Level::colour: lr = o.lr_colour; break;
      }
      adam[std::size_t(l)].step(model_.grid[l].values.data(), grad.grid[l].data(), lr);
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
    pose = track(frame, predicted, s);
  }
  s.track_s = seconds_since(t0);
  s.pose = pose;
  trajectory_.push_back({frame.timestamp, pose});
  const auto t1 = std::chrono::steady_clock::now();
  if (frames_seen_ == 0) {
    map_frames({&frame}, {pose}, opt_.mapping.first_iterations);
    s.map_iterations = opt_.mapping.first_iterations;
  } else if (frames_seen_ % std::size_t(opt_.mapping.every) == 0) {
    std::vector<const RgbdFrame*> frames{&frame};
    std::vector<Pose> poses{pose};
    for (std::size_t i : select_window(frame, pose)) {
      frames.push_back(&keyframes_[i].frame);
      poses.push_back(keyframes_[i].pose);
    }
    map_frames(frames, poses, opt_.mapping.iterations);
    s.map_iterations = opt_.mapping.iterations;
  }
  s.map_s = seconds_since(t1);
  s.keyframe = frames_seen_ % std::size_t(opt_.mapping.keyframe_every) == 0;
  if (s.keyframe) keyframes_.push_back({frame, pose});
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

void save_decoders(const std::filesystem::path& path, const NiceModel<float>& model, const nlohmann::json& provenance) {
  io::SafetensorsWriter w;
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
