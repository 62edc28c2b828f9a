// ltd-pretrain's commands over core::train's loop: `train` runs zpp-train's training with random-LTD
// (Yao et al. 2022) in the middle layers and the LayerToken learning-rate schedule, reporting the
// LayerTokens and the GEMM FLOPs it spent against the full-length baseline; `schedule` tabulates the
// kept counts, LayerTokens and learning rates of a run without training.
#pragma once
#include <nlohmann/json.hpp>

#include "common/rundir.hpp"
#include "ltd/config.hpp"
#include "ltd/schedule.hpp"
#include "train/trainer.hpp"

namespace core::ltd {

// Matmul FLOPs of one block's forward + backward over one sequence of n tokens (2 m n k per product;
// backward twice the forward): 3 (24 n C^2 + 4 n^2 C).
double block_flops(const train::ModelConfig& model, int n);

// The GEMM FLOPs a micro step that spent `measured` on `sequences` sequences of n tokens, the random-LTD
// layers' blocks on `kept` of them, would have spent without dropping: those blocks on n tokens.
double undropped_flops(double measured, const RoutingPlan& plan, const train::ModelConfig& model,
                       std::uint64_t sequences, int n, int kept);

// The GEMM FLOPs step `step` would have spent at full length, from those it spent (`measured`, over
// `sequences` sequences: one rank's micro batch x accumulation): the random-LTD layers' blocks on n
// instead of r_t tokens for each of those sequences.
double full_length_flops(double measured, const LtdSchedule& schedule, const train::ModelConfig& model,
                         std::int64_t step, std::uint64_t sequences);

// The LayerToken and GEMM FLOP counters of a run (kept in its checkpoints: a resumed run reports the whole run).
struct LtdCounters {
  std::uint64_t layer_tokens = 0;  // consumed so far
  double gemm_flops = 0;           // measured over the training steps (not validation)
  double baseline_gemm_flops = 0;  // the same steps at full length
  double train_cpu_s = 0;          // process CPU time of the training steps (a busy machine's wall clock is not theirs)
  void add(std::uint64_t step_layer_tokens, double measured, double full_length, double cpu_s) {
    layer_tokens += step_layer_tokens;
    gemm_flops += measured;
    baseline_gemm_flops += full_length;
    train_cpu_s += cpu_s;
  }
  // add()s step `step` (its LayerTokens from the schedule) and writes its metrics record's fields: step_cpu_s,
  // kept_tokens, layer_tokens, cumulative_layer_tokens, effective_tokens, gemm_flops, baseline_gemm_flops and
  // gflops_per_s (of rec's step_s).
  void record(nlohmann::json& rec, const LtdSchedule& schedule, std::int64_t step, double measured, double baseline,
              double cpu_s);
  nlohmann::json to_json() const;
  void from_json(const nlohmann::json& state);
  // Adds layer_tokens, baseline_layer_tokens, layer_token_saving, effective_tokens, gemm_flops,
  // baseline_gemm_flops, flops_saving, train_cpu_s, random_ltd, random_ltd_layers, kept_tokens (of the last
  // step); gflops_per_s (and mfu on the device) of the FLOPs counted.
  void summarise(nlohmann::json& summary, const LtdSchedule& schedule, std::int64_t steps) const;
};

// The trainer extension of a random-LTD run on rank `ranks.rank` of `ranks.world_size` (kept counts,
// this rank's subsets, LayerToken lr over all ranks' sequences, counters, checkpointed state) and the
// run itself: one rank, or ZeRO data parallelism as zpp-train runs it (processes of a launcher, or thread
// ranks of this process: distributed.backend threads or shared_gpu, each rank with its own extension).
// `rundir` is null except on rank 0. gemm_flops (and gflops_per_s, mfu) count this rank's products, train_cpu_s
// the process's CPU time. device=cuda routes the tokens on the device (TransformerCuda::set_token_routing,
// the same subsets) under any ZeRO stage and counts the device's products (TransformerCuda::gemm_flops).
train::TrainOutcome run_ltd_training(const LtdTrainOptions& options, RunDir* rundir, const comm::RankInfo& ranks,
                                     const train::StepHook& hook = {});
// The same in a single process (one rank, or ZeRO on one rank when zero_optimization asks for it).
train::TrainOutcome run_ltd_training(const LtdTrainOptions& options, RunDir& rundir, const train::StepHook& hook = {});

// {kept_tokens, layer_tokens, cumulative_layer_tokens, effective_tokens, lr: per-step arrays;
//  layer_tokens, baseline_layer_tokens, layer_token_saving, effective_tokens: totals} of a run on `ranks` ranks.
nlohmann::json schedule_table(const LtdTrainOptions& options, std::int64_t steps, int ranks = 1);

}  // namespace core::ltd
