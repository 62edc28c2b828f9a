// ltd-pretrain's training loop: min = max = n equals the run without dropping bit for bit (losses,
// lr) and reports no saving; the GEMM FLOPs counted per step equal the per-layer formula; the
// LayerToken counters and lr in metrics.jsonl follow the schedule; a run resumed mid-way (shorter
// train_iters, or a stop request) gives the same kept counts, LayerTokens, lr and losses bit for bit.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/signals.hpp"
#include "io/jsonl.hpp"
#include "ltd/pretrain.hpp"
#include "ltd/schedule.hpp"
#include "test_support.hpp"
#include "train/model.hpp"

using namespace core::ltd;
using core::test::TempDir;

namespace {

std::string question_text() {
  std::string s;
  for (int i = 0; i < 120; ++i) s += "to be or not to be, that is the question " + std::to_string(i) + "\n";
  return s;
}

LtdTrainOptions small_run(const core::fs::path& text, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"data.input=" + text.string(), "model.n_layer=4", "model.n_embd=32",
                                "model.n_head=2", "model.n_positions=32", "data.seq_len=32",
                                "train_micro_batch_size_per_gpu=4", "gradient_accumulation_steps=2",
                                "train_iters=12", "eval_interval=6", "eval_iters=2",
                                kRandomLtdKeys + "random_ltd_schedule.min_value=8",
                                kRandomLtdKeys + "random_ltd_schedule.schedule_config.seq_per_step=8",
                                kRandomLtdKeys + "random_ltd_schedule.schedule_config.require_steps=8",
                                kRandomLtdKeys + "layer_token_lr_schedule.warmup_layer_tokens=2048"};
  o.insert(o.end(), extra.begin(), extra.end());
  return core::resolve_options<LtdTrainOptions>({}, o);
}

}  // namespace

TEST_CASE("min = max = n trains bit-identically to random-LTD disabled, with no saving reported") {
  TempDir tmp("ltd_identity");
  core::test::write_text(tmp / "text.txt", question_text());
  const auto full = small_run(tmp / "text.txt", {"train_iters=50", "eval_interval=50",
                                                 kRandomLtdKeys + "random_ltd_schedule.min_value=32"});
  const auto off = small_run(tmp / "text.txt", {"train_iters=50", "eval_interval=50", kRandomLtdKeys + "enabled=false"});
  core::RunDir a("ltd-pretrain", tmp.path() / "full"), b("ltd-pretrain", tmp.path() / "off");
  const auto sa = run_ltd_training(full, a).summary, sb = run_ltd_training(off, b).summary;
  const auto ra = core::io::read_jsonl(tmp.path() / "full/metrics.jsonl"), rb = core::io::read_jsonl(tmp.path() / "off/metrics.jsonl");
  REQUIRE(ra.size() == 50);
  REQUIRE(rb.size() == 50);
  for (std::size_t i = 0; i < ra.size(); ++i) {
    CHECK(ra[i]["loss"] == rb[i]["loss"]);
    CHECK(ra[i]["lr"] == rb[i]["lr"]);
    CHECK(ra[i]["kept_tokens"] == 32);
  }
  CHECK(sa["val_loss"] == sb["val_loss"]);
  CHECK(sa["layer_token_saving"] == 0.0);
  CHECK(sa["flops_saving"] == 0.0);
  CHECK(sa["layer_tokens"] == sb["layer_tokens"]);
}

