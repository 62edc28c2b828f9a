// nxm-compress end to end on CI-sized inputs: ratio against hand-computed values; a tiny compress run
// (teacher pretrained and fine-tuned in-process) with its metrics, packed artifact, unpack (bit-exact
// against the run's compressed checkpoint) and eval; search meeting its target; finetune on a TSV;
// bad input: a plan without a component, keep >= group, a group that does not divide a tensor, a
// malformed TSV line, a corrupted packed file and one that lacks a component matrix; eval and bench with
// device=cuda (the same accuracy as the CPU where a device answers, else exit 2); a tiny GPT compressed
// with its next-token loss and distillation, its packed model evaluated.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/safetensors.hpp"
#include "test_support.hpp"

using core::test::run_tool;
using core::test::TempDir;

namespace {
nlohmann::json last_json(const std::string& out) {
  const auto pos = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
  return nlohmann::json::parse(pos == std::string::npos ? out : out.substr(pos + 1));
}
std::string tiny_config() { return (core::test::source_dir() / "configs/nxm-compress/tiny.yaml").string(); }
bool mentions(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// The tiny compress run all cases share (made once).
const std::filesystem::path& tiny_run() {
  static TempDir dir("nxm_cli_run");
  static bool made = false;
  if (!made) {
    const auto r = run_tool("nxm-compress", {"compress", "--config", tiny_config(), "--out", (dir / "run").string()});
    REQUIRE(r.exit_code == 0);
    made = true;
  }
  static const std::filesystem::path run = dir / "run";
  return run;
}
}  // namespace

TEST_CASE("ratio: hand-computed values and bad plans") {
  auto r = run_tool("nxm-compress", {"ratio", "--layers", "12", "--hidden", "768", "--ffn", "3072", "--plan",
                                     "qkv=2:4:4,ao=2:4:4,ffn1=2:4:4,ffn2=2:4:4"});
  REQUIRE(r.exit_code == 0);
  const auto j = last_json(r.out);
  CHECK(j["cr_paper"].get<double>() == doctest::Approx(93.75));
  // (0.5 * 6 bits per weight + 32 bits per row of 9 H rows) over 32 bits of 12 H^2 weights per layer.
  const double w = 12.0 * 768 * 768;
  CHECK(j["cr_hardware"].get<double>() == doctest::Approx(100 * (1 - (3 * w + 9 * 768 * 32.0) / (32 * w))));
  r = run_tool("nxm-compress", {"ratio", "--plan", "qkv=2:4:8,ao=2:4:8,ffn1=2:4:8"});
  CHECK(r.exit_code == 2);
  CHECK(mentions(r.err, "ffn2"));
  r = run_tool("nxm-compress", {"ratio", "--plan", "qkv=4:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8"});
  CHECK(r.exit_code == 2);
  CHECK(mentions(r.err, "keep"));
}

TEST_CASE("compress (tiny): metrics, packed artifact, unpack bit-exact, eval") {
  const auto run = tiny_run();
  const auto result = nlohmann::json::parse(core::test::read_text(run / "result.json"));
  CHECK(result["cr_paper"].get<double>() == doctest::Approx(87.5));
  CHECK(result["packed_bytes"].get<double>() < result["dense_bytes"].get<double>());
  CHECK(result["accuracy"].get<double>() >= 0.0);
  std::ifstream metrics(run / "metrics.jsonl");
  int rounds = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto m = nlohmann::json::parse(line);
    if (m.value("stage", "") != "admm_round") continue;
    ++rounds;
    CHECK(m.contains("primal_residual"));
    CHECK(m.contains("dual_residual"));
    CHECK(m["mask_flip_rate"].get<double>() >= 0.0);
  }
  CHECK(rounds == 2);

