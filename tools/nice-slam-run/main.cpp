// nice-slam-run: dense neural RGB-D SLAM (NICE-SLAM) on the CPU.
//   nice-slam-run synth --out DIR [--frames N] [--variant NAME] [--seed S]   -> a TUM-layout dataset in DIR
//   nice-slam-run eval --estimate FILE --groundtruth FILE   -> JSON ate_rmse, rpe_trans, rpe_rot
#include "common/cli.hpp"
#include "common/log.hpp"
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

int main(int argc, char** argv) {
  App app("nice-slam-run", "Dense neural RGB-D SLAM (NICE-SLAM): synthetic data, tracking and mapping, evaluation");
  app.command<EvalCommandOptions>("eval", "ATE (after alignment) and RPE of a TUM trajectory against ground truth",
                                  run_eval)
      .flag("--estimate", "estimate", "estimated trajectory (TUM format)")
      .flag("--groundtruth", "groundtruth", "ground-truth trajectory (TUM format)")
      .without_rundir();
  app.command<nerf::SynthOptions>("synth",
                                  "Write a seeded synthetic RGB-D + IMU sequence (TUM layout) into the --out folder",
                                  run_synth)
      .flag("--frames", "frames", "number of frames")
      .flag("--variant", "variant", "default | noisy-far-depth | fast-textureless | distant-background");
  return app.main(argc, argv);
}
