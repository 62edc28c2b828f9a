// The schedules of random-LTD (Yao et al. 2022, Sec. 3): the kept-token count r_t of the random-LTD
// layers at step t, the LayerTokens a step consumes, and the learning rate as a function of the
// LayerTokens consumed before a step (the paper's LayerToken lr schedule, which DeepSpeed lists as not
// implemented).
//   r_t  = min(max, max(align_up(min), align_down(min + (max - min) t / require_steps)))  for t < require_steps,
//          max after (the full length even when max is not a multiple of seq_per_step);
//          alignment to seq_per_step, never below align_up(min) (where DeepSpeed's rounding gives 0).
//   LT_t = B ((L - |D|) n + |D| r_t),  B = micro batch x gradient accumulation x ranks, counted in uint64.
//   lr   = peak consumed / warmup while consumed < warmup; then cosine or linear from peak to min_lr at
//          total; min_lr after. consumed = sum of LT_s over s < t. Without dropping LT = L x tokens, so the
//          schedule is the token-based one with warmup and total divided by L.
#pragma once
#include <cstdint>
#include <vector>

#include "ltd/config.hpp"
#include "train/optimizer.hpp"

namespace core::ltd {

// r_t of the random-LTD layers at 0-based step `step` (n = seq_len when the plan does not drop).
int kept_tokens(const RoutingPlan& plan, std::int64_t step);

// LayerTokens of one step over `sequences` sequences (B) and of the same step without dropping.
std::uint64_t step_layer_tokens(const RoutingPlan& plan, std::int64_t step, std::uint64_t sequences);
std::uint64_t baseline_layer_tokens(const RoutingPlan& plan, std::uint64_t sequences);

// The LayerToken learning rate after `consumed` LayerTokens (total > 0, warmup <= total).
struct LayerTokenLr {
  double peak = 1e-3, min_lr = 0;
  std::uint64_t warmup = 0, total = 1;
  bool cosine = true;
  double at(std::uint64_t consumed) const;
};

// Everything a run's step t is scheduled to do, from the resolved options: kept count, LayerTokens,
// learning rate (the LayerToken schedule when enabled, else scheduler.*).
class LtdSchedule {
 public:
  LtdSchedule(const LtdTrainOptions& options, int ranks = 1);
  const RoutingPlan& plan() const { return plan_; }
  std::uint64_t sequences_per_step() const { return sequences_; }
  int kept(std::int64_t step) const { return kept_tokens(plan_, step); }
  std::uint64_t layer_tokens(std::int64_t step) const { return step_layer_tokens(plan_, step, sequences_); }
  std::uint64_t baseline_layer_tokens() const { return ltd::baseline_layer_tokens(plan_, sequences_); }
  // LayerTokens of steps [0, step), summed step by step.
  std::uint64_t consumed_before(std::int64_t step) const;
  // The learning rate of step `step` after `consumed` LayerTokens (the step-based scheduler ignores it).
  double lr(std::int64_t step, std::uint64_t consumed) const;
  bool layer_token_lr() const { return lt_enabled_; }

 private:
  RoutingPlan plan_;
  std::uint64_t sequences_ = 0;
  bool lt_enabled_ = false;
  LayerTokenLr lt_;
  train::LrSchedule step_schedule_;
  double peak_ = 0, cos_min_ratio_ = 0;
  std::int64_t warmup_steps_ = 0, total_steps_ = 0;
};

}  // namespace core::ltd
