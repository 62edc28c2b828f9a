// One training step on the device (TransformerCuda) against the host model (Model<float>, the
// reference) from the same initial weights, for a GPT decoder (next-token loss) and a BERT encoder
// (masked-LM loss, padded sequences with two segments); and a few AdamW steps on the device that
// make the loss fall. Tolerances (the device keeps activations in bf16, 8 significant bits, through
// ~10 rounded layers per block each way; parameter gradients are fp32 sums of bf16 products):
//   loss:            |gpu - cpu| <= 1e-2 * cpu
//   every gradient tensor, relative L2 error ||g_gpu - g_cpu|| <= tol * ||g_cpu|| + 1e-6 with
//     tol = 0.05 for weight matrices and embeddings (wte, wpe, wse, c_attn, c_proj, c_fc, mlm.dense),
//     tol = 0.10 for biases and LayerNorm gains/biases (column sums of signed terms: more cancellation);
//   and the cosine between the two gradient tensors >= 0.99. (BERT's pooler and classifier get no
//   gradient from the MLM loss, nor its MLM head from the classification loss: both sides must be
//   exactly 0 there.) The classification head (pooler on position 0, tanh, classifier) is checked
//   the same way with padded sequences and three classes.
// Random-LTD (TransformerCuda::set_token_routing): a GPT and a padded BERT step with two routed blocks match
// the host model given core::ltd's host subsets (same tolerances), so the device draws the same subsets,
// keeps the kept-order causal mask and the gathered padding mask, and passes the dropped rows through; the
// identity subset of every block gives the unrouted step bit for bit; the FLOPs fall by the routed blocks'.
// Exits 77 (skipped) when no CUDA device answers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device_or_skip.hpp"
#include "common/errors.hpp"
#include "common/rng.hpp"
#include "io/jsonl.hpp"
#include "kernels/runtime.hpp"
#include "test_support.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"
#include "train/transformer_cuda.hpp"
#include "ltd/pretrain.hpp"
#include "ltd/sampler.hpp"

using namespace core::train;

