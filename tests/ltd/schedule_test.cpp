// Random-LTD schedules against closed forms: the kept-token table is monotone, aligned and never
// below align_up(min) (DeepSpeed's rounding gives 0 there); LayerToken counters equal closed-form sums;
// with dropping disabled the LayerToken lr schedule equals a token-based schedule exactly; config
// mismatches are usage errors naming the key.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "ltd/config.hpp"
#include "ltd/schedule.hpp"

using namespace core::ltd;

namespace {

LtdTrainOptions options(const std::vector<std::string>& overrides) {
  return core::resolve_options<LtdTrainOptions>({}, overrides);
}

std::string usage_error(const std::vector<std::string>& overrides) {
  try {
    options(overrides);
  } catch (const core::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("kept tokens: monotone, aligned, never below align_up(min), max from require_steps on") {
  for (const auto& [min, max, s, req] : std::vector<std::tuple<int, int, int, int>>{
           {64, 128, 16, 150}, {10, 128, 16, 37}, {5, 100, 16, 50}, {1, 7, 3, 9}, {96, 96, 32, 5}}) {
    CAPTURE(min);
    CAPTURE(max);
    CAPTURE(s);
    const auto o = options({"model.n_positions=128", "data.seq_len=128",
                            kRandomLtdKeys + "random_ltd_schedule.min_value=" + std::to_string(min),
                            kRandomLtdKeys + "random_ltd_schedule.max_value=" + std::to_string(max),
                            kRandomLtdKeys + "random_ltd_schedule.schedule_config.seq_per_step=" + std::to_string(s),
                            kRandomLtdKeys + "random_ltd_schedule.schedule_config.require_steps=" + std::to_string(req)});
    const RoutingPlan p = resolve_routing(o.data_efficiency, o.model, o.data.seq_len);
    const int aligned_min = (min + s - 1) / s * s;
    int prev = 0;
    for (int t = 0; t < req + 10; ++t) {
      const int r = kept_tokens(p, t);
      CHECK(r >= prev);
      CHECK(r <= max);
      CHECK(r >= std::min(max, aligned_min));
      if (t >= req) CHECK(r == max);
      else if (r != max) CHECK(r % s == 0);
      // The formula written out in floating point (exact for these sizes).
      if (t < req) {
        const int grown = int(std::floor(min + double(max - min) * t / req));
        CHECK(r == std::min(max, std::max(aligned_min, grown / s * s)));
      }
      prev = r;
    }
  }
  // DeepSpeed's case: min_value not a multiple of seq_per_step (5 and 16) starts at 16, not 0.
  const auto o = options({kRandomLtdKeys + "random_ltd_schedule.min_value=5", kRandomLtdKeys + "random_ltd_schedule.max_value=100"});
  CHECK(kept_tokens(resolve_routing(o.data_efficiency, o.model, o.data.seq_len), 0) == 16);
}

TEST_CASE("LayerToken counters equal the closed-form sums") {
  // seq_per_step 1 and (max - min) = k require_steps: r_t = min + k t before require_steps, max after.
  const int L = 6, n = 64, min = 8, k = 2, req = 28, B = 3, accum = 2, D = 3;  // max = 8 + 56 = 64
  const auto o = options({"model.n_layer=6", "model.n_positions=64", "data.seq_len=64",
                          "train_micro_batch_size_per_gpu=3", "gradient_accumulation_steps=2",
                          kRandomLtdKeys + "random_ltd_layer_id=[1,2,4]", kRandomLtdKeys + "random_ltd_layer_num=3",
                          kRandomLtdKeys + "random_ltd_schedule.min_value=8", kRandomLtdKeys + "random_ltd_schedule.max_value=64",
                          kRandomLtdKeys + "random_ltd_schedule.schedule_config.seq_per_step=1",
                          kRandomLtdKeys + "random_ltd_schedule.schedule_config.require_steps=28"});
  const LtdSchedule sched(o);
  const std::uint64_t seqs = B * accum;
  for (std::int64_t K : {0, 1, 5, 28, 29, 100}) {
    CAPTURE(K);
    const std::int64_t a = std::min<std::int64_t>(K, req);
    // sum_{t<a} (min + k t) + (K - a) max
    const std::uint64_t kept_sum = std::uint64_t(a * min + k * a * (a - 1) / 2 + (K - a) * 64);
    const std::uint64_t expected = seqs * (std::uint64_t(L - D) * n * K + D * kept_sum);
    CHECK(sched.consumed_before(K) == expected);
  }
  CHECK(sched.baseline_layer_tokens() == seqs * L * n);
  // Counted in uint64: 10^6 steps of 2^20 sequences of 8192 tokens through 96 layers exceed 2^32 by far.
  RoutingPlan big;
  big.dropping = false;
  big.n_layer = 96;
  big.seq_len = 8192;
  CHECK(step_layer_tokens(big, 0, std::uint64_t(1) << 20) == (std::uint64_t(96) * 8192) << 20);
}

TEST_CASE("with dropping disabled the LayerToken lr schedule is a token-based schedule, exactly") {
  const int L = 4, n = 32, B = 8, steps = 300;
  const std::uint64_t warmup_tokens = 7 * B * n + 100, total_tokens = 250 * B * n + 13;
  for (const std::string decay : {"cosine", "linear"}) {
    const auto o = options({"model.n_layer=4", "model.n_positions=32", "data.seq_len=32", "train_micro_batch_size_per_gpu=8",
                            "optimizer.params.lr=0.003", kRandomLtdKeys + "enabled=false",
                            kRandomLtdKeys + "layer_token_lr_schedule.decay_type=" + decay,
                            kRandomLtdKeys + "layer_token_lr_schedule.min_lr=0.0002",
                            kRandomLtdKeys + "layer_token_lr_schedule.warmup_layer_tokens=" + std::to_string(L * warmup_tokens),
                            kRandomLtdKeys + "layer_token_lr_schedule.total_layer_tokens=" + std::to_string(L * total_tokens)});
    const LtdSchedule sched(o);
    std::uint64_t consumed = 0;
    for (int t = 0; t < steps; ++t) {
      // Megatron's token-based schedule over the tokens consumed before step t.
      const std::uint64_t tokens = std::uint64_t(t) * B * n;
      double want;
      if (tokens < warmup_tokens) {
        want = 0.003 * double(tokens) / double(warmup_tokens);
      } else if (tokens >= total_tokens) {
        want = 0.0002;
      } else {
        const double x = double(tokens - warmup_tokens) / double(total_tokens - warmup_tokens);
        want = 0.0002 + (0.003 - 0.0002) * (decay == "cosine" ? 0.5 * (1 + std::cos(M_PI * x)) : 1 - x);
      }
      CHECK(sched.lr(t, consumed) == want);
      CHECK(consumed == L * tokens);
      consumed += sched.layer_tokens(t);
    }
  }
}

TEST_CASE("random-LTD configs that do not fit the model are usage errors naming the key") {
  CHECK(usage_error({kRandomLtdKeys + "total_layer_num=6"}).find(kRandomLtdKeys + "total_layer_num") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_layer_num=3"}).find(kRandomLtdKeys + "random_ltd_layer_num") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_layer_id=[1,4]"}).find(kRandomLtdKeys + "random_ltd_layer_id") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_layer_id=[2,1]"}).find("strictly increasing") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_schedule.min_value=100", kRandomLtdKeys + "random_ltd_schedule.max_value=64"})
            .find(kRandomLtdKeys + "random_ltd_schedule.min_value") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_schedule.max_value=200"}).find("max_value") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_schedule.schedule_config.seq_per_step=0"}).find("seq_per_step") !=
        std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "random_ltd_schedule.schedule_config.require_steps=-1"}).find("require_steps") !=
        std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "model_type=encoder"}).find(kRandomLtdKeys + "model_type") != std::string::npos);
  CHECK(usage_error({"model.n_layer=2"}).find("no middle layer") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "layer_token_lr_schedule.min_lr=0.5"}).find("min_lr") != std::string::npos);
  CHECK(usage_error({kRandomLtdKeys + "layer_token_lr_schedule.warmup_layer_tokens=10",
                     kRandomLtdKeys + "layer_token_lr_schedule.total_layer_tokens=5"})
            .find("warmup_layer_tokens") != std::string::npos);
  CHECK(usage_error({}).empty());
}
