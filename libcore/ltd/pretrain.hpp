// ltd-pretrain's commands over core::train's loop: `train` runs zpp-train's training with random-LTD
// (Yao et al. 2022) in the middle layers and the LayerToken learning-rate schedule, reporting the
// LayerTokens and the GEMM FLOPs it spent against the full-length baseline; `schedule` tabulates the
// kept counts, LayerTokens and learning rates of a run without training.
#pragma once
#include <nlohmann/json.hpp>

#include "common/rundir.hpp"
#include "ltd/config.hpp"
#include "train/trainer.hpp"

namespace core::ltd {

// Matmul FLOPs of one block's forward + backward over one sequence of n tokens (2 m n k per product;
// backward twice the forward): 3 (24 n C^2 + 4 n^2 C).
double block_flops(const train::ModelConfig& model, int n);

// The trainer extension of a random-LTD run (kept counts, subsets, LayerToken lr, counters,
// checkpointed state) and the run itself.
train::TrainOutcome run_ltd_training(const LtdTrainOptions& options, RunDir& rundir,
                                     const train::StepHook& hook = {});

// {kept_tokens, layer_tokens, cumulative_layer_tokens, effective_tokens, lr: per-step arrays;
//  layer_tokens, baseline_layer_tokens, layer_token_saving, effective_tokens: totals}.
nlohmann::json schedule_table(const LtdTrainOptions& options, std::int64_t steps);

}  // namespace core::ltd