namespace {

const bool kHaveDevice = core::test::device_or_skip("GPU training-step tests");

ModelConfig small_model(const char* arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.n_positions = 32;
  c.vocab_size = 100;
  c.vocab_pad_to = 8;  // padded vocabulary 104
  return c;
}

// A GPT batch: next-token targets, some ignored (-1).
struct Data {
  int B = 4, T = 32;
  std::vector<std::int32_t> tok, tgt, seg, labels;
  std::vector<std::uint8_t> mask;
  Task task = Task::lm;
  explicit Data(int vocab) : tok(B * T), tgt(B * T) {
    core::Rng rng(11);
    for (auto& t : tok) t = static_cast<std::int32_t>(rng.below(vocab));
    for (int i = 0; i < B * T; ++i) tgt[i] = i % 7 == 3 ? -1 : tok[(i + 1) % (B * T)];  // some ignored
  }
  Batch batch() const {
    Batch b;
    b.B = B;
    b.T = T;
    b.tokens = tok.data();
    b.targets = tgt.data();
    b.segments = seg.empty() ? nullptr : seg.data();
    b.attention_mask = mask.empty() ? nullptr : mask.data();
    b.labels = labels.empty() ? nullptr : labels.data();
    return b;
  }
};

// A BERT MLM batch: sequence b has 32 - 7 b real tokens (the rest padding: mask 0, target -1),
// segment 0 for its first half and 1 for the second; about one real position in five is a target,
// its input replaced by the [MASK] id vocab - 1.
Data bert_data(int vocab) {
  Data d(vocab - 1);
  d.task = Task::mlm;
  d.seg.assign(d.tok.size(), 0);
  d.mask.assign(d.tok.size(), 0);
  core::Rng rng(12);
  for (int b = 0; b < d.B; ++b) {
    const int len = d.T - 7 * b;
    for (int t = 0; t < d.T; ++t) {
      const int i = b * d.T + t;
      d.tgt[i] = -1;
      if (t >= len) continue;
      d.mask[i] = 1;
      d.seg[i] = t >= len / 2 ? 1 : 0;
      if (rng.below(5) == 0 || t == 1) {  // t == 1: every sequence has a target
        d.tgt[i] = d.tok[i];
        d.tok[i] = vocab - 1;
      }
    }
  }
  return d;
}

// A BERT sequence-classification batch: bert_data's padded, two-segment sequences (unmasked), one
// label per sequence.
Data classify_data(const ModelConfig& cfg) {
  Data d = bert_data(cfg.vocab_size);
  d.task = Task::classify;
  d.tgt.clear();
  for (int b = 0; b < d.B; ++b) d.labels.push_back((b + 2) % cfg.num_labels);
  return d;
}

// Random-LTD's routing of one micro step: blocks `layers` keep `kept` of the T positions, the host
// model the subsets core::ltd draws on the host, the device the same subsets drawn by its kernel.
struct Routing {
  std::vector<int> layers;
  int kept = 0;
  std::int64_t step = 5;
  int rank = 1, micro = 2;
  core::ltd::RoutingPlan plan(const ModelConfig& cfg, int T) const {
    core::ltd::RoutingPlan p;
    p.dropping = true;
    p.n_layer = cfg.n_layer;
    p.seq_len = T;
    p.layers = layers;
    p.seed = 41;
    return p;
  }
};

// One forward + backward on the host and on the device (with random-LTD's routing when given);
// compares the loss and every gradient tensor.
void check_step_matches_host(const ModelConfig& cfg, const Data& data, const Routing* routing = nullptr) {
  Model<float> cpu(cfg);
  init_parameters(cpu.params(), 7);
  cpu.grads().zero();
  TransformerCuda gpu(cfg);
  if (routing) {
    const core::ltd::RoutingPlan plan = routing->plan(cfg, data.T);
    cpu.set_token_subsets(core::ltd::draw_token_subsets(plan, routing->kept, routing->step, routing->rank,
                                                        routing->micro, data.B, data.T));
    const TokenRouting device = core::ltd::device_token_routing(plan, routing->kept, routing->step, routing->rank,
                                                                routing->micro, data.B);
    REQUIRE(device.layers == routing->layers);
    gpu.set_token_routing(device);
  }
  const double cpu_loss = cpu.forward(data.batch(), data.task);
  cpu.backward();

  gpu.upload(cpu.params());
  gpu.zero_grads();
  const double gpu_loss = gpu.step(data.batch(), data.task, true);
  INFO("loss cpu " << cpu_loss << " gpu " << gpu_loss);
  CHECK(std::abs(gpu_loss - cpu_loss) <= 1e-2 * cpu_loss);
  FlatBuffers<float> grads(cpu.layout());
  gpu.download_grads(grads);

  const ParamLayout& layout = cpu.layout();
  for (int g = 0; g < layout.num_groups(); ++g)
    for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
      const TensorView& view = layout.groups()[g].tensors[t];
      const float* want = cpu.grads().tensor(g, t);
      const float* got = grads.tensor(g, t);
      double diff = 0, ref = 0, dotp = 0, got2 = 0;
      for (std::size_t i = 0; i < view.numel; ++i) {
        diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        ref += double(want[i]) * want[i];
        got2 += double(got[i]) * got[i];
        dotp += double(got[i]) * want[i];
      }
      const double tol = view.decay ? 0.05 : 0.10;
      const double rel = std::sqrt(diff) / (std::sqrt(ref) + 1e-30);
      const double cosine = dotp / (std::sqrt(ref * got2) + 1e-30);
      INFO(view.name << ": relative L2 error " << rel << " (tol " << tol << "), cosine " << cosine << ", |cpu| "
                     << std::sqrt(ref));
      CHECK(std::sqrt(diff) <= tol * std::sqrt(ref) + 1e-6);
      if (ref > 1e-12) CHECK(cosine >= 0.99);
    }
  CHECK(gpu.grad_norm() == doctest::Approx(global_grad_norm(cpu.grads())).epsilon(0.05));
}

