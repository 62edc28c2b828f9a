// zpp-train end to end: bad configs exit 2 with the key named, a short run writes metrics and one
// JSON summary, prepare (from a file and from standard input) -> train on shards, sample from the
// checkpoint, SIGTERM-free resume, SIGTERM during sample (ends it) and train (checkpoint, exit 75);
// GPT and BERT on device=cuda against the same runs on the host where a device answers (the refusal
// elsewhere; test_train_cli_emulated runs that case against zpp-train built on the SIMT emulator), eval
// there against eval on the host; eval of a run's val split against the run's own validation; export
// (hf, llmc) against tests/train/hf_gpt2_reference.py, a float64 GPT-2 written from Hugging Face's semantics;
// scripts/slurm/zpp_train.sbatch's stop, requeue and resume with a stand-in scontrol; a
// non-finite sampling temperature; scripts/plot/loss.py's output and exit codes.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using core::test::run_tool;
using core::test::TempDir;

namespace {
nlohmann::json last_json_line(const std::string& out) {
  const auto pos = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
  return nlohmann::json::parse(pos == std::string::npos ? out : out.substr(pos + 1));
}
const std::vector<std::string> kTiny = {"model.n_layer=1", "model.n_embd=32", "model.n_head=2", "model.n_positions=32",
                                        "data.seq_len=16", "train_micro_batch_size_per_gpu=4", "train_iters=6",
                                        "eval_interval=3", "eval_iters=2"};
std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// The loss `zpp-train eval --checkpoint CHECKPOINT args...` prints (exit 0 required).
double eval_loss(const std::string& checkpoint, const std::vector<std::string>& args) {
  const auto e = run_tool("zpp-train", with({"eval", "--checkpoint", checkpoint}, args));
  REQUIRE(e.exit_code == 0);
  return last_json_line(e.out)["loss"].get<double>();
}

// 80 numbered lines of "to be or not to be, that is the question" (3.5 kB): text for short runs.
void write_question_text(const std::filesystem::path& path) {
  std::string text;
  for (int i = 0; i < 80; ++i) text += "to be or not to be, that is the question " + std::to_string(i) + "\n";
  core::test::write_text(path, text);
}
}  // namespace

