// Configuration of random-LTD (Yao et al. 2022, "Random-LTD: Random and Layerwise Token Dropping Brings
// Efficient Training for Large-scale Transformers") under DeepSpeed's names, as a YAML mirror of its JSON:
//   data_efficiency.{enabled, seed, data_routing.{enabled, random_ltd.{enabled, total_layer_num,
//   random_ltd_layer_num, random_ltd_layer_id, model_type, random_ltd_schedule.{min_value, max_value,
//   schedule_type, schedule_config.{require_steps, seq_per_step}}, layer_token_lr_schedule.{enabled,
//   warmup_type, warmup_layer_tokens, total_layer_tokens, decay_type, min_lr}}}}
// Tokens are dropped only when data_efficiency, data_routing and random_ltd are all enabled. The
// LayerToken schedule (peak lr = optimizer.params.lr) stands on its own: without dropping it is a
// token-based schedule. validate() throws UsageError naming the key for counts, ids or bounds that do
// not fit the model (exit 2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "train/trainer.hpp"
#include "zero/train_job.hpp"

namespace core::ltd {

// Dotted prefix of the random_ltd section's keys, for messages that name a key.
inline const std::string kRandomLtdKeys = "data_efficiency.data_routing.random_ltd.";

struct ScheduleConfig {
  std::int64_t require_steps = 150;  // steps over which the kept count grows from min_value to max_value
  int seq_per_step = 16;             // the kept count is a multiple of this (alignment)
  template <class V>
  void visit(V& v) {
    v("require_steps", require_steps, "steps from min_value to max_value kept tokens",
      core::positive<std::int64_t>());
    v("seq_per_step", seq_per_step, "kept counts are multiples of this (except max_value itself)",
      core::positive<int>());
  }
};

struct RandomLtdSchedule {
  int min_value = 64;   // kept tokens at step 0 (rounded up to seq_per_step)
  int max_value = 0;    // kept tokens at require_steps and after (0: data.seq_len)
  std::string schedule_type = "fixed_linear";
  ScheduleConfig schedule_config;
  template <class V>
  void visit(V& v) {
    v("min_value", min_value, "kept tokens per sequence at the first step", core::positive<int>());
    v("max_value", max_value, "kept tokens per sequence at the end of the schedule (0: data.seq_len)",
      core::at_least(0));
    v("schedule_type", schedule_type, "growth of the kept count (fixed_linear)", core::one_of({"fixed_linear"}));
    v.section("schedule_config", schedule_config);
  }
};

struct LayerTokenLrSchedule {
  bool enabled = true;
  std::string warmup_type = "linear";
  std::uint64_t warmup_layer_tokens = 81920;  // the default run's first 20 steps at full length
  std::uint64_t total_layer_tokens = 0;       // end of the decay (0: the LayerTokens of the whole run)
  std::string decay_type = "cosine";
  double min_lr = 1e-4;
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "learning rate as a function of the LayerTokens consumed (in place of scheduler.*)");
    v("warmup_type", warmup_type, "rise to optimizer.params.lr (linear)", core::one_of({"linear"}));
    v("warmup_layer_tokens", warmup_layer_tokens, "LayerTokens of the warmup");
    v("total_layer_tokens", total_layer_tokens, "LayerTokens at the end of the decay (0: the whole run's)");
    v("decay_type", decay_type, "after the warmup, to min_lr: cosine or linear", core::one_of({"cosine", "linear"}));
    v("min_lr", min_lr, "learning rate at total_layer_tokens and after", core::at_least(0.0));
  }
};

struct RandomLtdOptions {
  bool enabled = true;
  int total_layer_num = 0;       // 0: model.n_layer (else it must equal it)
  int random_ltd_layer_num = 0;  // 0: the number of random_ltd_layer_id (else it must equal it)
  std::vector<int> random_ltd_layer_id;  // empty: every layer but the first and the last
  std::string model_type;        // decoder (gpt) or encoder (bert); empty: the model's
  RandomLtdSchedule random_ltd_schedule;
  LayerTokenLrSchedule layer_token_lr_schedule;
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "drop tokens in the random-LTD layers");
    v("total_layer_num", total_layer_num, "layers of the model (0: model.n_layer)", core::at_least(0));
    v("random_ltd_layer_num", random_ltd_layer_num, "layers that drop tokens (0: the length of random_ltd_layer_id)",
      core::at_least(0));
    v("random_ltd_layer_id", random_ltd_layer_id, "0-based ids of the layers that drop tokens (empty: all but the "
      "first and the last)");
    v("model_type", model_type, "decoder (gpt) or encoder (bert); empty: the model's",
      core::one_of({"", "decoder", "encoder"}));
    v.section("random_ltd_schedule", random_ltd_schedule);
    v.section("layer_token_lr_schedule", layer_token_lr_schedule);
  }
};

struct DataRouting {
  bool enabled = true;
  RandomLtdOptions random_ltd;
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "data routing (random_ltd) on");
    v.section("random_ltd", random_ltd);
  }
};

struct DataEfficiency {
  bool enabled = true;
  std::uint64_t seed = 1234;  // of the token subsets (per step, rank, layer and sequence)
  DataRouting data_routing;
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "data efficiency (data_routing) on");
    v("seed", seed, "seed of the random token subsets");
    v.section("data_routing", data_routing);
  }
  const RandomLtdOptions& random_ltd() const { return data_routing.random_ltd; }
  // True when tokens are dropped (all three switches on).
  bool dropping() const { return enabled && data_routing.enabled && data_routing.random_ltd.enabled; }
};

// The random-LTD settings resolved against the model and data: what the schedule and the model use.
struct RoutingPlan {
  bool dropping = false;
  int n_layer = 0, seq_len = 0;
  std::vector<int> layers;  // the random-LTD layers, increasing
  int min_value = 0, max_value = 0, seq_per_step = 1;
  std::int64_t require_steps = 1;
  std::uint64_t seed = 0;
};

// Checks data_efficiency against the model and data (UsageError naming the key) and resolves defaults.
RoutingPlan resolve_routing(const DataEfficiency& de, const train::ModelConfig& model, int seq_len);

// `ltd-pretrain train`: zpp-train's options (ZeRO data parallelism included) plus data_efficiency.
struct LtdTrainOptions : zero::ZeroTrainOptions {
  DataEfficiency data_efficiency;
  template <class V>
  void visit(V& v) {
    zero::ZeroTrainOptions::visit(v);
    v.section("data_efficiency", data_efficiency);
  }
  void validate() const;
};

// `ltd-pretrain schedule`: the same options, the number of steps to tabulate (0: train_iters) and the
// data-parallel ranks of the run (B counts every rank's sequences).
struct ScheduleOptions : LtdTrainOptions {
  std::int64_t steps = 0;
  int ranks = 1;
  template <class V>
  void visit(V& v) {
    LtdTrainOptions::visit(v);
    v("steps", steps, "steps to tabulate (0: train_iters)", core::at_least<std::int64_t>(0));
    v("ranks", ranks, "data-parallel ranks of the run (mpirun -np)", core::in_range(1, 1 << 20));
  }
};

}  // namespace core::ltd
