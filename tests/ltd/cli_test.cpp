// ltd-pretrain end to end: bad random-LTD configs exit 2 naming the key; `schedule --steps K` prints the
// per-step arrays and the saving; `train` on tiny.yaml writes the summary (zpp-train's fields plus
// layer_tokens, layer_token_saving, flops_saving) and per-step LayerTokens; --resume continues a run
// with the losses of the uninterrupted one; device=cuda with ZeRO-3 on 2 shared_gpu ranks routes each rank's
// tokens and resumes bit for bit (test_ltd_cli_emulated runs it on the SIMT emulator's ltd-pretrain); BERT
// classification finetuning, which the device does not run, is refused with device=cuda, exit 2 naming the key.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using core::test::run_tool;
using core::test::TempDir;

namespace {
const std::string kLtd = "data_efficiency.data_routing.random_ltd.";
nlohmann::json last_json_line(const std::string& out) {
  const auto pos = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
  return nlohmann::json::parse(pos == std::string::npos ? out : out.substr(pos + 1));
}
std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::string tiny_config() { return (core::test::source_dir() / "configs/ltd-pretrain/tiny.yaml").string(); }
std::vector<double> losses(const std::filesystem::path& metrics) {
  std::vector<double> out;
  std::istringstream in(core::test::read_text(metrics));
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line)["loss"].get<double>());
  return out;
}
const std::vector<std::string> kSmall = {"train_iters=6", "eval_interval=3", kLtd + "random_ltd_schedule.min_value=16",
                                         kLtd + "random_ltd_schedule.schedule_config.require_steps=4",
                                         kLtd + "layer_token_lr_schedule.warmup_layer_tokens=1024"};
// The keys of a small BERT pretrained on dir/text.txt.
std::vector<std::string> bert_keys(const std::filesystem::path& dir) {
  return {"model.arch=bert", "model.vocab_size=258", "data.input=" + (dir / "text.txt").string(),
          "data.val_fraction=0.2", "data.seq_len=32"};
}
// A separable toy task in dir (sentences of 'a' are 1, of 'b' 0: train.tsv, eval.tsv) and a BERT pretrained on
// its text for a few MLM steps (dir/bert); the finetune command's arguments on them.
std::vector<std::string> toy_classification(const std::filesystem::path& dir) {
  std::string train = "sentence\tlabel\n", eval = "sentence\tlabel\n", text;
  for (int i = 0; i < 40; ++i) {
    train += std::string(5 + i % 20, 'a') + " \t1\n" + std::string(5 + (i * 7) % 20, 'b') + " \t0\n";
    text += std::string(5 + i % 20, 'a') + " " + std::string(5 + (i * 7) % 20, 'b') + "\n";
  }
  for (int i = 0; i < 10; ++i) eval += std::string(6 + i, 'a') + "\t1\n" + std::string(7 + i, 'b') + "\t0\n";
  core::test::write_text(dir / "train.tsv", train);
  core::test::write_text(dir / "eval.tsv", eval);
  core::test::write_text(dir / "text.txt", text);
  REQUIRE(run_tool("ltd-pretrain", with(with({"train", "--config", tiny_config(), "--out", (dir / "bert").string()},
                                             kSmall), bert_keys(dir))).exit_code == 0);
  return {"finetune", "--checkpoint", (dir / "bert").string(), "data.seq_len=32",
          "glue.train_file=" + (dir / "train.tsv").string(), "glue.eval_file=" + (dir / "eval.tsv").string(),
          "train_iters=40", "eval_interval=20", "optimizer.params.lr=0.003", kLtd + "random_ltd_schedule.min_value=8",
          kLtd + "random_ltd_schedule.schedule_config.require_steps=30",
          kLtd + "layer_token_lr_schedule.warmup_layer_tokens=4096", "glue.max_train_examples=75"};
}
// A finetuning run's per-step records, reduced to `keys`.
std::vector<nlohmann::json> step_records(const std::filesystem::path& run, const std::vector<std::string>& keys) {
  std::vector<nlohmann::json> out;
  std::istringstream in(core::test::read_text(run / "metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto rec = nlohmann::json::parse(line);
    nlohmann::json kept;
    for (const auto& key : keys) kept[key] = rec.at(key);
    out.push_back(kept);
  }
  return out;
}
}  // namespace

