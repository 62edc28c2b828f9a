// Kept-token, LayerToken and learning-rate schedules of random-LTD (see schedule.hpp).
#include "ltd/schedule.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"

namespace core::ltd {

int kept_tokens(const RoutingPlan& p, std::int64_t step) {
  if (!p.dropping) return p.seq_len;
  if (step >= p.require_steps) return p.max_value;
  const std::int64_t s = p.seq_per_step;
  const std::int64_t grown =
      p.min_value + (std::int64_t(p.max_value) - p.min_value) * std::max<std::int64_t>(step, 0) / p.require_steps;
  const std::int64_t aligned_min = (p.min_value + s - 1) / s * s, aligned = grown / s * s;
  return static_cast<int>(std::min<std::int64_t>(p.max_value, std::max(aligned_min, aligned)));
}

std::uint64_t step_layer_tokens(const RoutingPlan& p, std::int64_t step, std::uint64_t sequences) {
  const std::uint64_t D = p.dropping ? p.layers.size() : 0, L = p.n_layer, n = p.seq_len;
  return sequences * ((L - D) * n + D * std::uint64_t(kept_tokens(p, step)));
}

std::uint64_t baseline_layer_tokens(const RoutingPlan& p, std::uint64_t sequences) {
  return sequences * std::uint64_t(p.n_layer) * std::uint64_t(p.seq_len);
}

double LayerTokenLr::at(std::uint64_t consumed) const {
  if (consumed < warmup) return peak * double(consumed) / double(warmup);
  if (consumed >= total) return min_lr;
  const double progress = double(consumed - warmup) / double(total - warmup);
  const double shape = cosine ? 0.5 * (1.0 + std::cos(M_PI * progress)) : 1.0 - progress;
  return min_lr + (peak - min_lr) * shape;
}

LtdSchedule::LtdSchedule(const LtdTrainOptions& o, int ranks)
    : plan_(resolve_routing(o.data_efficiency, o.model, o.data.seq_len)),
      sequences_(std::uint64_t(o.train_micro_batch_size_per_gpu) * std::uint64_t(o.gradient_accumulation_steps) *
                 std::uint64_t(ranks)),
      step_schedule_(train::parse_lr_schedule(o.scheduler.type)),
      peak_(o.optimizer.params.lr),
      cos_min_ratio_(o.scheduler.params.cos_min_ratio),
      warmup_steps_(o.scheduler.params.warmup_num_steps),
      total_steps_(o.scheduler.params.total_num_steps > 0 ? o.scheduler.params.total_num_steps : o.train_iters) {
  const LayerTokenLrSchedule& s = o.data_efficiency.random_ltd().layer_token_lr_schedule;
  lt_enabled_ = s.enabled;
  lt_.peak = peak_;
  lt_.min_lr = s.min_lr;
  lt_.warmup = s.warmup_layer_tokens;
  lt_.total = s.total_layer_tokens != 0 ? s.total_layer_tokens : consumed_before(o.train_iters);
  lt_.cosine = s.decay_type == "cosine";
  if (lt_enabled_ && lt_.warmup > lt_.total)
    throw UsageError("data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.warmup_layer_tokens = " +
                     std::to_string(lt_.warmup) + " exceeds the LayerTokens of the whole run (" +
                     std::to_string(lt_.total) + ", total_layer_tokens = 0)");
}

std::uint64_t LtdSchedule::consumed_before(std::int64_t step) const {
  std::uint64_t sum = 0;
  for (std::int64_t t = 0; t < step; ++t) sum += layer_tokens(t);
  return sum;
}

double LtdSchedule::lr(std::int64_t step, std::uint64_t consumed) const {
  if (lt_enabled_) return lt_.at(consumed);
  return train::scheduled_lr(step_schedule_, step, peak_, warmup_steps_, total_steps_, cos_min_ratio_);
}

}  // namespace core::ltd
