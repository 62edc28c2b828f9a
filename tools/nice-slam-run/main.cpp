// nice-slam-run: dense neural RGB-D SLAM (NICE-SLAM) on the CPU.
//   nice-slam-run run [--dataset DIR] [--config FILE] [key=value ...] --out DIR   -> trajectory.txt, metrics.jsonl, JSON
//   nice-slam-run pretrain [--out DIR] [output=FILE]                               -> decoders (.safetensors)
//   nice-slam-run synth --out DIR [--frames N] [--variant NAME] [--seed S]   -> a TUM-layout dataset in DIR
//   nice-slam-run eval --estimate FILE --groundtruth FILE   -> JSON ate_rmse, rpe_trans, rpe_rot
//   nice-slam-run mesh RUN_DIR [--resolution R] [--output FILE]   -> the run's map as a PLY mesh
//   nice-slam-run render RUN_DIR --frames 0,10 [--output DIR]      -> rendered colour/depth PNGs of frames

#include <memory>
#include <optional>

#include "common/cli.hpp"
#include "common/heap.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/progress.hpp"
#include "nerf/map_file.hpp"
#include "nerf/slam_job.hpp"
#include "nerf/synthetic.hpp"
#include "nerf/trajectory_eval.hpp"

using namespace core;

struct EvalCommandOptions {
  std::string estimate, groundtruth;
  nerf::EvalOptions eval;
  template <class V>
  void visit(V& v) {
    v("estimate", estimate, "estimated trajectory (TUM format)");
    v("groundtruth", groundtruth, "ground-truth trajectory (TUM format)");
    v("max_dt", eval.max_dt, "timestamp association tolerance in seconds", core::in_range(0.0, 1e6));
    v("align", eval.align, "alignment of the estimate before ATE: se3 | sim3 | none",
      core::one_of({"se3", "sim3", "none"}));
    v("rpe_delta", eval.rpe_delta, "RPE over poses this many associated frames apart", core::in_range(1, 1000000));
  }
  void validate() const {
    if (estimate.empty()) throw UsageError("config key 'estimate' (--estimate) is required");
    if (groundtruth.empty()) throw UsageError("config key 'groundtruth' (--groundtruth) is required");
  }
};

static int run_eval(RunContext& ctx, const EvalCommandOptions& o) {
  const auto est = nerf::read_tum_trajectory(o.estimate);
  const auto gt = nerf::read_tum_trajectory(o.groundtruth);
  const auto e = nerf::evaluate_trajectory(est, gt, o.eval);
  log::info("{} associated poses: ATE RMSE {:.4f} m, RPE {:.4f} m / {:.3f} deg", e.pairs, e.ate_rmse, e.rpe_trans,
            e.rpe_rot_deg);
  nlohmann::json j = e.to_json();
  j["estimate"] = o.estimate;
  j["groundtruth"] = o.groundtruth;
  ctx.emit_result(j);
  return 0;
}

static int run_synth(RunContext& ctx, const nerf::SynthOptions& o) {
  const auto r = nerf::write_synthetic_sequence(o, ctx.rundir->path());
  log::info("{} frames ({} x {}, variant {}), {} IMU samples, path {:.2f} m, valid depth {:.1f}% in {}", r.frames,
            o.width, o.height, o.variant, r.imu_samples, r.path_length, 100 * r.valid_depth_fraction,
            r.dir.string());
  ctx.emit_result(r.to_json());
  return 0;
}