TEST_CASE("bad random-LTD configs exit 2 naming the key") {
  TempDir tmp("ltd_cli_bad");
  for (const auto& [override_, key] : std::vector<std::pair<std::string, std::string>>{
           {kLtd + "total_layer_num=7", kLtd + "total_layer_num"},
           {kLtd + "random_ltd_layer_id=[0,9]", kLtd + "random_ltd_layer_id"},
           {kLtd + "random_ltd_schedule.schedule_config.seq_per_step=0", "seq_per_step"},
           {kLtd + "random_ltd_schedule.min_value=200", "min_value"},
           {kLtd + "no_such_key=1", "no_such_key"}}) {
    CAPTURE(override_);
    const auto r = run_tool("ltd-pretrain", {"train", "--config", tiny_config(), override_, "--out", (tmp / "x").string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(key) != std::string::npos);
    CHECK(!std::filesystem::exists(tmp / "x/checkpoints"));
  }
}

TEST_CASE("device=cuda with ZeRO-3 on 2 shared_gpu ranks: random-LTD per rank, resumed bit for bit (else exit 2)") {
  TempDir tmp("ltd_cli_shared_gpu");
  // tiny.yaml smaller still (3 layers, one head of 16, sequences of 16: layer 1 keeps 4, 4, 8, 12 tokens) for
  // the emulator; the LayerToken decay ends at the 4-step run's 624 LayerTokens (2 ranks x 2 sequences x
  // (2 x 16 + r_t) a step), so the 2-step part schedules the same lr.
  const auto zero3 = with({"--config", tiny_config()},
                          {"model.n_layer=3", "model.n_embd=16", "model.n_head=1", "model.n_positions=16",
                           "data.seq_len=16", "train_micro_batch_size_per_gpu=2", "eval_interval=1000", "eval_iters=1",
                           "train_iters=4", kLtd + "random_ltd_schedule.min_value=4",
                           kLtd + "random_ltd_schedule.schedule_config.seq_per_step=4",
                           kLtd + "random_ltd_schedule.schedule_config.require_steps=4",
                           kLtd + "layer_token_lr_schedule.warmup_layer_tokens=256",
                           kLtd + "layer_token_lr_schedule.total_layer_tokens=624", "zero_optimization.stage=3",
                           "distributed.backend=shared_gpu", "distributed.thread_ranks=2"});
  const auto straight = tmp / "straight", part = tmp / "part";
  const auto r = run_tool("ltd-pretrain", with({"train", "device=cuda", "--out", straight.string()}, zero3));
  if (r.exit_code != 0) {
    INFO(r.err);
    REQUIRE(std::getenv("TOOLKIT_EXPECT_DEVICE") == nullptr);  // set where a device (or the emulator) must answer
    CHECK(r.exit_code == 2);
    CHECK((r.err.find("no CUDA device") != std::string::npos || r.err.find("has no CUDA") != std::string::npos));
    return;
  }
  const auto summary = last_json_line(r.out);
  CHECK(summary["device"] == "cuda");
  CHECK(summary["zero"]["backend"] == "shared_gpu");
  CHECK(summary["zero"]["ranks"] == 2);
  CHECK(summary["random_ltd"] == true);
  CHECK(summary["flops_saving"].get<double>() > 0.05);
  // The LayerTokens count both ranks' sequences: schedule ranks=2's table.
  const auto table = run_tool("ltd-pretrain", with({"schedule"}, with(zero3, {"ranks=2"})));
  REQUIRE(table.exit_code == 0);
  const auto t = last_json_line(table.out);
  CHECK(summary["layer_tokens"] == 624);
  CHECK(summary["layer_tokens"] == t["total_layer_tokens"]);
  const auto records = [](const std::filesystem::path& run) {
    std::vector<nlohmann::json> out;
    std::istringstream lines(core::test::read_text(run / "metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  };
  const auto s = records(straight);
  REQUIRE(s.size() == 4);
  for (std::size_t i = 0; i < s.size(); ++i) {
    CAPTURE(i);
    CHECK(s[i]["kept_tokens"] == t["kept_tokens"][i]);
    CHECK(s[i]["lr"] == t["lr"][i]);
  }
  // Stopped after 2 steps and resumed from the sharded checkpoint: every rank continues the LayerToken
  // count (rank 1 counting from 0 would update its shard at lr 0 in step 3), so the 4 steps are the straight
  // run's bit for bit.
  REQUIRE(run_tool("ltd-pretrain", with(with({"train", "device=cuda", "--out", part.string()}, zero3), {"train_iters=2"}))
              .exit_code == 0);
  const auto resumed = run_tool("ltd-pretrain", with({"train", "device=cuda", "--resume", "--out", part.string()}, zero3));
  REQUIRE(resumed.exit_code == 0);
  CHECK(last_json_line(resumed.out)["layer_tokens"] == 624);
  const auto p = records(part);
  REQUIRE(p.size() == 4);
  for (std::size_t i = 0; i < p.size(); ++i) {
    CAPTURE(i);
    CHECK(p[i]["loss"] == s[i]["loss"]);
    CHECK(p[i]["grad_norm"] == s[i]["grad_norm"]);
    CHECK(p[i]["lr"] == s[i]["lr"]);
    CHECK(p[i]["cumulative_layer_tokens"] == s[i]["cumulative_layer_tokens"]);
  }
}

TEST_CASE("schedule --steps K prints the per-step arrays") {
  const auto r = run_tool("ltd-pretrain", {"schedule", "--config", tiny_config(), "--steps", "70"});
  REQUIRE(r.exit_code == 0);
  const auto j = last_json_line(r.out);
  for (const char* key : {"kept_tokens", "layer_tokens", "cumulative_layer_tokens", "effective_tokens", "lr"})
    CHECK(j[key].size() == 70);
  CHECK(std::is_sorted(j["kept_tokens"].begin(), j["kept_tokens"].end()));
  CHECK(j["kept_tokens"].back() == 64);
  CHECK(j["cumulative_layer_tokens"].back() == j["total_layer_tokens"]);
  CHECK(j["layer_token_saving"].get<double>() > 0.1);
  CHECK(j["lr"][0] == 0.0);  // the lr at a step follows the LayerTokens consumed before it
}

TEST_CASE("train on tiny.yaml: the summary and metrics; --resume continues the same run") {
  TempDir tmp("ltd_cli_train");
  const std::vector<std::string> shorten = {"train_iters=8", "eval_interval=4",
                                            kLtd + "random_ltd_schedule.schedule_config.require_steps=6",
                                            kLtd + "layer_token_lr_schedule.warmup_layer_tokens=2048"};
  const auto r = run_tool("ltd-pretrain", with({"train", "--config", tiny_config(), "--out", (tmp / "full").string()},
                                               shorten));
  REQUIRE(r.exit_code == 0);
  const auto s = last_json_line(r.out);
  for (const char* key : {"final_loss", "val_loss", "tokens_per_s", "mean_step_s", "checkpoint", "layer_tokens",
                          "layer_token_saving", "flops_saving", "effective_tokens"})
    CHECK(s.contains(key));
  CHECK(s["layer_token_saving"].get<double>() > 0.0);
  CHECK(s["flops_saving"].get<double>() > 0.0);
  const auto ref = losses(tmp / "full/metrics.jsonl");
  REQUIRE(ref.size() == 8);

  // A run stopped at step 3 (the same schedule: total_layer_tokens fixed) and resumed to 8.
  const std::string total = kLtd + "layer_token_lr_schedule.total_layer_tokens=" +
                            std::to_string(s["layer_tokens"].get<std::uint64_t>());
  const auto part = with(with({"train", "--config", tiny_config(), "--out", (tmp / "split").string()}, shorten), {total});
  auto first = run_tool("ltd-pretrain", with(part, {"train_iters=3"}));
  REQUIRE(first.exit_code == 0);
  auto again = run_tool("ltd-pretrain", with(part, {"--resume"}));
  REQUIRE(again.exit_code == 0);
  const auto got = losses(tmp / "split/metrics.jsonl");
  REQUIRE(got.size() == ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == ref[i]);
}

TEST_CASE("finetune: a GPT goes on with its LM loss, a BERT learns GLUE-style classification") {
  TempDir tmp("ltd_cli_finetune");
  const std::vector<std::string>& small = kSmall;
  // GPT: pretrain, then finetune from the run (the model comes from the checkpoint).
  REQUIRE(run_tool("ltd-pretrain", with({"train", "--config", tiny_config(), "--out", (tmp / "gpt").string()}, small))
              .exit_code == 0);
  auto r = run_tool("ltd-pretrain", with({"finetune", "--checkpoint", (tmp / "gpt").string(), "data.seq_len=64",
                                          "--out", (tmp / "gpt_ft").string()}, small));
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["layer_token_saving"].get<double>() > 0.0);

  // BERT: a separable toy task (sentences of 'a' are 1, of 'b' 0) after a short MLM pretraining.
  const std::vector<std::string> ft = toy_classification(tmp.path());
  // The classification loop runs on the host only: device=cuda is refused naming the key, before any output.
  r = run_tool("ltd-pretrain", with(ft, {"device=cuda", "--out", (tmp / "bert_ft").string()}));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("device=cuda") != std::string::npos);
  CHECK(!std::filesystem::exists(tmp / "bert_ft/checkpoints/step_40"));
  r = run_tool("ltd-pretrain", with(ft, {"--out", (tmp / "bert_ft").string()}));
  REQUIRE(r.exit_code == 0);
  const auto s = last_json_line(r.out);
  CHECK(s["eval_examples"] == 20);
  CHECK(s["accuracy"].get<double>() >= 0.9);
  CHECK(s["layer_token_saving"].get<double>() > 0.0);
  // Length-bucketed batches of 8 over the first 75 examples: 10 batches per epoch (the last of 3), so the 40
  // steps are 4 epochs, each example seen 4 times: [CLS] + its bytes (the trailing space dropped).
  std::int64_t example_tokens = 0;
  for (int i = 0; i < 38; ++i) example_tokens += (6 + i % 20) + (i < 37 ? 6 + (i * 7) % 20 : 0);
  CHECK(s["train_padding"]["example_tokens"] == 4 * example_tokens);
  // Padded to data.seq_len (32) as before, the padding share would be 1 - 1,135 / 2,400 = 0.53.
  CHECK(s["train_padding"]["padding_share"].get<double>() < 0.25);
  // Per step: each batch padded to its longest rounded up to 8 (at most 25); the random-LTD layers (1 and 2 of 4, 64 wide)
  // keep kept_tokens of a longer batch and run a batch no longer whole; baseline_gemm_flops adds back exactly
  // what dropping saved: 2 layers x B x (f(n) - f(r)), f(n) = 3 (24 n C^2 + 4 n^2 C) per sequence.
  int dropped = 0, whole = 0, short_batches = 0;
  std::istringstream metrics(core::test::read_text(tmp / "bert_ft/metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) {
    const auto rec = nlohmann::json::parse(line);
    const int n = rec["batch_lengths"][0], kept = rec["kept_tokens"];
    const std::int64_t rows = rec["batch_tokens"].get<std::int64_t>() / n;
    CHECK((n % 8 == 0 || n == 25));  // rounded up to 8, at most the longest example ([CLS] + 24 bytes)
    short_batches += rows == 3;
    const auto f = [](double t) { return 3.0 * (24.0 * t * 64 * 64 + 4.0 * t * t * 64); };
    const double saved = rec["baseline_gemm_flops"].get<double>() - rec["gemm_flops"].get<double>();
    if (kept < n) {
      ++dropped;
      CHECK(saved == doctest::Approx(2.0 * double(rows) * (f(n) - f(kept))));
    } else {
      ++whole;
      CHECK(saved == 0.0);
    }
  }
  CHECK(short_batches == 4);
  CHECK(dropped > 0);
  CHECK(whole > 0);

  // Resume: 25 steps then --resume to 40 gives the straight run's records and accuracy bit for bit;
  // a finished run is not overwritten without --resume.
  const std::string total = kLtd + "layer_token_lr_schedule.total_layer_tokens=" +
                            std::to_string(s["layer_tokens"].get<std::uint64_t>());
  const auto straight = run_tool("ltd-pretrain", with(ft, {total, "--out", (tmp / "straight").string()}));
  REQUIRE(straight.exit_code == 0);
  REQUIRE(run_tool("ltd-pretrain", with(ft, {total, "train_iters=25", "--out", (tmp / "split").string()})).exit_code == 0);
  r = run_tool("ltd-pretrain", with(ft, {total, "--resume", "--out", (tmp / "split").string()}));
  REQUIRE(r.exit_code == 0);
  const auto records = [](const std::filesystem::path& run) {  // (the split run also evaluates at its step 25)
    return step_records(run, {"step", "loss", "lr", "grad_norm", "kept_tokens", "cumulative_layer_tokens",
                              "gemm_flops", "batch_tokens", "example_tokens"});
  };
  CHECK(records(tmp / "split") == records(tmp / "straight"));
  CHECK(last_json_line(r.out)["accuracy"] == last_json_line(straight.out)["accuracy"]);
  CHECK(last_json_line(r.out)["layer_tokens"] == last_json_line(straight.out)["layer_tokens"]);
  CHECK(last_json_line(r.out)["train_padding"] == last_json_line(straight.out)["train_padding"]);
  CHECK(run_tool("ltd-pretrain", with(ft, {total, "--out", (tmp / "split").string()})).exit_code == 2);
  // A checkpoint of the uniform draws (state.json without "batches") is not resumed: another batch sequence.
  REQUIRE(run_tool("ltd-pretrain", with(ft, {total, "train_iters=25", "--out", (tmp / "old").string()})).exit_code == 0);
  const auto state_file = tmp / "old/checkpoints/step_00000025/state.json";
  auto state = nlohmann::json::parse(core::test::read_text(state_file));
  REQUIRE(state.erase("batches") == 1);
  core::test::write_text(state_file, state.dump());
  r = run_tool("ltd-pretrain", with(ft, {total, "--resume", "--out", (tmp / "old").string()}));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("batches") != std::string::npos);

  // Bad input: a label that is not a class (65, naming file:line), a missing file (66), no [CLS] id (2).
  core::test::write_text(tmp / "bad.tsv", "sentence\tlabel\nfine\t1\nbroken\tx\n");
  r = run_tool("ltd-pretrain", with(ft, {"glue.train_file=" + (tmp / "bad.tsv").string(), "--out", (tmp / "b1").string()}));
  CHECK(r.exit_code == 65);
  CHECK(r.err.find("bad.tsv:3") != std::string::npos);
  r = run_tool("ltd-pretrain", with(ft, {"glue.eval_file=" + (tmp / "none.tsv").string(), "--out", (tmp / "b2").string()}));
  CHECK(r.exit_code == 66);
  REQUIRE(run_tool("ltd-pretrain", with(with({"train", "--config", tiny_config(), "--out", (tmp / "bert257").string()},
                                             small), with(bert_keys(tmp.path()), {"model.vocab_size=257"}))).exit_code == 0);
  r = run_tool("ltd-pretrain", with({"finetune", "--checkpoint", (tmp / "bert257").string(), "data.seq_len=32",
                                     "--out", (tmp / "b3").string()}, small));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("[CLS]") != std::string::npos);
}

TEST_CASE("finetune: BERT classification on 2 thread ranks = one rank over the same batches; resumed bit for bit") {
  TempDir tmp("ltd_cli_finetune_ranks");
  const std::vector<std::string> ft = with(toy_classification(tmp.path()), {"train_iters=20", "eval_interval=10", "threads=1"});
  // Rank r of 2 takes micro batch 2 k + r: the batches of one rank accumulating 2 micro steps, the same token
  // subsets (keyed on the batch's place in the step), the LayerTokens of 2 x 8 sequences per step.
  auto one = run_tool("ltd-pretrain", with(ft, {"gradient_accumulation_steps=2", "--out", (tmp / "one").string()}));
  REQUIRE(one.exit_code == 0);
  auto two = run_tool("ltd-pretrain", with(ft, {"distributed.thread_ranks=2", "--out", (tmp / "two").string()}));
  REQUIRE(two.exit_code == 0);
  const std::vector<std::string> exact = {"step", "lr", "kept_tokens", "cumulative_layer_tokens", "batch_tokens",
                                          "example_tokens", "batch_lengths"};
  CHECK(step_records(tmp / "two", exact) == step_records(tmp / "one", exact));
  const auto a = step_records(tmp / "one", {"loss", "grad_norm"}), b = step_records(tmp / "two", {"loss", "grad_norm"});
  REQUIRE(a.size() == 20);
  REQUIRE(b.size() == 20);
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i]["loss"].get<double>() == doctest::Approx(a[i]["loss"].get<double>()).epsilon(1e-5));
    CHECK(b[i]["grad_norm"].get<double>() == doctest::Approx(a[i]["grad_norm"].get<double>()).epsilon(1e-4));
  }
  const auto s1 = last_json_line(one.out), s2 = last_json_line(two.out);
  CHECK(s2["zero"]["ranks"] == 2);
  CHECK(s2["accuracy"] == s1["accuracy"]);
  CHECK(s2["val_loss"].get<double>() == doctest::Approx(s1["val_loss"].get<double>()).epsilon(1e-4));
  CHECK(s2["layer_tokens"] == s1["layer_tokens"]);
  CHECK(s2["train_padding"] == s1["train_padding"]);
  // gemm_flops and baseline_gemm_flops count rank 0's own products (not its thread rank neighbour's too).
  CHECK(s2["flops_saving"].get<double>() > 0.0);
  CHECK(s2["flops_saving"].get<double>() < 0.5);
  CHECK(s2["gemm_flops"].get<double>() < s1["gemm_flops"].get<double>());

  // Stopped after 12 steps and resumed on 2 ranks (the engine's sharded checkpoint) = the straight 2-rank run.
  const std::string total = kLtd + "layer_token_lr_schedule.total_layer_tokens=" +
                            std::to_string(s2["layer_tokens"].get<std::uint64_t>());
  const auto two_ranks = with(ft, {total, "distributed.thread_ranks=2"});
  const auto straight = run_tool("ltd-pretrain", with(two_ranks, {"--out", (tmp / "straight").string()}));
  REQUIRE(straight.exit_code == 0);
  REQUIRE(run_tool("ltd-pretrain", with(two_ranks, {"train_iters=12", "--out", (tmp / "split").string()})).exit_code == 0);
  auto r = run_tool("ltd-pretrain", with(two_ranks, {"--resume", "--out", (tmp / "split").string()}));
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> keys = {"step", "loss", "lr", "grad_norm", "kept_tokens", "cumulative_layer_tokens",
                                         "batch_tokens", "example_tokens"};
  CHECK(step_records(tmp / "split", keys) == step_records(tmp / "straight", keys));
  CHECK(last_json_line(r.out)["accuracy"] == last_json_line(straight.out)["accuracy"]);
  CHECK(last_json_line(r.out)["train_padding"] == last_json_line(straight.out)["train_padding"]);
  // ZeRO stages 1 and 2 (moments, and gradients, sharded; weights whole on every rank) = stage 0 bit for bit,
  // also across their own resume; stage 3 is refused (rank 0 scores the whole model alone).
  for (const char* stage : {"zero_optimization.stage=1", "zero_optimization.stage=2"}) {
    CAPTURE(stage);
    const auto dir = tmp / (std::string("stage") + stage[std::strlen(stage) - 1]);
    REQUIRE(run_tool("ltd-pretrain", with(two_ranks, {stage, "train_iters=12", "--out", dir.string()})).exit_code == 0);
    r = run_tool("ltd-pretrain", with(two_ranks, {stage, "--resume", "--out", dir.string()}));
    REQUIRE(r.exit_code == 0);
    CHECK(step_records(dir, keys) == step_records(tmp / "straight", keys));
    CHECK(last_json_line(r.out)["val_loss"] == last_json_line(straight.out)["val_loss"]);
    CHECK(last_json_line(r.out)["zero"]["stage"] == stage[std::strlen(stage) - 1] - '0');
  }
  // Resumed on one rank: another number of batches per step (exit 2, naming it).
  r = run_tool("ltd-pretrain", with(with(ft, {total}), {"train_iters=30", "--resume", "--out", (tmp / "split").string()}));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("batches_per_step") != std::string::npos);
  r = run_tool("ltd-pretrain", with(two_ranks, {"zero_optimization.stage=3", "--out", (tmp / "z3").string()}));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("zero_optimization.stage") != std::string::npos);
}
