// ltd-pretrain end to end: bad random-LTD configs exit 2 naming the key; `schedule --steps K` prints the
// per-step arrays and the saving; `train` on tiny.yaml writes the summary (zpp-train's fields plus
// layer_tokens, layer_token_saving, flops_saving) and per-step LayerTokens; --resume continues a run
// with the losses of the uninterrupted one.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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