static int run_run(RunContext& ctx, const nerf::RunOptions& o) {
  const fs::path dir = ctx.rundir->path();
  std::unique_ptr<Progress> progress;  // sized once the dataset is open
  auto on_frame = [&](const nerf::FrameStats& s, const nerf::RunResult& r) {
    nlohmann::json m = {{"step", s.index},
                        {"timestamp", s.timestamp},
                        {"track_loss", s.track_loss},
                        {"depth_l1", s.depth_l1},
                        {"track_ms", 1e3 * s.track_s},
                        {"map_ms", 1e3 * s.map_s},
                        {"map_iterations", s.map_iterations},
                        {"keyframe", s.keyframe}};
    if (s.position_error >= 0) m["position_error"] = s.position_error;
    ctx.rundir->metrics().write(m);
    std::string note = fmt::format("{:.2f} fps", double(r.frames.size()) / std::max(r.seconds, 1e-9));
    if (s.position_error >= 0) note += fmt::format(", position error {:.3f} m", s.position_error);
    if (!progress) progress = std::make_unique<Progress>("frames", r.dataset["frames"].get<std::uint64_t>());
    progress->update(r.frames.size(), note);
  };
  const nerf::RunResult r = nerf::run_slam(o, dir, on_frame);
  if (progress) progress->finish();
  nerf::write_tum_trajectory(dir / "trajectory.txt", r.trajectory);
  nlohmann::json j = r.to_json();
  j["trajectory"] = (dir / "trajectory.txt").string();
  if (!r.frames.empty()) {
    nerf::RunOutputOptions outputs = o.outputs;
    outputs.output.mesh = outputs.output.mesh && !r.stopped;  // a stopped run saves its map only
    const nlohmann::json provenance = {{"command", "nice-slam-run run"}, {"frames", r.frames.size()}};
    const bool cull = outputs.output.mesh && outputs.mesh.cull;
    const bool render = !o.outputs.render.frames.empty() && !r.stopped;
    std::optional<nerf::Dataset> data;
    if (cull || render) data = nerf::open_dataset(r.dataset["root"].get<std::string>(), o.data);
    std::optional<nerf::ObservedViews> views;
    if (cull) views = nerf::observed_views(*data, r.trajectory, outputs.mesh.cull_stride);
    j.update(nerf::write_run_outputs(outputs, dir, r.model, provenance, views ? &*views : nullptr));
    if (render)
      j["render"] = nerf::write_rendered_frames(r.model, o.slam.sampling, *data, r.trajectory, o.outputs.render.frames,
                                                dir / "artifacts" / "render");
  }
  if (j.contains("ate_rmse"))
    log::info("{} frames in {:.1f} s ({:.2f} fps): ATE RMSE {:.4f} m", r.frames.size(), r.seconds,
              j["fps"].get<double>(), r.error.ate_rmse);
  else
    log::info("{} frames in {:.1f} s ({:.2f} fps)", r.frames.size(), r.seconds, j["fps"].get<double>());
  ctx.emit_result(j);
  if (r.stopped) {
    log::warn("stopped by a signal after {} frames; trajectory so far in {}", r.frames.size(),
              (dir / "trajectory.txt").string());
    return static_cast<int>(ExitCode::interrupted);
  }
  return 0;
}

struct MeshCommandOptions {
  std::string run;     // run directory with artifacts/map.safetensors
  std::string output;  // empty: RUN_DIR/artifacts/mesh.ply
  nerf::MeshOptions mesh;
  bool binary = true;
  int threads = 0;
  template <class V>
  void visit(V& v) {
    v("run", run, "run directory of `nice-slam-run run` (reads artifacts/map.safetensors)");
    v("output", output, "PLY file to write (empty: RUN_DIR/artifacts/mesh.ply)");
    mesh.visit(v);
    v("binary", binary, "binary (true) or ascii (false) PLY");
    v("threads", threads, "CPU threads (0: OMP_NUM_THREADS or all)", core::in_range(0, 1024));
  }
  void validate() const {
    if (run.empty()) throw UsageError("the run directory is required: nice-slam-run mesh RUN_DIR");
  }
};

// What `mesh` and `render` read from a finished run directory: its options, dataset and trajectory.
struct FinishedRun {
  nerf::RunOptions options;
  nerf::Dataset data;
  nerf::Trajectory trajectory;
};

static FinishedRun open_finished_run(const fs::path& run) {
  const fs::path config = run / "config.resolved.yaml";
  if (!fs::exists(config)) throw InputMissingError(config.string() + ": not found (not a nice-slam-run run directory)");
  FinishedRun f;
  f.options = resolve_options<nerf::RunOptions>({config.string()}, {});
  f.data = nerf::open_dataset(f.options.dataset.empty() ? run / "artifacts" / "synth" : fs::path(f.options.dataset),
                              f.options.data);
  f.trajectory = nerf::read_tum_trajectory(run / "trajectory.txt");
  return f;
}

static int run_mesh(RunContext& ctx, const MeshCommandOptions& o) {
  nerf::set_threads(o.threads);
  if (!fs::is_directory(o.run)) throw InputMissingError(o.run + ": no such run directory");
  const nerf::NiceModel<float> model = nerf::load_map(nerf::map_path(o.run));
  std::optional<nerf::ObservedViews> views;
  if (o.mesh.cull) {
    const FinishedRun f = open_finished_run(o.run);
    views = nerf::observed_views(f.data, f.trajectory, o.mesh.cull_stride);
  }
  const fs::path out = o.output.empty() ? fs::path(o.run) / "artifacts" / "mesh.ply" : fs::path(o.output);
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  ctx.emit_result(nerf::write_mesh(model, o.mesh, o.binary, out, views ? &*views : nullptr));
  return 0;
}

