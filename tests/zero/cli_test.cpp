// `mpirun -np 4 zpp-train train` end to end: the tiny ZeRO-3 and ZeRO++ configs print one summary
// JSON (rank 0 only) with bytes_per_step, write one run directory, and ZeRO++ sends about a fifth of
// ZeRO-3's cross-node bytes; the sharded checkpoint is consolidated for eval and export, and one
// process resumes it; a topology that cannot be built exits 2 naming the key; a rank killed
// mid-run ends the job with a nonzero exit well before the communicator timeout; one process runs
// stage 3 without a launcher; `simulate` predicts the bytes the 4 ranks sent.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using core::test::run_tool;
using core::test::TempDir;

namespace {

const std::vector<std::string> kShort = {"train_iters=6", "eval_iters=1", "eval_interval=6"};

core::test::CommandResult mpirun(int np, const std::vector<std::string>& args, const std::filesystem::path& cwd = {}) {
  return core::test::run_tool_mpi(TOOLKIT_MPIEXEC, np, "zpp-train", args, cwd);
}

std::string config(const char* name) { return (core::test::source_dir() / "configs/zpp-train" / name).string(); }

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The configs' text as token shards in dir/shards (a text input would be tokenized by every rank).
std::string shards(const TempDir& dir) {
  const auto out = dir / "shards";
  REQUIRE(run_tool("zpp-train", {"prepare", "--input", "/usr/share/common-licenses/GPL-3", "--tokenizer", "bytes",
                                 "--out", out.string(), "chunk_bytes=65536"})
              .exit_code == 0);
  return "data.input=" + out.string();
}

}  // namespace

TEST_CASE("tiny-zero3 and tiny-zeropp under mpirun -np 4: one summary, one run directory, ZeRO++'s cross-node bytes") {
  TempDir tmp("zero_cli_runs");
  const std::string data = shards(tmp);
  const auto z3 =
      mpirun(4, with({"train", "--config", config("tiny-zero3.yaml"), data, "--out", (tmp / "z3").string()}, kShort));
  REQUIRE(z3.exit_code == 0);
  const auto zpp = mpirun(4, with({"train", "--config", config("tiny-zeropp.yaml"), data}, kShort), tmp.path());
  REQUIRE(zpp.exit_code == 0);
  for (const auto* r : {&z3, &zpp}) {
    CHECK(std::count(r->out.begin(), r->out.end(), '\n') == 1);  // rank 0's summary only
    const auto s = nlohmann::json::parse(r->out);
    CHECK(s.at("steps") == 6);
    CHECK(s.at("zero").at("ranks") == 4);
    CHECK(s.at("zero").at("nodes") == 2);
    CHECK(s.at("bytes_per_step").at("inter").get<double>() > 0);
  }
  const auto a = nlohmann::json::parse(z3.out), b = nlohmann::json::parse(zpp.out);
  const double ratio = b["bytes_per_step"]["inter"].get<double>() / a["bytes_per_step"]["inter"].get<double>();
  CHECK(ratio < 0.26);
  CHECK(ratio > 0.1);
  CHECK(b["bytes_per_step"]["intra"].get<double>() > 0);
  // The simulator, given the same model and topology, predicts exactly the bytes the ranks sent.
  const auto sim = run_tool("zpp-train", {"simulate", "model.n_layer=2", "model.n_head=2", "model.n_embd=64",
                                          "model.n_positions=64", "model.vocab_size=256", "nodes=2", "ranks_per_node=2",
                                          "train_micro_batch_size_per_gpu=2", "seq_len=64"});
  REQUIRE(sim.exit_code == 0);
  const auto p = nlohmann::json::parse(sim.out);
  CHECK(p["variants"]["zero3"]["bytes_per_step"] == a["bytes_per_step"]);
  CHECK(p["variants"]["zeropp"]["bytes_per_step"] == b["bytes_per_step"]);
  CHECK(p["variants"]["zeropp"]["speedup"].get<double>() > 1.0);
  // Without --out rank 0 alone made the default run directory.
  int runs = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "runs" / "zpp-train")) runs += e.is_directory();
  CHECK(runs == 1);
  std::ifstream metrics(tmp / "z3" / "metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line); ++lines)
    CHECK(nlohmann::json::parse(line).at("bytes_per_step").at("inter") == a["bytes_per_step"]["inter"]);
  CHECK(lines == 6);
  CHECK(a.at("zero").at("memory_per_rank").at("params").get<double>() > 0);
  // Sharded checkpoint (one file a rank); eval refuses it, naming `consolidate`, which writes the one
  // full checkpoint that eval and export read; one process resumes the shards of 4 at stage 0.
  const auto step6 = tmp / "z3" / "checkpoints" / "step_00000006";
  for (int r = 0; r < 4; ++r) CHECK(std::filesystem::exists(step6 / ("rank_0000" + std::to_string(r) + ".safetensors")));
  auto r = run_tool("zpp-train", {"eval", "--checkpoint", (tmp / "z3").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("zpp-train consolidate") != std::string::npos);
  r = run_tool("zpp-train", {"consolidate", (tmp / "z3").string(), "--out", (tmp / "cons").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).at("ranks") == 4);
  r = run_tool("zpp-train", {"eval", "--checkpoint", (tmp / "cons").string(), "max_tokens=256", "threads=1"});
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).at("loss").get<double>() < 5.5);  // trained: below ln 256
  r = run_tool("zpp-train", {"export", "--checkpoint", (tmp / "cons").string(), "--format", "hf", "--out",
                             (tmp / "hf").string()});
  CHECK(r.exit_code == 0);
  r = run_tool("zpp-train", with({"train", "--config", config("tiny-zero3.yaml"), data, "zero_optimization.stage=0",
                                  "bf16.enabled=false", "distributed.ranks_per_node=1", "--resume", "--out",
                                  (tmp / "z3").string()},
                                 {"train_iters=7", "eval_iters=1", "eval_interval=7"}));
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).at("steps") == 7);
}