// Twelve AdamW steps on one batch on the device; the loss falls, and the downloaded weights give the
// device's loss on the host too (bf16 forward vs fp32).
void check_loss_falls(const ModelConfig& cfg, const Data& data) {
  Model<float> host(cfg);
  init_parameters(host.params(), 3);
  TransformerCuda gpu(cfg);
  gpu.upload(host.params());
  AdamWHyper hyper;
  double first = 0, last = 0;
  for (int step = 0; step < 12; ++step) {
    gpu.zero_grads();
    last = gpu.step(data.batch(), data.task, true);
    if (step == 0) first = last;
    gpu.adamw(hyper, 3e-3, 1.0);
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < first - 0.5);
  CHECK(gpu.steps_taken() == 12);
  AdamW<float> opt(host.layout(), hyper);
  gpu.download(host.params(), &opt);
  CHECK(opt.steps_taken() == 12);
  const double host_loss = host.forward(data.batch(), data.task);
  const double device_loss = gpu.step(data.batch(), data.task, false);
  CHECK(std::abs(host_loss - device_loss) <= 2e-2 * host_loss);
}

}  // namespace

TEST_CASE("one GPT step: device loss and every parameter gradient match the host model") {
  const ModelConfig cfg = small_model("gpt");
  check_step_matches_host(cfg, Data(cfg.vocab_size));
}

TEST_CASE("one BERT MLM step with padding and segments: device loss and every gradient match the host model") {
  const ModelConfig cfg = small_model("bert");
  const Data data = bert_data(cfg.vocab_size);
  {
    INFO("with segment ids and a padding mask");
    check_step_matches_host(cfg, data);
  }
  Data plain = data;  // what zpp-train's MLM batches are
  plain.seg.clear();
  plain.mask.clear();
  INFO("without segment ids or a padding mask");
  check_step_matches_host(cfg, plain);
}

TEST_CASE("one BERT classification step (pooler, tanh, classifier): device loss and every gradient match the host") {
  ModelConfig cfg = small_model("bert");
  cfg.num_labels = 3;  // the logits' rows are padded to 8 on the device
  check_step_matches_host(cfg, classify_data(cfg));
}

TEST_CASE("random-LTD on the device: GPT and padded BERT steps with routed blocks match the host model") {
  ModelConfig cfg = small_model("gpt");
  cfg.n_layer = 3;
  const Routing routing{{1, 2}, 12};  // two routed blocks in a row, the last one feeding the head
  {
    INFO("GPT, causal in kept order");
    check_step_matches_host(cfg, Data(cfg.vocab_size), &routing);
  }
  cfg.arch = "bert";
  INFO("BERT MLM, the padding mask gathered with the tokens");
  check_step_matches_host(cfg, bert_data(cfg.vocab_size), &routing);
}

// Loss, every gradient bit and the FLOP count of one device step, as the tests compare them.
struct DeviceStep {
  double loss = 0;
  std::vector<std::vector<float>> grads;
  std::uint64_t flops = 0;
  bool operator==(const DeviceStep& o) const {
    if (std::memcmp(&loss, &o.loss, sizeof loss) != 0 || flops != o.flops || grads.size() != o.grads.size())
      return false;
    for (std::size_t g = 0; g < grads.size(); ++g)
      if (grads[g].size() != o.grads[g].size() ||
          std::memcmp(grads[g].data(), o.grads[g].data(), grads[g].size() * sizeof(float)) != 0)
        return false;
    return true;
  }
};

