#include "nerf/slam_job.hpp"

#include <chrono>
#include <cmath>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "nerf/render_cuda.hpp"

#ifdef TOOLKIT_HAVE_CUDA
#include "kernels/runtime.hpp"
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace core::nerf {

namespace fs = std::filesystem;

void set_threads(int threads) {
#ifdef _OPENMP
  if (threads > 0) omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

static NiceModel<float> make_model(const SlamOptions& o, const Vec3& lo, const Vec3& hi, std::uint64_t seed) {
  NiceModel<float> model;
  model.init(o.model, lo, hi, seed);
  if (o.decoders == "none") return model;
  const fs::path path = o.decoders.empty() ? shipped_decoders_path() : fs::path(o.decoders);
  if (!fs::exists(path))
    throw InputMissingError(path.string() + ": decoders not found (run `nice-slam-run pretrain`, or decoders=none)");
  load_decoders(path, model);
  return model;
}

void RunOptions::validate() const {
  if (device != "cuda") return;
  const SlamOptions& s = slam;
  auto refuse = [](const std::string& key, const std::string& why) {
    throw UsageError("config key '" + key + "': " + why + " with device=cuda");
  };
  if (s.model.channels > kCudaMaxChannels || 2 * s.model.channels > kCudaMaxWidth)
    refuse("model.channels", "at most " + std::to_string(kCudaMaxChannels));
  if (s.model.hidden > kCudaMaxWidth) refuse("model.hidden", "at most " + std::to_string(kCudaMaxWidth));
  if (s.sampling.stratified + s.sampling.surface > kCudaMaxSamples)
    refuse("sampling.stratified", "sampling.stratified + sampling.surface at most " + std::to_string(kCudaMaxSamples));
  if (s.mapping.decoder_lr > 0) refuse("mapping.decoder_lr", "must be 0 (the device keeps the decoders fixed)");
  if (s.mapping.refine_poses) refuse("mapping.refine_poses", "must be false (no pose gradients in the device's mapping)");
}

void check_device(const RunOptions& o) {
  if (o.device != "cuda") return;
  o.validate();
#ifdef TOOLKIT_HAVE_CUDA
  if (kernels::cuda_device_count() == 0)
    throw UsageError("device=cuda: no CUDA device answers (driver missing or no GPU visible); use device=cpu");
#else
  throw UsageError("device=cuda: this build has no CUDA (configure with -DTOOLKIT_CUDA=ON on a machine with nvcc); "
                   "use device=cpu");
#endif
}

RunResult run_slam(const RunOptions& o, const fs::path& run_dir, const FrameCallback& on_frame) {
  check_device(o);
  set_threads(o.threads);
  const auto t0 = std::chrono::steady_clock::now();
  fs::path dir = o.dataset;
  if (dir.empty()) {
    dir = run_dir / "artifacts" / "synth";
    log::info("no dataset given: synthesizing {} frames (variant {}, seed {}) into {}", o.synth.frames,
              o.synth.variant, o.synth.seed, dir.string());
    write_synthetic_sequence(o.synth, dir);
  }
  const Dataset data = open_dataset(dir, o.data);
  RunResult res;
  res.dataset = data.describe();
  res.has_groundtruth = data.has_groundtruth();
  SlamOptions so = o.slam;
  so.seed = o.seed;
  std::unique_ptr<NiceSlam> slam;
  for (std::size_t i = 0; i < data.frames.size(); ++i) {
    if (stop_requested()) {
      res.stopped = true;
      break;
    }
    const auto tl = std::chrono::steady_clock::now();
    const RgbdFrame frame = load_frame(data, i);
    res.load_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - tl).count();
    if (!slam) {
      Vec3 lo, hi;
      slam_bound(so, data.camera, frame, frame.groundtruth.value_or(Pose{}), lo, hi);
      log::info("scene bound [{:.2f} {:.2f} {:.2f}] .. [{:.2f} {:.2f} {:.2f}]", lo.x(), lo.y(), lo.z(), hi.x(), hi.y(),
                hi.z());
      slam = std::make_unique<NiceSlam>(so, data.camera, make_model(so, lo, hi, o.seed));
#ifdef TOOLKIT_HAVE_CUDA
      if (o.device == "cuda") {
        slam->use_device(make_cuda_map(slam->model()));
        log::info("device: {} ({:.1f} MiB for the map)", slam->device()->name(), double(slam->device()->bytes()) / 1048576);
      }
#endif
      if (so.imu.enabled) slam->set_imu(read_imu_file(dir / "imu.txt"));
    }
    const FrameStats s = slam->process(frame);
    res.frames.push_back(s);
    res.track_s += s.track_s;
    res.map_s += s.map_s;
    res.track_iterations += s.track_iterations;
    res.map_iterations += s.map_iterations;
    res.trajectory = slam->trajectory();
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (on_frame) on_frame(s, res);
  }
  if (slam) res.model = slam->model();
  res.device = o.device;
  if (slam && slam->device()) {
    res.device_name = slam->device()->name();
    res.device_map_mib = double(slam->device()->bytes()) / 1048576;
#ifdef TOOLKIT_HAVE_CUDA
    res.device_used_mib = double(kernels::device_memory_used()) / 1048576;
#endif
  }
  if (res.has_groundtruth && res.trajectory.size() >= 3)
    res.error = evaluate_trajectory(res.trajectory, data.groundtruth, EvalOptions{});
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

nlohmann::json RunResult::to_json() const {
  const double n = double(frames.size());
  nlohmann::json j = {{"frames", frames.size()},
                      {"stopped", stopped},
                      {"seconds", seconds},
                      {"fps", seconds > 0 ? n / seconds : 0.0},
                      {"time_s", {{"load", load_s}, {"tracking", track_s}, {"mapping", map_s}}},
                      {"ms_per_tracking_iteration", track_iterations ? 1e3 * track_s / track_iterations : 0.0},
                      {"ms_per_mapping_iteration", map_iterations ? 1e3 * map_s / map_iterations : 0.0},
                      {"dataset", dataset},
                      {"device", device}};
  if (!device_name.empty()) {
    j["device_name"] = device_name;
    j["device_map_mib"] = device_map_mib;
    j["device_used_mib"] = device_used_mib;
  }
  double l1 = 0;
  int tracked = 0;
  for (const auto& f : frames)
    if (f.track_iterations > 0) {
      l1 += f.depth_l1;
      ++tracked;
    }
  j["depth_l1"] = tracked ? l1 / tracked : 0.0;
  if (has_groundtruth && trajectory.size() >= 3) {
    j["ate_rmse"] = error.ate_rmse;
    j["rpe_trans"] = error.rpe_trans;
    j["rpe_rot"] = error.rpe_rot_deg;
  }
  return j;
}

double rendered_depth_l1(const NiceModel<float>& model, const SamplingOptions& sampling, const Intrinsics& camera,
                         const RgbdFrame& frame, const Pose& pose, int pixels, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Vec3> dirs;
  std::vector<float> depth;
  for (int n = 0; n < 50 * pixels && int(dirs.size()) < pixels; ++n) {
    const int x = int(rng.below(std::uint64_t(camera.width))), y = int(rng.below(std::uint64_t(camera.height)));
    const float z = frame.depth.at(x, y);
    if (!(z > 0)) continue;
    dirs.push_back(camera.ray(x, y));
    depth.push_back(z);
  }
  RayBundle<float> rays;
  camera_rays(pose, dirs, rays);
  sample_depths(depth, sampling, rng, rays.z);
  RenderCache<float> cache;
  RenderOutput<float> out;
  render_forward(model, Stage::colour, rays, cache, out);
  double l1 = 0;
  for (std::size_t r = 0; r < depth.size(); ++r) l1 += std::abs(out.depth(long(r)) - depth[r]);
  return depth.empty() ? 0.0 : l1 / double(depth.size());
}

PretrainOptions::PretrainOptions() {
  synth.frames = 30;
  synth.width = 80;
  synth.height = 60;
  slam.decoders = "none";
  slam.mapping.decoder_lr = 0.005;
  slam.mapping.iterations = 30;
  slam.mapping.pixels = 1000;
}

PretrainResult run_pretrain(const PretrainOptions& o, const fs::path& run_dir) {
  set_threads(o.threads);
  const auto t0 = std::chrono::steady_clock::now();
  PretrainResult res;
  res.output = o.output.empty() ? run_dir / "artifacts" / "decoders.safetensors" : fs::path(o.output);
  SlamOptions so = o.slam;
  so.decoders = "none";
  so.seed = o.seed;
  Vec3 lo, hi;
  NiceModel<float> model;
  for (int s = 0; s < o.scenes; ++s) {
    SynthOptions sy = o.synth;
    sy.seed = o.seed + std::uint64_t(s);
    const SyntheticSequence seq = synthesize_frames(sy);
    slam_bound(so, seq.camera, seq.frames[0], *seq.frames[0].groundtruth, lo, hi);
    if (s == 0) model.init(so.model, lo, hi, o.seed);
    else model.reset_grids(so.model, lo, hi, o.seed + std::uint64_t(s));
    NiceSlam slam(so, seq.camera, model);
    Rng rng(o.seed ^ (0x9e37ULL + std::uint64_t(s)));
    for (int round = 0; round < o.rounds; ++round) {
      std::vector<const RgbdFrame*> frames;
      std::vector<Pose> poses;
      for (int k = 0; k < so.mapping.window; ++k) {
        const auto& f = seq.frames[rng.below(seq.frames.size())];
        frames.push_back(&f);
        poses.push_back(*f.groundtruth);
      }
      slam.map_frames(frames, poses, so.mapping.iterations);
    }
    double l1 = 0;
    for (std::size_t i = 0; i < seq.frames.size(); i += 5)
      l1 += rendered_depth_l1(slam.model(), so.sampling, seq.camera, seq.frames[i], *seq.frames[i].groundtruth, 300,
                              o.seed + i);
    res.depth_l1.push_back(l1 / double((seq.frames.size() + 4) / 5));
    log::info("pretrain scene {} of {}: rendered depth L1 {:.4f} m", s + 1, o.scenes, res.depth_l1.back());
    for (int l = 0; l < 4; ++l) model.decoder[l] = slam.model().decoder[l];
  }
  nlohmann::json provenance = {{"command", "nice-slam-run pretrain"},
                               {"seed", o.seed},
                               {"scenes", o.scenes},
                               {"rounds", o.rounds},
                               {"frames", o.synth.frames},
                               {"width", o.synth.width},
                               {"height", o.synth.height},
                               {"channels", so.model.channels},
                               {"hidden", so.model.hidden},
                               {"decoder_lr", so.mapping.decoder_lr},
                               {"iterations", so.mapping.iterations},
                               {"depth_l1", res.depth_l1}};
  fs::create_directories(res.output.parent_path().empty() ? fs::path(".") : res.output.parent_path());
  save_decoders(res.output, model, provenance);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

nlohmann::json PretrainResult::to_json() const {
  return {{"output", output.string()}, {"depth_l1", depth_l1}, {"seconds", seconds}};
}

}  // namespace core::nerf