  TempDir tmp("nxm_cli_unpack");
  const auto packed = run / "artifacts/model.nxm.safetensors";
  auto r = run_tool("nxm-compress", {"unpack", packed.string(), "--output", (tmp / "dense.safetensors").string()});
  REQUIRE(r.exit_code == 0);
  const core::io::SafetensorsFile unpacked(tmp / "dense.safetensors");
  std::filesystem::path ckpt;
  for (const auto& e : std::filesystem::directory_iterator(run / "checkpoints")) ckpt = e.path();
  const core::io::SafetensorsFile compressed(ckpt / "model.safetensors");
  CHECK(unpacked.names() == compressed.names());
  for (const auto& name : compressed.names()) {
    const auto a = unpacked.get(name), b = compressed.get(name);
    REQUIRE(a.bytes.size() == b.bytes.size());
    CHECK_MESSAGE(std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0, name);
  }

  r = run_tool("nxm-compress", {"eval", "--model", packed.string(), "latency_examples=5", "latency_repeats=1"});
  REQUIRE(r.exit_code == 0);
  auto e = last_json(r.out);
  CHECK(e["kind"] == "packed");
  CHECK(e["examples"] == 100);
  CHECK(e["size_bytes"].get<double>() == doctest::Approx(double(std::filesystem::file_size(packed))));
  CHECK(e["latency_ms_median"].get<double>() > 0);
  CHECK(e.contains("speedup_vs_dense_fp32"));
  // The dense fp32 path of the same weights gives the accuracy compress measured (same fp32 forward).
  CHECK(e["dense_fp32_accuracy"].get<double>() == doctest::Approx(result["accuracy"].get<double>()).epsilon(0.02));
  r = run_tool("nxm-compress", {"eval", "--model", run.string(), "baselines=false", "latency_examples=2"});
  REQUIRE(r.exit_code == 0);
  e = last_json(r.out);
  CHECK(e["kind"] == "dense");
  CHECK(e["accuracy"].get<double>() == doctest::Approx(result["accuracy"].get<double>()));
}

TEST_CASE("search meets its target ratio; finetune reads a TSV task") {
  const auto run = tiny_run();
  TempDir tmp("nxm_cli_search");
  auto r = run_tool("nxm-compress",
                    {"search", "--target-ratio", "90", "--teacher", (run / "teacher").string(), "--out",
                     (tmp / "s").string(), "compress.task.train=synthetic:200", "compress.task.test=synthetic:50",
                     "compress.task.max_seq_len=32", "compress.admm.rounds=1", "compress.admm.steps_per_round=5",
                     "compress.finetune.steps=5", "compress.finetune.batch_size=8", "probe_examples=50"});
  REQUIRE(r.exit_code == 0);
  const auto j = last_json(r.out);
  CHECK(j["cr_paper"].get<double>() >= 90.0);
  // It lands on the target: at most ratio_tolerance (0.5) above the closest ratio >= 90 the candidates reach.
  CHECK(j["search"]["achieved_cr_paper"] == j["cr_paper"]);
  CHECK(j["search"]["closest_reachable_cr_paper"].get<double>() >= 90.0);
  CHECK(j["cr_paper"].get<double>() <= j["search"]["closest_reachable_cr_paper"].get<double>() + 0.5 + 1e-9);
  CHECK(j["search"]["probes"].size() == 4 * 8);
  CHECK(j["search"].contains("predicted_accuracy"));

  std::string tsv = "sentence\tlabel\n";
  for (int i = 0; i < 40; ++i) tsv += (i % 2 ? "a fine good film\t1\n" : "a dull bad film\t0\n");
  core::test::write_text(tmp / "task.tsv", tsv);
  r = run_tool("nxm-compress", {"finetune", "--out", (tmp / "f").string(), "teacher.init_from=" + (run / "teacher/pretrain").string(),
                                "task.train=" + (tmp / "task.tsv").string(), "task.test=" + (tmp / "task.tsv").string(),
                                "task.max_seq_len=32", "teacher.train.steps=30", "teacher.train.batch_size=8"});
  REQUIRE(r.exit_code == 0);
  CHECK(last_json(r.out)["test_examples"] == 40);
  core::test::write_text(tmp / "bad.tsv", "sentence\tlabel\na film\t1\nno label here\n");
  r = run_tool("nxm-compress", {"finetune", "--out", (tmp / "g").string(), "teacher.init_from=" + (run / "teacher/pretrain").string(),
                                "task.train=" + (tmp / "bad.tsv").string(), "task.max_seq_len=32"});
  CHECK(r.exit_code == 65);
  CHECK(mentions(r.err, "bad.tsv:3"));
}