TEST_CASE("a topology that cannot be built exits 2 naming the key, on every rank") {
  TempDir tmp("zero_cli_topology");
  auto r = mpirun(2, {"train", "--config", config("tiny-zero3.yaml"), "distributed.ranks_per_node=3", "--out",
                      (tmp / "a").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("distributed.ranks_per_node = 3") != std::string::npos);
  r = mpirun(2, {"train", "--config", config("tiny-zeropp.yaml"), "zero_optimization.zero_hpz_partition_size=4",
                 "--out", (tmp / "b").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("zero_hpz_partition_size = 4") != std::string::npos);
  r = run_tool("zpp-train", {"train", "--config", config("tiny.yaml"), "zero_optimization.zero_quantized_weights=true",
                             "--out", (tmp / "c").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("need zero_optimization.stage = 3") != std::string::npos);
}

TEST_CASE("a rank killed mid-run ends the job with a nonzero exit, long before the timeout") {
  TempDir tmp("zero_cli_kill");
  const std::string out = (tmp / "run").string(), data = shards(tmp);
  // Start 2 ranks on a long run, wait for rank 0's first metrics, SIGKILL rank 1 (the child of
  // mpirun whose OMPI_COMM_WORLD_RANK is 1) and time how long mpirun takes to end.
  const std::string script =
      "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
      "'" TOOLKIT_MPIEXEC "' -np 2 --oversubscribe '" + (core::test::bin_dir() / "zpp-train").string() +
      "' train --config '" + config("tiny-zero3.yaml") + "' '" + data + "' distributed.ranks_per_node=1 train_iters=100000 --out '" +
      out + "' > /dev/null 2>&1 &\n"
      "MP=$!\n"
      "for i in $(seq 1 600); do [ -s '" + out + "/metrics.jsonl' ] && break; sleep 0.1; done\n"
      "for p in $(pgrep -P $MP); do\n"
      "  if tr '\\0' '\\n' < /proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=1; then kill -9 $p; fi\n"
      "done\n"
      "start=$(date +%s)\n"
      "wait $MP; code=$?\n"
      "echo \"$code $(( $(date +%s) - start ))\"\n";
  const auto r = run_tool("/bin/bash", {"-c", script});
  REQUIRE(r.exit_code == 0);
  int code = -1, seconds = -1;
  std::istringstream(r.out) >> code >> seconds;
  CHECK(code != 0);
  CHECK(seconds >= 0);
  CHECK(seconds < 60);  // the communicator timeout is 300 s
}

TEST_CASE("SIGUSR1 to mpirun stops every rank at one step (checkpoint, exit 75); --resume continues the run") {
  TempDir tmp("zero_cli_stop");
  const std::string out = (tmp / "run").string(), data = shards(tmp);
  const std::string launch = "'" TOOLKIT_MPIEXEC "' -np 2 --oversubscribe '" +
                             (core::test::bin_dir() / "zpp-train").string() + "' train --config '" +
                             config("tiny-zeropp.yaml") + "' '" + data + "' distributed.ranks_per_node=1 " +
                             "zero_optimization.zero_hpz_partition_size=1 --out '" + out + "'";
  const std::string script =
      "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n" + launch +
      " train_iters=100000 > /dev/null 2>&1 &\n"
      "MP=$!\n"
      "for i in $(seq 1 600); do [ -s '" + out + "/metrics.jsonl' ] && break; sleep 0.1; done\n"
      "kill -USR1 $MP\n"
      "wait $MP; echo $?\n";
  const auto r = run_tool("/bin/bash", {"-c", script});
  REQUIRE(r.exit_code == 0);
  CHECK(std::stoi(r.out) == 75);
  int stopped_at = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp / "run" / "checkpoints"))
    stopped_at = std::max(stopped_at, std::stoi(e.path().filename().string().substr(5)));
  REQUIRE(stopped_at > 0);
  const auto resumed = run_tool("/bin/bash", {"-c", "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n" +
                                                        launch + " --resume train_iters=" + std::to_string(stopped_at + 2) +
                                                        " -q"});
  REQUIRE(resumed.exit_code == 0);
  CHECK(nlohmann::json::parse(resumed.out).at("steps") == stopped_at + 2);
}

TEST_CASE("one process runs stage 3 with ZeRO++ keys without a launcher") {
  TempDir tmp("zero_cli_one");
  const auto r = run_tool("zpp-train", with({"train", "--config", config("tiny-zero3.yaml"), shards(tmp),
                                             "distributed.ranks_per_node=1",
                                             "--out", (tmp / "one").string()},
                                            kShort));
  REQUIRE(r.exit_code == 0);
  const auto s = nlohmann::json::parse(r.out);
  CHECK(s.at("zero").at("ranks") == 1);
  CHECK(s.at("bytes_per_step").at("inter") == 0.0);
}
