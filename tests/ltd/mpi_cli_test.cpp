// `mpirun -np 2 ltd-pretrain train`: random-LTD on data-parallel ranks, as zpp-train runs them. ZeRO
// stage 3 reproduces stage 0's losses (each rank keeps its own token subsets, the engine only changes
// where the state lives), one summary and one run directory come from rank 0, and the LayerTokens
// count both ranks' sequences exactly as `ltd-pretrain schedule ranks=2` tabulates them.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

namespace {

const std::string kRequireSteps =
    "data_efficiency.data_routing.random_ltd.random_ltd_schedule.schedule_config.require_steps=6";
const std::string kWarmup = "data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.warmup_layer_tokens=4096";

std::vector<double> losses(const fs::path& run) {
  std::vector<double> out;
  std::ifstream in(run / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto rec = json::parse(line);
    if (rec.contains("loss")) out.push_back(rec["loss"]);
  }
  return out;
}

}  // namespace

TEST_CASE("two ranks: stage 3 equals stage 0, LayerTokens count both ranks' sequences") {
  TempDir tmp("ltd_mpi");
  const auto shards = tmp / "shards";
  REQUIRE(run_tool("zpp-train", {"prepare", "--input", "/usr/share/common-licenses/GPL-3", "--tokenizer", "bytes", "--out",
                                 shards.string(), "chunk_bytes=65536"})
              .exit_code == 0);
  const std::string config = (source_dir() / "configs/ltd-pretrain/tiny.yaml").string();
  const std::vector<std::string> common = {"train", "--config", config, "data.input=" + shards.string(), "train_iters=8",
                                           "eval_interval=8", "eval_iters=1",
                                           kRequireSteps, kWarmup};
  auto run = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = common;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--out", (tmp / name).string()});
    return run_tool_mpi(TOOLKIT_MPIEXEC, 2, "ltd-pretrain", args);
  };
  const auto s0 = run("s0", {});
  CAPTURE(s0.err);
  REQUIRE(s0.exit_code == 0);
  const auto s3 = run("s3", {"zero_optimization.stage=3"});
  CAPTURE(s3.err);
  REQUIRE(s3.exit_code == 0);
  const json j0 = json::parse(s0.out), j3 = json::parse(s3.out);  // one JSON: rank 0's
  const auto l0 = losses(tmp / "s0"), l3 = losses(tmp / "s3");
  REQUIRE(l0.size() == 8);
  REQUIRE(l3.size() == 8);
  for (std::size_t i = 0; i < l0.size(); ++i) CHECK(l3[i] == doctest::Approx(l0[i]).epsilon(1e-6));
  CHECK(j0["random_ltd"] == true);
  CHECK(j0["layer_token_saving"].get<double>() > 0.1);

  std::vector<std::string> sched = {"schedule", "--config", config, "train_iters=8",
                                    kRequireSteps, kWarmup};
  auto two = sched, one = sched;
  two.push_back("ranks=2");
  const auto t2 = run_tool("ltd-pretrain", two), t1 = run_tool("ltd-pretrain", one);
  REQUIRE(t2.exit_code == 0);
  REQUIRE(t1.exit_code == 0);
  const auto total2 = json::parse(t2.out)["total_layer_tokens"].get<std::uint64_t>();
  CHECK(j0["layer_tokens"].get<std::uint64_t>() == total2);
  CHECK(j3["layer_tokens"].get<std::uint64_t>() == total2);
  CHECK(total2 == 2 * json::parse(t1.out)["total_layer_tokens"].get<std::uint64_t>());
}