TEST_CASE("compress (tiny GPT): next-token loss, logit + hidden-state distillation, packed eval of the LM") {
  TempDir tmp("nxm_cli_gpt");
  const std::string gpt_config = (core::test::source_dir() / "configs/nxm-compress/tiny-gpt.yaml").string();
  auto r = run_tool("nxm-compress", {"compress", "--config", gpt_config, "--out", (tmp / "run").string()});
  REQUIRE(r.exit_code == 0);
  const auto result = nlohmann::json::parse(core::test::read_text(tmp / "run/result.json"));
  for (const char* key : {"teacher_loss", "hard_prune_loss", "loss", "perplexity", "loss_increase"})
    CHECK_MESSAGE(result.contains(key), key);
  CHECK(result["val_windows"] == 16);
  CHECK(result["cr_paper"].get<double>() == doctest::Approx(87.5));
  // 40 + 20 steps of a byte-level GPT: below the uniform model's log 256 = 5.55 (4.3 here).
  CHECK(result["teacher_loss"].get<double>() < 5.0);
  CHECK(result["loss"].get<double>() < 5.0);
  CHECK(result["perplexity"].get<double>() == doctest::Approx(std::exp(result["loss"].get<double>())));
  bool hard_prune_line = false;
  std::ifstream metrics(tmp / "run/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);)
    hard_prune_line |= nlohmann::json::parse(line).value("stage", "") == "hard_prune" && mentions(line, "test_loss");
  CHECK(hard_prune_line);

  // The packed file through the packed kernels (int8 activations) and the same weights as dense fp32,
  // which is the forward compress measured.
  const auto packed = tmp / "run/artifacts/model.nxm.safetensors";
  r = run_tool("nxm-compress", {"eval", "--model", packed.string(), "latency_examples=2", "latency_repeats=1"});
  REQUIRE(r.exit_code == 0);
  const auto e = last_json(r.out);
  CHECK(e["examples"] == 16);
  CHECK(e["dense_fp32_loss"].get<double>() == doctest::Approx(result["loss"].get<double>()).epsilon(1e-4));
  CHECK(e["loss"].get<double>() == doctest::Approx(result["loss"].get<double>()).epsilon(0.02));
  CHECK(e["latency_ms_median"].get<double>() > 0);
  // search on the GPT: probes by the LM loss on the validation windows, the greedy plan, then compression.
  r = run_tool("nxm-compress",
               {"search", "--target-ratio", "90", "--teacher", (tmp / "run/teacher").string(), "--out", (tmp / "s").string(),
                "compress.task.train=/usr/share/common-licenses/GPL-3", "compress.task.max_seq_len=32",
                "compress.task.max_test_examples=16", "compress.admm.rounds=1", "compress.admm.steps_per_round=5",
                "compress.finetune.steps=5", "compress.finetune.batch_size=8", "probe_examples=16"});
  REQUIRE(r.exit_code == 0);
  const auto s = last_json(r.out);
  CHECK(s["cr_paper"].get<double>() >= 90.0);
  CHECK(s["search"]["metric"] == "loss");
  REQUIRE(s["search"]["probes"].size() == 4 * 8);
  // The probes run the teacher on the evaluation's own 16 windows.
  CHECK(s["search"]["probe_teacher_loss"].get<double>() == doctest::Approx(s["teacher_loss"].get<double>()).epsilon(1e-6));
  CHECK(s["search"]["real_loss"].get<double>() == s["loss"].get<double>());
  // Predicted = teacher's loss + the loss increases its probes measured for the chosen settings (at this
  // scale some are negative: one-shot N:M of the attention of a 60-step GPT lowers its loss).
  double increase = 0;
  std::stringstream plan(s["plan"].get<std::string>());
  for (std::string item; std::getline(plan, item, ',');) {
    const auto eq = item.find('=');
    for (const auto& p : s["search"]["probes"])
      if (p["component"] == item.substr(0, eq) && p["setting"] == item.substr(eq + 1)) increase += p["drop"].get<double>();
  }
  CHECK(s["search"]["predicted_probe_loss"].get<double>() ==
        doctest::Approx(s["search"]["probe_teacher_loss"].get<double>() + increase));
  CHECK(s["search"]["predicted_loss"].get<double>() ==
        doctest::Approx(s["teacher_loss"].get<double>() + increase));
  r = run_tool("nxm-compress", {"compress", "--config", gpt_config, "--teacher", (tmp / "run/teacher").string(), "--out",
                                (tmp / "missing").string(), "task.train=" + (tmp / "no_such.txt").string()});
  CHECK(r.exit_code == 66);
  CHECK(mentions(r.err, "task.train"));
  CHECK(mentions(r.err, "no_such.txt"));
}

TEST_CASE("bad input: a group that does not divide a tensor, corrupted or incomplete packed files") {
  const auto run = tiny_run();
  TempDir tmp("nxm_cli_bad");
  auto r = run_tool("nxm-compress", {"compress", "--teacher", (run / "teacher").string(), "--out", (tmp / "a").string(),
                                     "plan=qkv=2:48:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8", "task.max_seq_len=32"});
  CHECK(r.exit_code == 65);
  CHECK(mentions(r.err, "h.0.attn.c_attn.weight"));

  const auto packed = run / "artifacts/model.nxm.safetensors";
  const core::io::SafetensorsFile f(packed);
  // Without one component matrix (its tensors and its metadata entry).
  core::io::SafetensorsWriter w;
  auto meta = nlohmann::json::parse(f.metadata().at("nxm"));
  meta["matrices"].erase("h.0.mlp.c_fc.weight");
  for (const auto& name : f.names()) {
    if (name.starts_with("h.0.mlp.c_fc.weight.")) continue;
    const auto t = f.get(name);
    w.add(name, t.dtype, t.shape, t.bytes);
  }
  w.set_metadata("nxm", meta.dump());
  w.write(tmp / "incomplete.safetensors");
  r = run_tool("nxm-compress", {"eval", "--model", (tmp / "incomplete.safetensors").string()});
  CHECK(r.exit_code == 65);
  CHECK(mentions(r.err, "h.0.mlp.c_fc.weight"));
  // A 2:4 index nibble naming the same position twice.
  core::io::SafetensorsWriter c;
  for (const auto& name : f.names()) {
    const auto t = f.get(name);
    std::vector<std::byte> bytes(t.bytes.begin(), t.bytes.end());
    if (name == "h.0.attn.c_proj.weight.indices") bytes[0] = std::byte{0x55};
    c.add(name, t.dtype, t.shape, bytes);
  }
  c.set_metadata("nxm", f.metadata().at("nxm"));
  c.write(tmp / "corrupt.safetensors");
  r = run_tool("nxm-compress", {"unpack", (tmp / "corrupt.safetensors").string(), "--output", (tmp / "x.safetensors").string()});
  CHECK(r.exit_code == 65);
  CHECK(mentions(r.err, "h.0.attn.c_proj.weight"));
  CHECK(!std::filesystem::exists(tmp / "x.safetensors"));
}

TEST_CASE("bench (tiny): every linear and the forward timed against both baselines; packed files written") {
  TempDir dir("nxm_cli_bench");
  auto r = run_tool("nxm-compress", {"bench", "-q", "--out", (dir / "b").string(), "layers=1", "hidden=64", "heads=2",
                                     "settings=2:4:8,2:4:4", "seq=1,5", "repeats=1"});
  REQUIRE(r.exit_code == 0);
  const auto j = last_json(r.out);
  CHECK(j["ffn"] == 256);
  REQUIRE(j["results"].size() == 2);
  for (const auto& e : j["results"]) {
    for (const char* c : {"qkv", "ao", "ffn1", "ffn2"}) CHECK(e["linears"][c]["2:4:4_vs_fp32"].get<double>() > 0);
    CHECK(e["forward"]["2:4:8_vs_int8"].get<double>() > 0);
    CHECK(e["forward"]["2:4:8_cpu_ms"].get<double>() > 0);  // the process's CPU time next to wall-clock time
    CHECK(e["forward"]["2:4:8_cpu_vs_fp32"].get<double>() > 0);
  }
  CHECK(j["results"][0]["linears"]["qkv"]["rows"] == 192);
  const auto packed = std::filesystem::file_size(dir / "b/artifacts/bert_2-4-8.nxm.safetensors");
  CHECK(j["size_bytes"]["2:4:8"] == packed);
  CHECK(packed < j["size_bytes"]["dense_fp32"].get<std::uint64_t>());
  r = run_tool("nxm-compress", {"bench", "--out", (dir / "c").string(), "hidden=96", "heads=2"});
  CHECK(r.exit_code == 2);
  CHECK(mentions(r.err, "multiple of 64"));
  r = run_tool("nxm-compress", {"bench", "--out", (dir / "d").string(), "seq=1,x"});
  CHECK(r.exit_code == 2);
  CHECK(mentions(r.err, "seq"));
}

TEST_CASE("device=cuda: eval and bench run the packed linears on the device where one answers, else exit 2") {
  const auto packed = tiny_run() / "artifacts/model.nxm.safetensors";
  TempDir dir("nxm_cli_cuda");
  const auto gpu = run_tool("nxm-compress", {"eval", "--model", packed.string(), "--device", "cuda",
                                             "latency_examples=2", "latency_repeats=1"});
  const auto bench = run_tool("nxm-compress", {"bench", "-q", "--out", (dir / "b").string(), "layers=1", "hidden=64",
                                               "heads=2", "settings=2:4:8,1:4:4", "seq=1,9", "repeats=1", "device=cuda"});
  if (gpu.exit_code != 0) {
    INFO(gpu.err);
    REQUIRE(std::getenv("TOOLKIT_EXPECT_DEVICE") == nullptr);  // set where a device must answer
    CHECK(gpu.exit_code == 2);
    CHECK((mentions(gpu.err, "device=cuda: no CUDA device") || mentions(gpu.err, "device=cuda: this build has no CUDA")));
    CHECK(bench.exit_code == 2);
    CHECK(mentions(bench.err, "device=cuda"));
    CHECK_FALSE(std::filesystem::exists(dir / "b/artifacts/bert_2-4-8.nxm.safetensors"));
    return;
  }
  const auto cpu = run_tool("nxm-compress", {"eval", "--model", packed.string(), "latency_examples=2", "latency_repeats=1"});
  REQUIRE(cpu.exit_code == 0);
  const auto g = last_json(gpu.out), c = last_json(cpu.out);
  CHECK(g["device"] == "cuda");
  CHECK(g["device_linears"] == 4);  // the tiny run: one block, four 2:4 int8 linears
  CHECK(g["dense_int8_device"] == "cuda");
  CHECK(g["dense_fp32_device"] == "cpu");
  // The same int32 sums as the CPU kernels: only the last bit of the scaling may differ.
  CHECK(g["accuracy"].get<double>() == doctest::Approx(c["accuracy"].get<double>()).epsilon(0.02));
  CHECK(g["dense_int8_accuracy"].get<double>() == doctest::Approx(c["dense_int8_accuracy"].get<double>()).epsilon(0.02));
  REQUIRE(bench.exit_code == 0);
  const auto b = last_json(bench.out);
  CHECK(b["device"] == "cuda");
  CHECK(b["results"][1]["forward"]["1:4:4_vs_fp32"].get<double>() > 0);
}