TEST_CASE("bad model configs exit 2 with a clear message") {
  TempDir tmp("zpp_cli_bad");
  auto r = run_tool("zpp-train", {"train", "model.n_head=3", "--out", (tmp / "a").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("model.n_head") != std::string::npos);
  r = run_tool("zpp-train", {"train", "data.seq_len=300", "--out", (tmp / "b").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("model.n_positions") != std::string::npos);
  r = run_tool("zpp-train", {"train", "data.input=/nonexistent/text.txt", "--out", (tmp / "c").string()});
  CHECK(r.exit_code == 66);
  // device=cuda on a machine (or build) without CUDA: exit 2 naming the reason; --device sets the key.
  r = run_tool("zpp-train", with({"train", "--device", "cuda", "--out", (tmp / "d").string()}, kTiny));
  if (r.exit_code == 0) {
    MESSAGE("a CUDA device answered: the no-device refusal is not exercised here");
  } else {
    CHECK(r.exit_code == 2);
    CHECK((r.err.find("device=cuda: no CUDA device") != std::string::npos ||
           r.err.find("device=cuda: this build has no CUDA") != std::string::npos));
  }
  r = run_tool("zpp-train", {"train", "device=tpu", "--out", (tmp / "e").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("device") != std::string::npos);
  // Sizes that overflow 32-bit arithmetic (was SIGSEGV) or describe no machine's model: exit 2 before any layout.
  r = run_tool("zpp-train", {"train", "model.vocab_pad_to=2147483647", "--out", (tmp / "f").string()});
  CHECK(r.exit_code == 2);  // 2^31 - 1 rows: no overflow now, and refused by the memory guard
  CHECK(r.err.find("smaller model") != std::string::npos);
  r = run_tool("zpp-train", {"train", "model.vocab_size=2147483647", "--out", (tmp / "g").string()});
  CHECK(r.exit_code == 2);
  r = run_tool("zpp-train", {"train", "model.n_layer=100000000", "model.n_embd=4096", "model.n_head=32",
                             "--out", (tmp / "h").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("exceed the 2^46") != std::string::npos);
}

TEST_CASE("peak: the GEMM rate of the CPU path, and of the GPU path where a device answers") {
  auto r = run_tool("zpp-train", {"peak", "n=128", "reps=1", "threads=1"});
  REQUIRE(r.exit_code == 0);
  const auto cpu = last_json_line(r.out);
  CHECK(cpu["gemm_gflops_per_s"].get<double>() > 0.0);
  CHECK(cpu["threads"] == 1);
  r = run_tool("zpp-train", {"peak", "--device", "cuda", "n=256", "reps=1"});
  if (r.exit_code == 0) {
    CHECK(last_json_line(r.out)["bf16_gemm_tflops_per_s"].get<double>() > 0.0);
  } else {
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("device=cuda") != std::string::npos);
  }
}

TEST_CASE("train on text, sample, prepare shards and train on them") {
  TempDir tmp("zpp_cli_run");
  write_question_text(tmp / "t.txt");
  auto r = run_tool("zpp-train", with({"train", "data.input=" + (tmp / "t.txt").string(), "--out", (tmp / "run").string()}, kTiny));
  REQUIRE(r.exit_code == 0);
  const auto s = last_json_line(r.out);
  CHECK(s.contains("final_loss"));
  CHECK(s.contains("val_loss"));
  CHECK(s["tokens_per_s"].get<double>() > 0);
  CHECK(std::filesystem::exists(tmp / "run/checkpoints/step_00000006/DONE"));
  const auto metrics = core::test::read_text(tmp / "run/metrics.jsonl");
  CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 6);

  r = run_tool("zpp-train", {"sample", "--checkpoint", (tmp / "run").string(), "--prompt", "to be", "max_new_tokens=20",
                             "--seed", "3"});
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["tokens"] == 20);

  // sample keeps no state worth saving: SIGTERM ends it at once (kill, timeout, scancel); train
  // checkpoints at its next step and exits 75.
  const auto sampling = core::test::run_tool_signalled(
      "zpp-train", {"sample", "--checkpoint", (tmp / "run").string(), "max_new_tokens=100000000"}, SIGTERM,
      std::chrono::milliseconds(300));
  CHECK(sampling.ended_in_time);
  CHECK(sampling.exit_code == 128 + SIGTERM);
  const auto training = core::test::run_tool_signalled(
      "zpp-train", with(with({"train", "data.input=" + (tmp / "t.txt").string(), "--out", (tmp / "stop").string()}, kTiny),
                        {"train_iters=1000000"}),
      SIGTERM, std::chrono::milliseconds(200), std::chrono::seconds(5),
      core::test::file_has_lines(tmp / "stop" / "metrics.jsonl"));  // training has started
  CHECK(training.ended_in_time);
  CHECK(training.exit_code == 75);
  CHECK(last_json_line(training.out)["interrupted"] == true);

  // --resume: a 3-step run (schedule sized for 6) continued to 6 steps appends steps 4..6.
  r = run_tool("zpp-train", with(with({"train", "data.input=" + (tmp / "t.txt").string(), "--out", (tmp / "res").string()},
                                       kTiny), {"train_iters=3", "scheduler.params.total_num_steps=6"}));
  REQUIRE(r.exit_code == 0);
  r = run_tool("zpp-train", with(with({"train", "data.input=" + (tmp / "t.txt").string(), "--out", (tmp / "res").string(),
                                       "--resume"}, kTiny), {"train_iters=6"}));
  REQUIRE(r.exit_code == 0);
  const auto resumed = core::test::read_text(tmp / "res/metrics.jsonl");
  CHECK(std::count(resumed.begin(), resumed.end(), '\n') == 6);
  CHECK(resumed.find("\"step\":4") != std::string::npos);

  r = run_tool("zpp-train", {"prepare", "--input", (tmp / "t.txt").string(), "--tokenizer", "bytes", "--out",
                             (tmp / "shards").string()});
  REQUIRE(r.exit_code == 0);
  r = run_tool("zpp-train", with({"train", "data.input=" + (tmp / "shards").string(), "--out", (tmp / "run2").string()}, kTiny));
  CHECK(r.exit_code == 0);

  // --input - reads standard input (a pipeline's end): the same shards as from the file.
  r = run_tool("zpp-train", {"prepare", "--input", "-", "--tokenizer", "bytes", "--out", (tmp / "piped").string()}, {},
               tmp / "t.txt");
  REQUIRE(r.exit_code == 0);
  for (const char* shard : {"train_000000.bin", "val_000000.bin"})
    CHECK(core::test::read_text(tmp / "piped" / shard) == core::test::read_text(tmp / "shards" / shard));
  core::test::write_text(tmp / "two_bytes.txt", "ab");
  r = run_tool("zpp-train", {"prepare", "--input", "-", "--tokenizer", "bytes", "--out", (tmp / "short").string()}, {},
               tmp / "two_bytes.txt");
  CHECK(r.exit_code == 65);
  CHECK(r.err.find("standard input gives 2 tokens") != std::string::npos);
}

TEST_CASE("eval scores a run's val split as its validation did, then the whole of it; standard input; max_loss; exit codes") {
  TempDir tmp("zpp_cli_eval");
  write_question_text(tmp / "t.txt");
  const std::string run = (tmp / "run").string();
  auto r = run_tool("zpp-train", with({"train", "data.input=" + (tmp / "t.txt").string(), "--out", run}, kTiny));
  REQUIRE(r.exit_code == 0);
  const double val_loss = last_json_line(r.out)["val_loss"].get<double>();
  // data.input=- trains on standard input exactly as on the file.
  r = run_tool("zpp-train", with({"train", "data.input=-", "--out", (tmp / "piped").string()}, kTiny), {}, tmp / "t.txt");
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["val_loss"].get<double>() == val_loss);
  // The run's last validation: eval_iters = 2 batches of 4 windows of 16 tokens from the split's start.
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "--input", (tmp / "t.txt").string(), "max_tokens=128"});
  REQUIRE(r.exit_code == 0);
  auto e = last_json_line(r.out);
  CHECK(e["seq_len"] == 16);  // the run's data.seq_len, from its checkpoint
  CHECK(e["tokens"] == 128);
  CHECK(e["loss"].get<double>() == doctest::Approx(val_loss).epsilon(1e-5));
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "--input", (tmp / "t.txt").string(), "stride=4"});
  REQUIRE(r.exit_code == 0);
  e = last_json_line(r.out);
  CHECK(e["tokens"].get<int>() > 300);  // every byte of the val split's tail 10% but the first
  CHECK(e["bits_per_byte"].get<double>() == doctest::Approx(e["loss"].get<double>() / std::log(2.0)));

  // The text from standard input: the same tokens, the same loss.
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "--input", "-", "stride=4"}, {}, tmp / "t.txt");
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["loss"] == e["loss"]);
  CHECK(last_json_line(r.out)["data"] == "standard input");
  // JSON Lines read directly (data.format=jsonl) give the tokens `prepare --format jsonl` writes.
  std::string jsonl;
  for (int i = 0; i < 40; ++i) jsonl += nlohmann::json{{"text", "to be or not to be " + std::to_string(i)}}.dump() + "\n";
  core::test::write_text(tmp / "docs.jsonl", jsonl);
  REQUIRE(run_tool("zpp-train", {"prepare", "--input", (tmp / "docs.jsonl").string(), "--format", "jsonl", "--out",
                                 (tmp / "jl").string()})
              .exit_code == 0);
  CHECK(eval_loss(run, {"--input", (tmp / "docs.jsonl").string(), "data.format=jsonl"}) ==
        eval_loss(run, {"--input", (tmp / "jl").string()}));
  r = run_tool("zpp-train", with({"train", "data.input=" + (tmp / "docs.jsonl").string(), "data.format=jsonl",
                                  "--out", (tmp / "jl_run").string()}, kTiny));
  CHECK(r.exit_code == 0);

  // A regression check for scripts: exit 3 when the loss exceeds max_loss, the JSON still printed.
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "--input", (tmp / "t.txt").string(), "stride=4",
                             "max_loss=" + std::to_string(e["loss"].get<double>() * 1.01)});
  CHECK(r.exit_code == 0);
  CHECK(last_json_line(r.out)["passed"] == true);
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "--input", (tmp / "t.txt").string(), "stride=4",
                             "max_loss=" + std::to_string(e["loss"].get<double>() * 0.99)});
  CHECK(r.exit_code == 3);
  CHECK(last_json_line(r.out)["passed"] == false);
  CHECK(r.err.find("exceeds max_loss") != std::string::npos);

  r = run_tool("zpp-train", {"eval", "--checkpoint", (tmp / "none").string()});
  CHECK(r.exit_code == 66);
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "--input", (tmp / "t.txt").string(), "stride=17"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("stride = 17 exceeds seq_len = 16") != std::string::npos);
  r = run_tool("zpp-train", {"eval", "--checkpoint", run, "strides=3"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("strides") != std::string::npos);
}