TEST_CASE("counted GEMM FLOPs and LayerTokens per step follow the per-layer formulas") {
  TempDir tmp("ltd_flops");
  core::test::write_text(tmp / "text.txt", question_text());
  const auto o = small_run(tmp / "text.txt");
  core::RunDir rd("ltd-pretrain", tmp.path() / "run");
  const auto summary = run_ltd_training(o, rd).summary;
  const auto recs = core::io::read_jsonl(tmp.path() / "run/metrics.jsonl");
  REQUIRE(recs.size() == 12);
  const LtdSchedule sched(o);
  core::train::Model<float> model(o.model);
  const int B = 4, accum = 2, n = 32, D = 2, L = 4;
  std::uint64_t cumulative = 0;
  for (std::size_t t = 0; t < recs.size(); ++t) {
    CAPTURE(t);
    const int r = recs[t]["kept_tokens"].get<int>();
    CHECK(r == sched.kept(std::int64_t(t)));
    // The full-length step (the LM head on every row) less what the two routed blocks skip.
    const double want = model.flops_per_step(B, n, core::train::Task::lm) * accum -
                        D * B * accum * (block_flops(o.model, n) - block_flops(o.model, r));
    CHECK(recs[t]["gemm_flops"].get<double>() == want);
    const std::uint64_t lt = std::uint64_t(B) * accum * ((L - D) * n + D * r);
    CHECK(recs[t]["layer_tokens"].get<std::uint64_t>() == lt);
    CHECK(recs[t]["lr"].get<double>() == sched.lr(std::int64_t(t), cumulative));
    cumulative += lt;
    CHECK(recs[t]["cumulative_layer_tokens"].get<std::uint64_t>() == cumulative);
  }
  CHECK(recs[0]["kept_tokens"] == 8);
  CHECK(recs[11]["kept_tokens"] == 32);
  CHECK(summary["layer_tokens"].get<std::uint64_t>() == cumulative);
  const double saving = 1.0 - double(cumulative) / (12.0 * B * accum * L * n);
  CHECK(summary["layer_token_saving"].get<double>() == doctest::Approx(saving).epsilon(1e-12));
  CHECK(summary["flops_saving"].get<double>() > 0.0);
  CHECK(summary["flops_saving"].get<double>() < saving);  // embeddings, head and full layers are not dropped
}

TEST_CASE("resume mid-run: same kept counts, LayerTokens, lr and losses bit for bit") {
  TempDir tmp("ltd_resume");
  core::test::write_text(tmp / "text.txt", question_text());
  const auto full = small_run(tmp / "text.txt");
  core::RunDir rd_full("ltd-pretrain", tmp.path() / "full");
  const auto ref_summary = run_ltd_training(full, rd_full).summary;
  const auto ref = core::io::read_jsonl(tmp.path() / "full/metrics.jsonl");
  const auto same = [&](const core::fs::path& dir, const nlohmann::json& summary) {
    const auto got = core::io::read_jsonl(dir / "metrics.jsonl");
    REQUIRE(got.size() == ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i)
      for (const char* key : {"loss", "lr", "kept_tokens", "layer_tokens", "cumulative_layer_tokens", "gemm_flops"})
        CHECK(got[i][key] == ref[i][key]);
    for (const char* key : {"layer_tokens", "layer_token_saving", "flops_saving", "gemm_flops", "val_loss"})
      CHECK(summary[key] == ref_summary[key]);
  };
  SUBCASE("a shorter train_iters, then the full one") {
    auto first = full;
    first.train_iters = 5;
    first.data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.total_layer_tokens =
        LtdSchedule(full).consumed_before(full.train_iters);
    auto whole = full;
    whole.data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.total_layer_tokens =
        first.data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.total_layer_tokens;
    core::RunDir rd("ltd-pretrain", tmp.path() / "split");
    run_ltd_training(first, rd);
    whole.resume = true;
    same(tmp.path() / "split", run_ltd_training(whole, rd).summary);
  }
  SUBCASE("a stop request at step 7, then --resume") {
    core::RunDir rd("ltd-pretrain", tmp.path() / "signal");
    const auto out = run_ltd_training(full, rd, [](const nlohmann::json& rec) {
      if (rec["step"] == 7) core::request_stop_for_test();
    });
    core::clear_stop_request();
    CHECK(out.interrupted);
    auto again = full;
    again.resume = true;
    same(tmp.path() / "signal", run_ltd_training(again, rd).summary);
  }
  SUBCASE("a changed schedule is refused on --resume") {
    core::RunDir rd("ltd-pretrain", tmp.path() / "changed");
    const std::string total = kRandomLtdKeys + "layer_token_lr_schedule.total_layer_tokens=100000";
    run_ltd_training(small_run(tmp / "text.txt", {"train_iters=3", total}), rd);
    auto other = small_run(tmp / "text.txt", {kRandomLtdKeys + "random_ltd_schedule.min_value=16", total});
    other.resume = true;
    CHECK_THROWS_AS(run_ltd_training(other, rd), core::UsageError);
  }
}