DeviceStep device_step(TransformerCuda& gpu, const ParamLayout& layout, const Data& data, bool backward = true) {
  gpu.zero_grads();
  const std::uint64_t before = gpu.gemm_flops();
  DeviceStep out;
  out.loss = gpu.step(data.batch(), data.task, backward);
  out.flops = gpu.gemm_flops() - before;
  FlatBuffers<float> grads(layout);
  gpu.download_grads(grads);
  for (int g = 0; g < layout.num_groups(); ++g)
    out.grads.emplace_back(grads.group(g), grads.group(g) + layout.groups()[g].size);
  return out;
}

TEST_CASE("random-LTD on the device keeping every position equals no dropping, bit for bit; FLOPs fall as counted") {
  for (const char* arch : {"gpt", "bert"}) {
    CAPTURE(arch);
    ModelConfig cfg = small_model(arch);
    cfg.n_layer = 1;  // the block routed or not; the head and embeddings around it
    const bool bert = std::string(arch) == "bert";
    const Data data = bert ? bert_data(cfg.vocab_size) : Data(cfg.vocab_size);
    Model<float> host(cfg);
    init_parameters(host.params(), 9);
    TransformerCuda gpu(cfg);
    gpu.upload(host.params());
    const DeviceStep full = device_step(gpu, host.layout(), data);
    // min = max = n: ltd-pretrain routes nothing, as with dropping disabled.
    const Routing all{{0}, data.T};
    CHECK(core::ltd::device_token_routing(all.plan(cfg, data.T), data.T, 0, 0, 0, data.B).layers.empty());
    // The gather -> block -> scatter path forced on the identity subset of every block.
    gpu.set_token_routing({all.layers, data.T, 3, 0, 0, 0});
    CHECK(device_step(gpu, host.layout(), data) == full);
    if (!bert) continue;
    // Forward only, the block on 12 of 32 positions, then cleared: the forward FLOPs differ by the block's at
    // 32 instead of 12 tokens per sequence (core::ltd::block_flops / 3, the host's count); cleared, the block
    // runs on every position again.
    gpu.set_token_routing({{0}, 12, 3, 0, 0, 0});
    const DeviceStep routed = device_step(gpu, host.layout(), data, false);
    gpu.set_token_routing({});
    const DeviceStep cleared = device_step(gpu, host.layout(), data, false);
    CHECK(std::memcmp(&cleared.loss, &full.loss, sizeof full.loss) == 0);
    CHECK(routed.loss != full.loss);
    CHECK(double(cleared.flops - routed.flops) * 3 ==
          data.B * (core::ltd::block_flops(cfg, data.T) - core::ltd::block_flops(cfg, 12)));
  }
}