TEST_CASE("export: an hf folder an independent float64 GPT-2 reference scores as eval does; llmc; init_from each; BERT refused") {
  TempDir tmp("zpp_cli_export");
  write_question_text(tmp / "t.txt");
  const std::string shards = (tmp / "shards").string(), run = (tmp / "run").string();
  REQUIRE(run_tool("zpp-train", {"prepare", "--input", (tmp / "t.txt").string(), "--tokenizer", "bytes", "--out", shards})
              .exit_code == 0);
  REQUIRE(run_tool("zpp-train", with({"train", "data.input=" + shards, "--out", run}, kTiny)).exit_code == 0);
  auto r = run_tool("zpp-train", {"export", "--checkpoint", run, "--format", "hf", "--out", (tmp / "hf").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["files"] == nlohmann::json{"model.safetensors", "config.json"});
  r = run_tool("zpp-train", {"export", "--checkpoint", run, "--format", "llmc", "--out", (tmp / "llmc").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["files"] == nlohmann::json{"model.bin"});  // bytes: no end-of-text, no gpt2_tokenizer.bin
  // Into the training run's own folder: refused, its records left as they were.
  const std::string command = core::test::read_text(tmp / "run/command.txt");
  r = run_tool("zpp-train", {"export", "--checkpoint", run, "--out", run});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("holds a run of 'zpp-train train'") != std::string::npos);
  CHECK(core::test::read_text(tmp / "run/command.txt") == command);
  // One window of the 32 positions the model has, scored by eval from the run, the hf folder and the .bin.
  const std::vector<std::string> one_window = {"--input", shards, "data.tokenizer=bytes", "seq_len=32", "max_tokens=32"};
  const double loss = eval_loss(run, one_window);
  CHECK(eval_loss((tmp / "hf/model.safetensors").string(), one_window) == loss);
  CHECK(eval_loss((tmp / "llmc/model.bin").string(), one_window) == loss);
  // The .bin records no tokenizer: eval takes the one the shards' prepare.json names; --out records the run.
  r = run_tool("zpp-train", {"eval", "--checkpoint", (tmp / "llmc/model.bin").string(), "--input", shards, "seq_len=32",
                             "max_tokens=32", "--out", (tmp / "eval").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["loss"] == loss);
  CHECK(last_json_line(r.out)["tokenizer"] == "bytes");
  CHECK(nlohmann::json::parse(core::test::read_text(tmp / "eval/result.json"))["loss"] == loss);
  CHECK(nlohmann::json::parse(core::test::read_text(tmp / "eval/manifest.json"))["status"] == "finished");
  if (std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
    MESSAGE("reference skipped: no python3 with numpy (scripts/setup.sh installs it)");
  } else {
    const std::string cmd = "/usr/bin/python3 " + (core::test::source_dir() / "tests/train/hf_gpt2_reference.py").string() +
                            " " + (tmp / "hf").string() + " " + shards + "/val_000000.bin 32 > " +
                            (tmp / "reference.txt").string();
    REQUIRE(std::system(cmd.c_str()) == 0);
    CHECK(std::stod(core::test::read_text(tmp / "reference.txt")) == doctest::Approx(loss).epsilon(1e-5));
  }
  // init_from each of them: the same weights to start from (one step at a negligible learning rate).
  for (const auto& from : {run, (tmp / "hf/model.safetensors").string(), (tmp / "llmc/model.bin").string()}) {
    CAPTURE(from);
    const auto out = (tmp / "init").string();
    std::filesystem::remove_all(out);
    REQUIRE(run_tool("zpp-train", with(with({"train", "data.input=" + shards, "--out", out}, kTiny),
                                       {"init_from=" + from, "train_iters=1", "optimizer.params.lr=1e-9"}))
                .exit_code == 0);
    CHECK(eval_loss(out, one_window) == doctest::Approx(loss).epsilon(1e-6));
  }
  // On --resume the checkpoint holds the weights: init_from is said not to be read.
  r = run_tool("zpp-train", with(with({"train", "data.input=" + shards, "--out", (tmp / "init").string(), "--resume"}, kTiny),
                                 {"init_from=" + run, "train_iters=2", "optimizer.params.lr=1e-9"}));
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("is not read: the checkpoint holds the weights") != std::string::npos);
  r = run_tool("zpp-train", with(with({"train", "data.input=" + shards, "--out", (tmp / "init2").string()}, kTiny),
                                 {"init_from=" + (tmp / "hf/model.safetensors").string(), "model.n_layer=2"}));
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("differs in model.n_layer (2)") != std::string::npos);
  CHECK(r.err.find("model.n_layer=1 model.n_head=2 model.n_embd=32") != std::string::npos);
  REQUIRE(run_tool("zpp-train", with(with({"train", "data.input=" + shards, "--out", (tmp / "bert").string()}, kTiny),
                                     {"model.arch=bert", "model.vocab_size=264"}))
              .exit_code == 0);
  r = run_tool("zpp-train", {"export", "--checkpoint", (tmp / "bert").string(), "--out", (tmp / "bert_hf").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("holds a bert model") != std::string::npos);
}

TEST_CASE("every config under configs/zpp-train validates") {
  for (const char* name : {"default.yaml", "tiny.yaml", "gpt2-124m.yaml"}) {
    CAPTURE(name);
    const auto r = run_tool("zpp-train", {"train", "--config", (core::test::source_dir() / "configs/zpp-train" / name).string(),
                                          "--dry-run"});
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("scripts/slurm/zpp_train.sbatch passes USR1 on, requeues at exit 75, and the requeued job resumes") {
  TempDir tmp("zpp_cli_sbatch");
  const auto fake_bin = tmp / "fakebin";
  core::test::write_text(fake_bin / "scontrol", "#!/bin/sh\necho \"$@\" >> " + (tmp / "requeued.txt").string() + "\n");
  std::filesystem::permissions(fake_bin / "scontrol", std::filesystem::perms::owner_all);
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  const std::vector<std::pair<const char*, std::string>> env = {
      {"PATH", fake_bin.string() + ":" + path},
      {"BIN", (core::test::bin_dir() / "zpp-train").string()},
      {"CONFIG", (core::test::source_dir() / "configs/zpp-train/tiny.yaml").string()},
      {"OUT", (tmp / "run").string()},
      {"SLURM_JOB_ID", "4242"}};
  for (const auto& [name, value] : env) setenv(name, value.c_str(), 1);
  // Two allocations that each end in the time-limit warning; the second continues the first.
  for (int round = 1; round <= 2; ++round) {
    CAPTURE(round);
    std::size_t steps_before = 0;  // the signal comes once this allocation has trained a step
    {
      std::ifstream m(tmp / "run/metrics.jsonl");
      for (std::string line; std::getline(m, line);) ++steps_before;
    }
    const auto r = core::test::run_tool_signalled(
        "/bin/bash", {(core::test::source_dir() / "scripts/slurm/zpp_train.sbatch").string(), "train_iters=1000000"},
        SIGUSR1, std::chrono::milliseconds(300), std::chrono::seconds(30),
        core::test::file_has_lines(tmp / "run/metrics.jsonl", steps_before));
    CHECK(r.ended_in_time);
    CHECK(r.exit_code == 75);
  }
  for (const auto& [name, value] : env) unsetenv(name);
  setenv("PATH", path.c_str(), 1);
  CHECK(core::test::read_text(tmp / "requeued.txt") == "requeue 4242\nrequeue 4242\n");
  std::istringstream lines(core::test::read_text(tmp / "run/metrics.jsonl"));
  int expected = 1;
  for (std::string line; std::getline(lines, line); ++expected) CHECK(nlohmann::json::parse(line)["step"] == expected);
  CHECK(expected > 3);
}

TEST_CASE("device=cuda trains GPT and BERT (masked LM) like the host where a device answers, else exits 2") {
  TempDir tmp("zpp_cli_cuda");
  // GPT with two micro steps per step and a clipping norm that binds: the device's accumulation
  // scale, gradient norm and clipping factor against the host's.
  const auto gpt = with(kTiny, {"gradient_accumulation_steps=2", "gradient_clipping=0.05"});
  const auto bert = with(kTiny, {"model.arch=bert", "model.vocab_size=264"});  // bytes + [MASK], a multiple of 8
  for (const auto& [arch, config] : {std::pair{std::string("gpt"), gpt}, std::pair{std::string("bert"), bert}}) {
    CAPTURE(arch);
    auto gpu = run_tool("zpp-train", with({"train", "--device", "cuda", "--out", (tmp / (arch + "_gpu")).string()}, config));
    if (gpu.exit_code != 0) {
      INFO(gpu.err);
      REQUIRE(std::getenv("TOOLKIT_EXPECT_DEVICE") == nullptr);  // set where a device (or the emulator) must answer
      CHECK(gpu.exit_code == 2);
      CHECK((gpu.err.find("device=cuda: no CUDA device") != std::string::npos ||
             gpu.err.find("device=cuda: this build has no CUDA") != std::string::npos));
      return;
    }
    const auto cpu = run_tool("zpp-train", with({"train", "--out", (tmp / (arch + "_cpu")).string()}, config));
    REQUIRE(cpu.exit_code == 0);
    const auto g = last_json_line(gpu.out), c = last_json_line(cpu.out);
    CHECK(g["device"] == "cuda");
    REQUIRE(g["final_loss"].is_number());
    REQUIRE(g["val_loss"].is_number());
    CHECK(std::filesystem::exists(tmp / (arch + "_gpu") / "checkpoints/step_00000006/DONE"));
    // Same weights and batches: the first step's loss as the GPU step test (1%), after 6 steps and
    // on validation 5%.
    const auto first_step = [](const std::filesystem::path& run) {
      const std::string m = core::test::read_text(run / "metrics.jsonl");
      return nlohmann::json::parse(m.substr(0, m.find('\n')));
    };
    const auto gs = first_step(tmp / (arch + "_gpu")), cs = first_step(tmp / (arch + "_cpu"));
    const double g1 = gs["loss"].get<double>(), c1 = cs["loss"].get<double>();
    CHECK(std::abs(g1 - c1) <= 1e-2 * c1);
    // The gradient norm before clipping: the accumulated micro-step gradients, scaled by 1 / accum.
    const double gn = gs["grad_norm"].get<double>(), cn = cs["grad_norm"].get<double>();
    CHECK(std::abs(gn - cn) <= 5e-2 * cn);
    const double g6 = g["final_loss"].get<double>(), c6 = c["final_loss"].get<double>();
    CHECK(std::abs(g6 - c6) <= 5e-2 * c6);
    const double gv = g["val_loss"].get<double>(), cv = c["val_loss"].get<double>();
    CHECK(std::abs(gv - cv) <= 5e-2 * cv);
    // eval on the device: the host's loss of the same checkpoint on the val split's start, to bf16's 2%.
    const auto gpu_run = (tmp / (arch + "_gpu")).string();
    const double eg = eval_loss(gpu_run, {"--device", "cuda", "max_tokens=256"});
    const double ec = eval_loss(gpu_run, {"--device", "cpu", "max_tokens=256"});
    CHECK(std::abs(eg - ec) <= 2e-2 * ec);
    // --resume on the device: 3 steps, then on to 6, give the 6-step run's losses exactly (the
    // kernels have no atomics and the checkpoint holds the fp32 master weights and AdamW moments).
    const auto part = (tmp / (arch + "_gpu_resumed")).string();
    REQUIRE(run_tool("zpp-train", with(with({"train", "--device", "cuda", "--out", part}, config),
                                       {"train_iters=3", "scheduler.params.total_num_steps=6"}))
                .exit_code == 0);
    REQUIRE(run_tool("zpp-train", with({"train", "--device", "cuda", "--resume", "--out", part}, config)).exit_code == 0);
    const auto losses = [](const std::filesystem::path& run) {
      std::vector<double> out;
      std::istringstream lines(core::test::read_text(run / "metrics.jsonl"));
      for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line)["loss"].get<double>());
      return out;
    };
    const auto resumed = losses(part), straight = losses(tmp / (arch + "_gpu"));
    REQUIRE(resumed.size() == straight.size());
    for (std::size_t i = 0; i < resumed.size(); ++i) {
      CAPTURE(i + 1);
      CHECK(resumed[i] == straight[i]);
    }
  }
}

TEST_CASE("device=cuda with distributed.backend=shared_gpu: ZeRO-3 on 2 thread ranks of one GPU resumes bit for bit") {
  TempDir tmp("zpp_cli_shared_gpu");
  // The tiny model smaller still (one head of 16, sequences of 8): the emulator runs it in CI.
  const auto zero3 = with(kTiny, {"model.n_embd=16", "model.n_head=1", "data.seq_len=8", "eval_interval=1000",
                                  "distributed.backend=shared_gpu", "distributed.thread_ranks=2",
                                  "zero_optimization.stage=3", "train_iters=3", "scheduler.params.total_num_steps=3"});
  const auto straight = (tmp / "straight").string(), part = (tmp / "part").string();
  const auto r = run_tool("zpp-train", with({"train", "--device", "cuda", "--out", straight}, zero3));
  if (r.exit_code != 0) {
    INFO(r.err);
    REQUIRE(std::getenv("TOOLKIT_EXPECT_DEVICE") == nullptr);
    CHECK(r.exit_code == 2);
    CHECK((r.err.find("no CUDA device") != std::string::npos || r.err.find("has no CUDA") != std::string::npos));
    return;
  }
  const auto summary = last_json_line(r.out);
  CHECK(summary["zero"]["backend"] == "shared_gpu");
  CHECK(summary["zero"]["ranks"] == 2);
  CHECK(summary["bytes_per_step"]["intra"].get<double>() > 0);
  REQUIRE(run_tool("zpp-train", with(with({"train", "--device", "cuda", "--out", part}, zero3), {"train_iters=2"}))
              .exit_code == 0);
  REQUIRE(run_tool("zpp-train", with({"train", "--device", "cuda", "--resume", "--out", part}, zero3)).exit_code == 0);
  const auto losses = [](const std::string& run) {
    std::vector<double> out;
    std::istringstream lines(core::test::read_text(std::filesystem::path(run) / "metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line)["loss"].get<double>());
    return out;
  };
  CHECK(losses(part).size() == 3);
  CHECK(losses(part) == losses(straight));
  // The host backends move host buffers: refused on the device, naming the key.
  const auto threads = run_tool("zpp-train", with(with({"train", "--device", "cuda", "--out", (tmp / "t").string()}, zero3),
                                                  {"distributed.backend=threads"}));
  CHECK(threads.exit_code == 2);
  CHECK(threads.err.find("distributed.backend = threads") != std::string::npos);
}

TEST_CASE("keep_checkpoints: the newest two by default, every one with 0") {
  TempDir tmp("zpp_cli_keep");
  for (const auto& [keep, steps] : {std::pair{std::string("2"), std::vector<int>{4, 6}},
                                    std::pair{std::string("0"), std::vector<int>{2, 4, 6}}}) {
    CAPTURE(keep);
    const auto run = tmp / ("keep" + keep);
    REQUIRE(run_tool("zpp-train", with(with({"train", "--out", run.string()}, kTiny),
                                       {"save_interval=2", "keep_checkpoints=" + keep}))
                .exit_code == 0);
    std::vector<int> kept;
    for (const auto& e : std::filesystem::directory_iterator(run / "checkpoints"))
      kept.push_back(std::stoi(e.path().filename().string().substr(5)));
    std::sort(kept.begin(), kept.end());
    CHECK(kept == steps);
  }
}

TEST_CASE("scheduler.type: the lr of each step follows WarmupLR, WarmupDecayLR or WarmupCosineLR") {
  TempDir tmp("zpp_cli_schedule");
  // 6 steps, 2 of warmup, peak 1e-3: the last step (0-based 5) is 3/4 of the way through the decay.
  const double last_lr[] = {1e-3, 0.25e-3, 0.1e-3 + 0.5 * 0.9e-3 * (1 + std::cos(M_PI * 0.75))};
  const char* types[] = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(types[i]);
    const auto run = tmp / types[i];
    REQUIRE(run_tool("zpp-train", with(with({"train", "--out", run.string()}, kTiny),
                                       {std::string("scheduler.type=") + types[i], "scheduler.params.warmup_num_steps=2",
                                        "optimizer.params.lr=1e-3"}))
                .exit_code == 0);
    std::istringstream lines(core::test::read_text(run / "metrics.jsonl"));
    double lr = 0;
    for (std::string line; std::getline(lines, line);) lr = nlohmann::json::parse(line)["lr"].get<double>();
    CHECK(lr == doctest::Approx(last_lr[i]));
  }
}

TEST_CASE("a one-step run still reports its throughput") {
  TempDir tmp("zpp_cli_one_step");
  const auto r = run_tool("zpp-train", with(with({"train", "--out", (tmp / "run").string()}, kTiny), {"train_iters=1"}));
  REQUIRE(r.exit_code == 0);
  const auto s = last_json_line(r.out);
  CHECK(s["tokens_per_s"].get<double>() > 0);
  CHECK(s["mean_step_s"].get<double>() > 0);
}

TEST_CASE("sample refuses a non-finite temperature (exit 2 naming the key)") {
  const auto r = run_tool("zpp-train", {"sample", "--checkpoint", "/nonexistent", "temperature=.inf"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("temperature") != std::string::npos);
}

namespace {
// Runs scripts/plot/loss.py with args through the shell; returns its exit code.
int loss_py(const std::string& args) {
  const std::string cmd = "/usr/bin/python3 " + (core::test::source_dir() / "scripts/plot/loss.py").string() + " " +
                          args + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST_CASE("loss.py: one or several runs to PNG; 66 missing, 65 malformed or empty, 74 unwritable") {
  if (std::system("/usr/bin/python3 -c 'import matplotlib' > /dev/null 2>&1") != 0) {
    MESSAGE("skipped: no python3 with matplotlib");
    return;
  }
  TempDir tmp("zpp_cli_loss_py");
  const auto dir = tmp.path().string();
  core::test::write_text(tmp / "a/metrics.jsonl", "{\"step\":1,\"loss\":5.5}\n{\"step\":2,\"loss\":4.0,\"val_loss\":4.2}\n");
  // A step logged twice (a resumed run) plots once.
  core::test::write_text(tmp / "b/metrics.jsonl", "{\"step\":1,\"loss\":5.5}\n{\"step\":1,\"loss\":5.4}\n{\"step\":2,\"loss\":4.1}\n");
  CHECK(loss_py(dir + "/a " + dir + "/b -o " + dir + "/loss.png") == 0);
  CHECK(std::filesystem::file_size(tmp / "loss.png") > 1000);
  CHECK(loss_py(dir + "/missing -o " + dir + "/x.png") == 66);
  core::test::write_text(tmp / "empty/metrics.jsonl", "");
  CHECK(loss_py(dir + "/empty -o " + dir + "/x.png") == 65);
  core::test::write_text(tmp / "cut/metrics.jsonl", "{\"step\":1,\"loss\":5.5}\n{\"step\":2,\"lo\n");
  CHECK(loss_py(dir + "/cut -o " + dir + "/x.png") == 65);
  CHECK_FALSE(std::filesystem::exists(tmp / "x.png"));
  core::test::write_text(tmp / "file", "");
  CHECK(loss_py(dir + "/a -o " + dir + "/file/x.png") == 74);
}

TEST_CASE("sample draws only ids its tokenizer decodes and echoes any prompt bytes as valid UTF-8") {
  TempDir tmp("zpp_cli_sample_vocab");
  // A model vocabulary above the byte tokenizer's 256 (as rounded up for the GPU): 200 tokens from
  // the full distribution of a barely trained model would draw ids >= 256 almost surely.
  auto r = run_tool("zpp-train", with({"train", "model.vocab_size=400", "--out", (tmp / "run").string()}, kTiny));
  REQUIRE(r.exit_code == 0);
  r = run_tool("zpp-train", {"sample", "--checkpoint", (tmp / "run").string(), "top_k=0", "max_new_tokens=200",
                             "--prompt", "ab\xff\xfe" "cd"});
  REQUIRE(r.exit_code == 0);
  const auto j = last_json_line(r.out);
  CHECK(j["tokens"] == 200);
  CHECK(j["prompt"] == "ab\xef\xbf\xbd\xef\xbf\xbd" "cd");  // U+FFFD for each invalid byte
}

TEST_CASE("sample from a GPT-2-tokenizer checkpoint whose tokenizer folder moved: a hint, then tokenizer=gpt2:DIR; hf export") {
  const auto gpt2 = core::test::datasets_dir() / "tokenizers/gpt2";
  if (!core::test::have_dataset("tokenizers/gpt2/encoder.json")) {
    MESSAGE("skipped: no GPT-2 tokenizer files");
    return;
  }
  TempDir tmp("zpp_cli_sample_moved_tok");
  std::filesystem::create_directories(tmp / "tok");
  for (const char* f : {"encoder.json", "vocab.bpe"}) std::filesystem::copy_file(gpt2 / f, tmp / "tok" / f);
  core::test::write_text(tmp / "t.txt", std::string(4000, 'a') + " to be or not to be");
  auto r = run_tool("zpp-train", with({"train", "data.input=" + (tmp / "t.txt").string(),
                                       "data.tokenizer=gpt2:" + (tmp / "tok").string(), "model.vocab_size=50257",
                                       "data.val_fraction=0.5", "--out", (tmp / "run").string()},
                                      with(kTiny, {"train_iters=1"})));
  REQUIRE(r.exit_code == 0);
  std::filesystem::rename(tmp / "tok", tmp / "moved");
  r = run_tool("zpp-train", {"sample", "--checkpoint", (tmp / "run").string(), "max_new_tokens=2"});
  CHECK(r.exit_code == 66);
  CHECK(r.err.find("tokenizer=gpt2:DIR") != std::string::npos);
  r = run_tool("zpp-train", {"sample", "--checkpoint", (tmp / "run").string(), "max_new_tokens=2",
                             "tokenizer=gpt2:" + (tmp / "moved").string()});
  CHECK(r.exit_code == 0);
  r = run_tool("zpp-train", {"sample", "--checkpoint", (tmp / "run").string(), "tokenizer=bytes"});
  CHECK(r.exit_code == 2);
  // An hf export carries the tokenizer under Hugging Face's names; the folder then serves as both.
  const auto hf = tmp / "hf";
  r = run_tool("zpp-train", {"export", "--checkpoint", (tmp / "run").string(), "tokenizer=gpt2:" + (tmp / "moved").string(),
                             "--out", hf.string()});
  REQUIRE(r.exit_code == 0);
  CHECK(core::test::read_text(hf / "vocab.json") == core::test::read_text(gpt2 / "encoder.json"));
  CHECK(core::test::read_text(hf / "merges.txt") == core::test::read_text(gpt2 / "vocab.bpe"));
  CHECK(nlohmann::json::parse(core::test::read_text(hf / "config.json"))["eos_token_id"] == 50256);
  r = run_tool("zpp-train", {"sample", "--checkpoint", (hf / "model.safetensors").string(), "tokenizer=gpt2:" + hf.string(),
                             "max_new_tokens=2"});
  CHECK(r.exit_code == 0);
  // An llmc export carries llm.c's gpt2_tokenizer.bin (magic 20240328, version 2, 50257 tokens, end-of-text 50256).
  r = run_tool("zpp-train", {"export", "--checkpoint", (tmp / "run").string(), "tokenizer=gpt2:" + (tmp / "moved").string(),
                             "--format", "llmc", "--out", (tmp / "llmc").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(last_json_line(r.out)["files"] == nlohmann::json{"model.bin", "gpt2_tokenizer.bin"});
  const std::string bin = core::test::read_text(tmp / "llmc/gpt2_tokenizer.bin");
  REQUIRE(bin.size() > 1024);
  std::int32_t header[4];
  std::memcpy(header, bin.data(), sizeof header);
  CHECK(header[0] == 20240328);
  CHECK(header[1] == 2);
  CHECK(header[2] == 50257);
  CHECK(header[3] == 50256);
  CHECK(bin.substr(bin.size() - 14) == std::string("\x0d") + "<|endoftext|>");
}

TEST_CASE("--resume on data of other token counts than the checkpoint's run warns that its batches differ") {
  TempDir tmp("zpp_cli_resume_data");
  const std::string text = core::test::read_text("/usr/share/common-licenses/GPL-3");
  core::test::write_text(tmp / "a.txt", text.substr(0, 6000));
  core::test::write_text(tmp / "b.txt", text.substr(0, 9000));
  const std::string out = (tmp / "run").string();
  auto r = run_tool("zpp-train", with(with({"train", "data.input=" + (tmp / "a.txt").string(), "--out", out}, kTiny),
                                      {"train_iters=2", "scheduler.params.total_num_steps=6"}));
  REQUIRE(r.exit_code == 0);
  r = run_tool("zpp-train", with(with({"train", "data.input=" + (tmp / "a.txt").string(), "--out", out, "--resume"}, kTiny),
                                 {"train_iters=4", "scheduler.params.total_num_steps=6"}));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("does not see the batches") == std::string::npos);
  r = run_tool("zpp-train", with(with({"train", "data.input=" + (tmp / "b.txt").string(), "--out", out, "--resume"}, kTiny),
                                 {"train_iters=6"}));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("has 8100 train / 900 val tokens") != std::string::npos);
  CHECK(r.err.find("had 5400 / 600") != std::string::npos);
  CHECK(r.err.find("does not see the batches") != std::string::npos);
}

TEST_CASE("data.tokenizer of another kind than a prepared folder's is not silently ignored: a warning names both") {
  TempDir tmp("zpp_cli_tokenizer_ignored");
  core::test::write_text(tmp / "t.txt", core::test::read_text("/usr/share/common-licenses/GPL-3").substr(0, 6000));
  REQUIRE(run_tool("zpp-train", {"prepare", "--input", (tmp / "t.txt").string(), "--out", (tmp / "shards").string()})
              .exit_code == 0);
  const std::string data = "data.input=" + (tmp / "shards").string();
  auto r = run_tool("zpp-train", with({"train", data, "--out", (tmp / "a").string()}, kTiny));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("is not used") == std::string::npos);
  r = run_tool("zpp-train", with({"train", data, "data.tokenizer=gpt2:/somewhere/gpt2", "--out", (tmp / "b").string()}, kTiny));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("data.tokenizer=gpt2:/somewhere/gpt2 is not used") != std::string::npos);
  CHECK(r.err.find("made with bytes") != std::string::npos);
  // Shards prepared with GPT-2's tokenizer: the default (empty) data.tokenizer takes it without a word; a
  // data.tokenizer=bytes the user gives is said not to be used. (prepare.json is rewritten: the tokens are bytes.)
  auto meta = nlohmann::json::parse(core::test::read_text(tmp / "shards/prepare.json"));
  meta["tokenizer"] = "gpt2:/somewhere/gpt2";
  meta["vocab_size"] = 50257;
  core::test::write_text(tmp / "shards/prepare.json", meta.dump());
  r = run_tool("zpp-train", with({"train", data, "model.vocab_size=50257", "--out", (tmp / "c").string()}, with(kTiny, {"train_iters=1"})));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("is not used") == std::string::npos);
  r = run_tool("zpp-train", with({"train", data, "model.vocab_size=50257", "data.tokenizer=bytes", "--out", (tmp / "d").string()},
                                 with(kTiny, {"train_iters=1"})));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("data.tokenizer=bytes is not used") != std::string::npos);
}

TEST_CASE("data.order=llmc with eval_at_start: a step-0 validation loss, llm.c's batches, resumed as uninterrupted") {
  TempDir tmp("zpp_cli_llmc_order");
  write_question_text(tmp / "t.txt");
  const std::string shards = (tmp / "shards").string();
  REQUIRE(run_tool("zpp-train", {"prepare", "--input", (tmp / "t.txt").string(), "--out", shards}).exit_code == 0);
  const auto order = with(kTiny, {"data.input=" + shards + "/train_*.bin", "data.order=llmc", "eval_at_start=true"});
  REQUIRE(run_tool("zpp-train", with({"train", "--out", (tmp / "a").string()}, order)).exit_code == 0);
  std::vector<nlohmann::json> records;
  std::istringstream lines(core::test::read_text(tmp / "a/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) records.push_back(nlohmann::json::parse(line));
  REQUIRE(records.size() == 7);  // step 0 (validation only), then steps 1..6
  CHECK(records[0]["step"] == 0);
  CHECK(records[0]["val_loss"].get<double>() > 0);
  CHECK(!records[0].contains("loss"));
  // Stopped after 3 steps and resumed, the llm.c order continues where it was: the same final loss.
  REQUIRE(run_tool("zpp-train", with(with({"train", "--out", (tmp / "b").string()}, order),
                                     {"train_iters=3", "scheduler.params.total_num_steps=6"}))
              .exit_code == 0);
  REQUIRE(run_tool("zpp-train", with({"train", "--out", (tmp / "b").string(), "--resume"}, order)).exit_code == 0);
  const auto last = [&](const char* run) {
    return last_json_line(core::test::read_text(tmp / run / "metrics.jsonl"))["loss"].get<double>();
  };
  CHECK(last("b") == last("a"));
  // Sequential and random orders differ from it (the batches are other ones).
  REQUIRE(run_tool("zpp-train", with(with({"train", "--out", (tmp / "c").string()}, order), {"data.order=sequential"}))
              .exit_code == 0);
  CHECK(last("c") != last("a"));
}

TEST_CASE("an input path that cannot be reached (a looping link) is named with exit 66/74, not an internal error") {
  TempDir tmp("zpp_cli_loop");
  std::filesystem::create_symlink("loop", tmp / "loop");  // a link to itself: ELOOP
  const std::string loop = (tmp / "loop").string();
  auto r = run_tool("zpp-train", with({"train", "data.input=" + loop, "--out", (tmp / "a").string()}, kTiny));
  CHECK(r.exit_code == 66);
  CHECK(r.err.find("data.input: '" + loop + "' cannot be reached") != std::string::npos);
  r = run_tool("zpp-train", {"prepare", "--input", loop, "--out", (tmp / "b").string()});
  CHECK(r.exit_code == 74);
  CHECK(r.err.find("cannot read input text " + loop) != std::string::npos);
  r = run_tool("zpp-train", {"sample", "--checkpoint", loop});
  CHECK(r.exit_code == 66);
  CHECK(r.err.find("checkpoint: '" + loop + "' cannot be reached") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
}
