// ltd-pretrain train and schedule (see pretrain.hpp): the trainer extension that draws the token
// subsets, schedules the learning rate by LayerTokens and counts LayerTokens and GEMM FLOPs.
#include "ltd/pretrain.hpp"

#include <algorithm>
#include <ctime>
#include <memory>
#include <string>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "ltd/sampler.hpp"
#include "ltd/schedule.hpp"
#include "train/gemm.hpp"
#include "train/model.hpp"
#include "train/transformer_cuda.hpp"

namespace core::ltd {

double block_flops(const train::ModelConfig& model, int n) {
  const double C = model.n_embd;
  return 3.0 * (24.0 * n * C * C + 4.0 * double(n) * n * C);
}

double undropped_flops(double measured, const RoutingPlan& plan, const train::ModelConfig& model,
                       std::uint64_t sequences, int n, int kept) {
  if (!plan.dropping || kept >= n) return measured;
  return measured + double(plan.layers.size()) * double(sequences) * (block_flops(model, n) - block_flops(model, kept));
}

double full_length_flops(double measured, const LtdSchedule& sched, const train::ModelConfig& model,
                         std::int64_t step, std::uint64_t sequences) {
  return undropped_flops(measured, sched.plan(), model, sequences, sched.plan().seq_len, sched.kept(step));
}

nlohmann::json LtdCounters::to_json() const {
  return {{"layer_tokens", layer_tokens}, {"gemm_flops", gemm_flops}, {"baseline_gemm_flops", baseline_gemm_flops},
          {"train_cpu_s", train_cpu_s}};
}

void LtdCounters::from_json(const nlohmann::json& state) {
  layer_tokens = state.value("layer_tokens", std::uint64_t(0));
  gemm_flops = state.value("gemm_flops", 0.0);
  baseline_gemm_flops = state.value("baseline_gemm_flops", 0.0);
  train_cpu_s = state.value("train_cpu_s", 0.0);
}

void LtdCounters::record(nlohmann::json& rec, const LtdSchedule& sched, std::int64_t step, double measured,
                         double baseline, double cpu_s) {
  add(sched.layer_tokens(step), measured, baseline, cpu_s);
  rec["step_cpu_s"] = cpu_s;
  rec["kept_tokens"] = sched.kept(step);
  rec["layer_tokens"] = sched.layer_tokens(step);
  rec["cumulative_layer_tokens"] = layer_tokens;
  rec["effective_tokens"] = double(layer_tokens) / sched.plan().n_layer;
  rec["gemm_flops"] = measured;
  rec["baseline_gemm_flops"] = baseline;
  rec["gflops_per_s"] = measured / rec["step_s"].get<double>() / 1e9;
}

void LtdCounters::summarise(nlohmann::json& summary, const LtdSchedule& sched, std::int64_t steps) const {
  const std::uint64_t baseline = sched.baseline_layer_tokens() * std::uint64_t(steps);
  summary["layer_tokens"] = layer_tokens;
  summary["baseline_layer_tokens"] = baseline;
  summary["layer_token_saving"] = baseline > 0 ? 1.0 - double(layer_tokens) / double(baseline) : 0.0;
  summary["effective_tokens"] = double(layer_tokens) / sched.plan().n_layer;
  summary["gemm_flops"] = gemm_flops;
  summary["baseline_gemm_flops"] = baseline_gemm_flops;
  summary["flops_saving"] = baseline_gemm_flops > 0 ? 1.0 - gemm_flops / baseline_gemm_flops : 0.0;
  summary["train_cpu_s"] = train_cpu_s;
  summary["random_ltd"] = sched.plan().dropping;
  summary["random_ltd_layers"] = sched.plan().layers;
  summary["kept_tokens"] = sched.kept(std::max<std::int64_t>(steps - 1, 0));
  if (steps > 0 && summary.value("mean_step_s", 0.0) > 0) {  // measured, not the full-length formula
    summary["gflops_per_s"] = gemm_flops / double(steps) / summary["mean_step_s"].get<double>() / 1e9;
    if (summary.contains("mfu"))
      summary["mfu"] = summary["gflops_per_s"].get<double>() * 1e9 / (train::kCudaPeakTflops * 1e12);
  }
}

namespace {

// The trainer extension of rank `rank` of `world` (see pretrain.hpp): its own subsets, counters and step clock.
train::TrainExtension ltd_extension(const LtdTrainOptions& o, int rank, int world) {
  const auto sched = std::make_shared<const LtdSchedule>(o, world);
  const RoutingPlan& plan = sched->plan();
  const int B = o.train_micro_batch_size_per_gpu;
  const std::uint64_t rank_sequences = std::uint64_t(B) * std::uint64_t(o.gradient_accumulation_steps);
  auto counters = std::make_shared<LtdCounters>();
  // Where the step began: its FLOPs so far (this rank's: the device's own count on device=cuda, whose GEMMs
  // the host does not run, else the host GEMMs of this rank's thread) and its CPU clock.
  struct StepStart {
    std::uint64_t flops = 0;
    std::clock_t cpu = 0;
    const train::TransformerCuda* gpu = nullptr;
  };
  auto start = std::make_shared<StepStart>();
  const auto flops_now = [start]() -> std::uint64_t {
    if constexpr (train::kCudaBuild)
      if (start->gpu) return start->gpu->gemm_flops();
    return train::thread_gemm_flops();
  };
  const auto begin_step = [start, flops_now] {
    start->flops = flops_now();
    start->cpu = std::clock();
  };

  train::TrainExtension ext;
  ext.before_micro = [=](train::Model<float>& model, std::int64_t step, int micro) {
    if (micro == 0) begin_step();
    model.set_token_subsets(draw_token_subsets(plan, sched->kept(step), step, rank, micro, B, plan.seq_len));
  };
  ext.before_device_micro = [=](train::TransformerCuda& gpu, std::int64_t step, int micro) {
    if constexpr (train::kCudaBuild) {
      start->gpu = &gpu;
      if (micro == 0) begin_step();
      gpu.set_token_routing(device_token_routing(plan, sched->kept(step), step, rank, micro, B));
    }
  };
  ext.lr = [=](std::int64_t step) { return sched->lr(step, counters->layer_tokens); };
  ext.on_step = [=](std::int64_t step, nlohmann::json& rec) {
    const double measured = double(flops_now() - start->flops);
    const double full = full_length_flops(measured, *sched, o.model, step, rank_sequences);
    const double cpu_s = double(std::clock() - start->cpu) / CLOCKS_PER_SEC;
    counters->record(rec, *sched, step, measured, full, cpu_s);
    if (rec.contains("mfu"))  // the device: of the products it ran, not of the full-length formula
      rec["mfu"] = measured / rec["step_s"].get<double>() / (train::kCudaPeakTflops * 1e12);
  };
  ext.checkpoint_state = [=](std::int64_t) { return counters->to_json(); };
  ext.on_resume = [=](const nlohmann::json& state, std::int64_t start) {
    const std::uint64_t expected = sched->consumed_before(start);
    const std::uint64_t saved = state.value("layer_tokens", expected);
    if (saved != expected)
      throw UsageError("--resume: the checkpoint at step " + std::to_string(start) + " consumed " +
                       std::to_string(saved) + " LayerTokens, the configured random-LTD schedule gives " +
                       std::to_string(expected) + ": resume with the run's data_efficiency.* and batch settings");
    counters->from_json(state);
    counters->layer_tokens = saved;
  };
  ext.on_summary = [=](nlohmann::json& summary) {
    counters->summarise(summary, *sched, summary.value("steps", std::int64_t(0)));
  };
  return ext;
}

}  // namespace

train::TrainOutcome run_ltd_training(const LtdTrainOptions& o, RunDir* rundir, const comm::RankInfo& ranks,
                                     const train::StepHook& hook) {
  o.validate();
  // The schedule's own checks (UsageError naming the key) before any rank starts; the ranks are the launcher's
  // processes times the thread ranks of each (more than one of either only where the other is one).
  const LtdSchedule checked(o, ranks.world_size * o.distributed.thread_ranks);
  const RoutingPlan& plan = checked.plan();
  if (plan.dropping)
    log::info("random-LTD: layers {} of {} keep {} -> {} of {} tokens over {} steps (multiples of {})",
              nlohmann::json(plan.layers).dump(), plan.n_layer, kept_tokens(plan, 0), plan.max_value, o.data.seq_len,
              plan.require_steps, plan.seq_per_step);
  else
    log::info("random-LTD off: every layer runs on all {} tokens", o.data.seq_len);
  return zero::run_zero_training(o, rundir, ranks, hook,
                                 [&o](int rank, int world) { return ltd_extension(o, rank, world); });
}

train::TrainOutcome run_ltd_training(const LtdTrainOptions& o, RunDir& rundir, const train::StepHook& hook) {
  return run_ltd_training(o, &rundir, comm::RankInfo{}, hook);
}

nlohmann::json schedule_table(const LtdTrainOptions& o, std::int64_t steps, int ranks) {
  const LtdSchedule sched(o, ranks);
  nlohmann::json kept = nlohmann::json::array(), lt = nlohmann::json::array(), cum = nlohmann::json::array(),
                 eff = nlohmann::json::array(), lr = nlohmann::json::array();
  std::uint64_t consumed = 0;
  const int L = sched.plan().n_layer;
  for (std::int64_t t = 0; t < steps; ++t) {
    const std::uint64_t step_lt = sched.layer_tokens(t);
    lr.push_back(sched.lr(t, consumed));
    consumed += step_lt;
    kept.push_back(sched.kept(t));
    lt.push_back(step_lt);
    cum.push_back(consumed);
    eff.push_back(double(step_lt) / L);
  }
  const std::uint64_t baseline = sched.baseline_layer_tokens() * std::uint64_t(steps);
  return {{"steps", steps},
          {"kept_tokens", kept},
          {"layer_tokens", lt},
          {"cumulative_layer_tokens", cum},
          {"effective_tokens", eff},
          {"lr", lr},
          {"total_layer_tokens", consumed},
          {"baseline_layer_tokens", baseline},
          {"layer_token_saving", baseline > 0 ? 1.0 - double(consumed) / double(baseline) : 0.0},
          {"total_effective_tokens", double(consumed) / L},
          {"random_ltd", sched.plan().dropping},
          {"random_ltd_layers", sched.plan().layers},
          {"layer_token_lr_schedule", sched.layer_token_lr()}};
}

}  // namespace core::ltd