struct RenderCommandOptions {
  std::string run;     // run directory with config.resolved.yaml, trajectory.txt, artifacts/map.safetensors
  std::string frames;  // comma-separated frame indices
  std::string output;  // empty: RUN_DIR/artifacts/render
  int threads = 0;
  template <class V>
  void visit(V& v) {
    v("run", run, "run directory of `nice-slam-run run`");
    v("frames", frames, "frames to render, comma-separated indices from 0 (e.g. 0,10)");
    v("output", output, "folder of the PNGs (empty: RUN_DIR/artifacts/render)");
    v("threads", threads, "CPU threads (0: OMP_NUM_THREADS or all)", core::in_range(0, 1024));
  }
  void validate() const {
    if (run.empty()) throw UsageError("the run directory is required: nice-slam-run render RUN_DIR --frames 0,10");
    if (frames.empty()) throw UsageError("config key 'frames' (--frames) is required, e.g. --frames 0,10");
  }
  std::vector<int> frame_list() const {
    std::vector<int> list;
    std::size_t at = 0;
    while (at <= frames.size()) {
      const std::size_t end = std::min(frames.find(',', at), frames.size());
      const std::string word = frames.substr(at, end - at);
      std::size_t used = 0;
      int i = -1;
      try {
        i = std::stoi(word, &used);
      } catch (const std::exception&) {
      }
      if (word.empty() || used != word.size() || i < 0)
        throw UsageError("frames: '" + frames + "' is not a comma-separated list of frame indices (e.g. 0,10)");
      list.push_back(i);
      at = end + 1;
    }
    return list;
  }
};

static int run_render(RunContext& ctx, const RenderCommandOptions& o) {
  nerf::set_threads(o.threads);
  const fs::path run = o.run;
  if (!fs::is_directory(run)) throw InputMissingError(o.run + ": no such run directory");
  const FinishedRun f = open_finished_run(run);
  const nerf::NiceModel<float> model = nerf::load_map(nerf::map_path(run));
  const fs::path out = o.output.empty() ? run / "artifacts" / "render" : fs::path(o.output);
  ctx.emit_result({{"frames", nerf::write_rendered_frames(model, f.options.slam.sampling, f.data, f.trajectory,
                                                          o.frame_list(), out)}});
  return 0;
}

static int run_pretrain(RunContext& ctx, const nerf::PretrainOptions& o) {
  const auto r = nerf::run_pretrain(o, ctx.rundir->path());
  log::info("decoders written to {} in {:.1f} s", r.output.string(), r.seconds);
  ctx.emit_result(r.to_json());
  return 0;
}

int main(int argc, char** argv) {
  retain_freed_memory();  // rendering allocates the same large temporaries every iteration
  App app("nice-slam-run", "Dense neural RGB-D SLAM (NICE-SLAM): synthetic data, tracking and mapping, evaluation");
  app.command<EvalCommandOptions>("eval", "ATE (after alignment) and RPE of a TUM trajectory against ground truth",
                                  run_eval)
      .flag("--estimate", "estimate", "estimated trajectory (TUM format)")
      .flag("--groundtruth", "groundtruth", "ground-truth trajectory (TUM format)")
      .without_rundir();
  app.command<nerf::RunOptions>("run", "Track and map an RGB-D sequence (default: a synthetic one); trajectory.txt",
                                run_run, /*is_default=*/true)
      .flag("--dataset", "dataset", "dataset folder (TUM, Replica or folder layout)")
      .stops_at_signal();
  app.command<nerf::PretrainOptions>("pretrain", "Train the decoders on synthetic scenes (writes decoders.safetensors)",
                                     run_pretrain)
      .flag("--output", "output", "decoders file to write");
  app.command<MeshCommandOptions>("mesh", "Extract the surface of a finished run's map to a PLY mesh", run_mesh)
      .positional("run", "run directory")
      .flag("--resolution", "resolution", "lattice cells along the longest side of the scene bound")
      .flag("--output", "output", "PLY file to write")
      .without_rundir();
  app.command<RenderCommandOptions>("render", "Render frames of a finished run from its map at the estimated poses (PNG)",
                                    run_render)
      .positional("run", "run directory")
      .flag("--frames", "frames", "frames to render, e.g. 0,10")
      .flag("--output", "output", "folder of the PNGs")
      .without_rundir();
  app.command<nerf::SynthOptions>("synth",
                                  "Write a seeded synthetic RGB-D + IMU sequence (TUM layout) into the --out folder",
                                  run_synth)
      .flag("--frames", "frames", "number of frames")
      .flag("--variant", "variant", "default | noisy-far-depth | fast-textureless | distant-background");
  return app.main(argc, argv);
}