TEST_CASE("ltd-pretrain's loop on the device: the host run's kept counts, LayerTokens, lr and FLOPs, close losses") {
  core::test::TempDir tmp("ltd_device_run");
  std::string text;
  for (int i = 0; i < 60; ++i) text += "to be or not to be, that is the question " + std::to_string(i) + "\n";
  core::test::write_text(tmp / "text.txt", text);
  const std::string ltd = "data_efficiency.data_routing.random_ltd.";
  const auto options = [&](const char* device) {
    return core::resolve_options<core::ltd::LtdTrainOptions>(
        {}, {"data.input=" + (tmp / "text.txt").string(), "model.n_layer=3", "model.n_embd=32", "model.n_head=2",
             "model.n_positions=16", "data.seq_len=16", "train_micro_batch_size_per_gpu=2",
             "gradient_accumulation_steps=2", "train_iters=3", "eval_interval=3", "eval_iters=1",
             ltd + "random_ltd_schedule.min_value=4", ltd + "random_ltd_schedule.schedule_config.seq_per_step=4",
             ltd + "random_ltd_schedule.schedule_config.require_steps=4",
             ltd + "layer_token_lr_schedule.warmup_layer_tokens=128", std::string("device=") + device});
  };
  core::RunDir host_dir("ltd-pretrain", tmp.path() / "cpu"), device_dir("ltd-pretrain", tmp.path() / "cuda");
  const nlohmann::json host = core::ltd::run_ltd_training(options("cpu"), host_dir).summary;
  const nlohmann::json device = core::ltd::run_ltd_training(options("cuda"), device_dir).summary;
  const auto h = core::io::read_jsonl(tmp.path() / "cpu/metrics.jsonl"), d = core::io::read_jsonl(tmp.path() / "cuda/metrics.jsonl");
  REQUIRE(h.size() == 3);
  REQUIRE(d.size() == 3);
  for (std::size_t i = 0; i < h.size(); ++i) {
    CAPTURE(i);
    CHECK(d[i]["kept_tokens"] == h[i]["kept_tokens"]);
    CHECK(d[i]["layer_tokens"] == h[i]["layer_tokens"]);
    CHECK(d[i]["lr"] == h[i]["lr"]);
    // The same products (the head over V = Vp = 256 columns on every row): the device counts what the host does.
    CHECK(d[i]["gemm_flops"] == h[i]["gemm_flops"]);
    CHECK(d[i]["loss"].get<double>() == doctest::Approx(h[i]["loss"].get<double>()).epsilon(0.02));
  }
  CHECK(h[0]["kept_tokens"] == 4);
  CHECK(device["device"] == "cuda");
  CHECK(device["flops_saving"].get<double>() > 0.1);  // block 1 of 3 on 4, 8, 12 of 16 tokens
  CHECK(device["flops_saving"] == host["flops_saving"]);
  CHECK(device["layer_token_saving"] == host["layer_token_saving"]);
  // Validation runs on every token (the routing is cleared after each micro step).
  CHECK(device["val_loss"].get<double>() == doctest::Approx(host["val_loss"].get<double>()).epsilon(0.02));
}

TEST_CASE("device AdamW steps on one batch make the loss fall; weights come back to the host") {
  const ModelConfig gpt = small_model("gpt");
  check_loss_falls(gpt, Data(gpt.vocab_size));
  const ModelConfig bert = small_model("bert");
  check_loss_falls(bert, bert_data(bert.vocab_size));
  check_loss_falls(bert, classify_data(bert));
}

TEST_CASE("the device refuses a task its architecture lacks, a batch without its labels, labels out of range") {
  const ModelConfig bert = small_model("bert");
  TransformerCuda gpu(bert);
  const Data data = bert_data(bert.vocab_size);
  CHECK_THROWS_AS(gpu.step(data.batch(), Task::lm, true), core::UsageError);
  CHECK_THROWS_AS(gpu.step(data.batch(), Task::classify, true), core::UsageError);  // no labels
  Data bad_label = classify_data(bert);
  bad_label.labels[1] = bert.num_labels;
  CHECK_THROWS_WITH_AS(gpu.step(bad_label.batch(), Task::classify, true),
                       doctest::Contains("label 2 of sequence 1 is outside [0, 2)"), core::DataError);
  Data bad_segment = data;
  bad_segment.seg[5] = bert.type_vocab_size;
  CHECK_THROWS_AS(gpu.step(bad_segment.batch(), Task::mlm, true), core::DataError);
  const ModelConfig gpt = small_model("gpt");
  TransformerCuda gpt_gpu(gpt);
  CHECK_THROWS_AS(gpt_gpu.step(Data(gpt.vocab_size).batch(), Task::mlm, true), core::UsageError);
  // Token routing: layers out of order or range, nothing kept, more kept than the batch has.
  CHECK_THROWS_AS(gpt_gpu.set_token_routing({{1, 0}, 4}), core::UsageError);
  CHECK_THROWS_AS(gpt_gpu.set_token_routing({{2}, 4}), core::UsageError);
  CHECK_THROWS_AS(gpt_gpu.set_token_routing({{1}, 0}), core::UsageError);
  gpt_gpu.set_token_routing({{1}, 33});
  CHECK_THROWS_WITH_AS(gpt_gpu.step(Data(gpt.vocab_size).batch(), Task::lm, true),
                       doctest::Contains("keeps 33 positions of sequences of 32"), core::UsageError);
}
