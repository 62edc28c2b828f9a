// Sequences past DeepSpeed's 2048-token cap: one random-LTD training run of a narrow GPT at 4096 and at
// 8192 tokens per sequence (slow: the attention probabilities of 8192 x 8192 take ~1 GiB).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "ltd/pretrain.hpp"
#include "test_support.hpp"

using core::test::TempDir;

TEST_CASE("random-LTD trains on sequences of 4096 and 8192 tokens") {
  TempDir tmp("ltd_long");
  std::string text;
  for (int i = 0; text.size() < 200000; ++i) text += "line " + std::to_string(i) + " of a long document\n";
  core::test::write_text(tmp / "text.txt", text);
  const std::string ltd = "data_efficiency.data_routing.random_ltd.";
  for (int n : {4096, 8192}) {
    CAPTURE(n);
    const auto o = core::resolve_options<core::ltd::LtdTrainOptions>(
        {}, {"data.input=" + (tmp / "text.txt").string(), "model.n_layer=3", "model.n_embd=16", "model.n_head=1",
             "model.n_positions=" + std::to_string(n), "data.seq_len=" + std::to_string(n),
             "train_micro_batch_size_per_gpu=1", "train_iters=3", "eval_interval=3", "eval_iters=1",
             ltd + "random_ltd_schedule.min_value=" + std::to_string(n / 4),
             ltd + "random_ltd_schedule.schedule_config.require_steps=4",
             ltd + "random_ltd_schedule.schedule_config.seq_per_step=16",
             ltd + "layer_token_lr_schedule.warmup_layer_tokens=0"});
    core::RunDir rd("ltd-pretrain", tmp.path() / ("n" + std::to_string(n)));
    const auto s = core::ltd::run_ltd_training(o, rd).summary;
    CHECK(std::isfinite(s["final_loss"].get<double>()));
    CHECK(s["kept_tokens"].get<int>() < n);
    CHECK(s["layer_token_saving"].get<double>() > 0.0);
  }
}
