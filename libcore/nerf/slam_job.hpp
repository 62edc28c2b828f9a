// The jobs behind `nice-slam-run run` and `nice-slam-run pretrain`: options in, result out.
//  run:      opens a dataset (or synthesizes the default sequence into the run directory), runs NiceSlam
//            frame by frame (stopping early when core::stop_requested()), evaluates the trajectory
//            against ground truth when there is one, and reports timings per stage.
//  pretrain: trains the decoders from random weights by mapping synthetic scenes with their exact poses
//            (grids fresh per scene, decoders carried over), as NICE-SLAM pretrains its decoders before
//            freezing them; deterministic for a given seed and thread count.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>

#include "nerf/run_outputs.hpp"
#include "nerf/slam.hpp"
#include "nerf/synthetic.hpp"
#include "nerf/trajectory_eval.hpp"

namespace core::nerf {

struct RunOptions {
  std::string dataset;  // folder; empty: the synthetic sequence of `synth`, written to artifacts/synth
  DatasetOptions data;
  SynthOptions synth;
  SlamOptions slam;
  RunOutputOptions outputs;
  int threads = 0;  // 0: OMP_NUM_THREADS or all cores
  std::uint64_t seed = 0;
  std::string device = "cpu";  // cuda: the map on the device for the whole run (map_device.hpp)
  template <class V>
  void visit(V& v) {
    v("dataset", dataset, "dataset folder (TUM, Replica or folder layout; empty: synthesize one)");
    v.section("data", data);
    v.section("synth", synth);
    slam.visit(v);
    outputs.visit(v);
    v("threads", threads, "CPU threads (0: OMP_NUM_THREADS or all)", core::in_range(0, 1024));
    v("seed", seed, "seed of pixel and depth sampling");
    v("device", device, "cpu, or cuda: map, rendering, losses, gradients and mapping's Adam on the device",
      core::one_of({"cpu", "cuda"}));
  }
  void validate() const;  // device=cuda: the keys the device path does not support (UsageError naming the key)
};

struct RunResult {
  Trajectory trajectory;
  std::vector<FrameStats> frames;
  bool stopped = false;  // by a signal
  bool has_groundtruth = false;
  TrajectoryError error;
  double seconds = 0, load_s = 0, track_s = 0, map_s = 0;
  int track_iterations = 0, map_iterations = 0;
  nlohmann::json dataset;
  NiceModel<float> model;  // the map after the last frame
  std::string device = "cpu", device_name;
  double device_map_mib = 0, device_used_mib = 0;  // the map's device buffers; all in use on the device (cuda)
  nlohmann::json to_json() const;
};

using FrameCallback = std::function<void(const FrameStats&, const RunResult&)>;

// device=cuda: a UsageError (exit 2) naming the config key the device path does not support
// (RunOptions::validate) or what is missing (a CUDA build, a device); nothing for device=cpu.
void check_device(const RunOptions& options);

RunResult run_slam(const RunOptions& options, const std::filesystem::path& run_dir, const FrameCallback& on_frame);

struct PretrainOptions {
  SynthOptions synth;
  SlamOptions slam;
  int scenes = 1;
  int rounds = 8;  // mapping calls per scene, each over `mapping.window` random frames
  std::string output;  // decoders file; empty: artifacts/decoders.safetensors
  int threads = 0;
  std::uint64_t seed = 0;
  PretrainOptions();
  template <class V>
  void visit(V& v) {
    v.section("synth", synth);
    slam.visit(v);
    v("scenes", scenes, "synthetic scenes (seeds seed, seed+1, ...)", core::in_range(1, 10000));
    v("rounds", rounds, "mapping calls per scene", core::in_range(1, 1000000));
    v("output", output, "decoders file to write (empty: artifacts/decoders.safetensors)");
    v("threads", threads, "CPU threads (0: OMP_NUM_THREADS or all)", core::in_range(0, 1024));
    v("seed", seed, "seed of the scenes, initial weights and sampling");
  }
};

struct PretrainResult {
  std::filesystem::path output;
  std::vector<double> depth_l1;  // per scene, after training
  double seconds = 0;
  nlohmann::json to_json() const;
};

PretrainResult run_pretrain(const PretrainOptions& options, const std::filesystem::path& run_dir);

// Mean |rendered - measured| depth over `pixels` random pixels with depth, at the given pose.
double rendered_depth_l1(const NiceModel<float>& model, const SamplingOptions& sampling, const Intrinsics& camera,
                         const RgbdFrame& frame, const Pose& pose, int pixels, std::uint64_t seed);

void set_threads(int threads);

}  // namespace core::nerf
