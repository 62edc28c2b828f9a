// Training behaviour on the float32 path: one batch is memorised, two half batches accumulate to the
// whole batch's gradient (double), the loss falls on real text,
// a resumed run (after a plain end, and after a stop request) reproduces the uninterrupted run's
// losses bit for bit, and the optimizer pieces match their formulas.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <vector>

#include "common/errors.hpp"
#include "common/memory.hpp"
#include "common/rng.hpp"
#include "common/signals.hpp"
#include "test_support.hpp"
#include "tiny_config.hpp"
#include "train/checkpoint.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"
#include "train/sample.hpp"
#include "train/trainer.hpp"

using namespace core::train;
using core::test::TempDir;

namespace {

ModelConfig tiny_gpt(int vocab) { return core::test::tiny_config("gpt", 32, 32, vocab); }

std::vector<double> losses_of(const core::fs::path& metrics) {
  std::vector<double> out;
  std::ifstream f(metrics);
  std::string line;
  while (std::getline(f, line)) out.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  return out;
}

TrainOptions small_run(const core::fs::path& text) {
  TrainOptions o;
  o.model = tiny_gpt(256);
  o.data.input = text.string();
  o.data.seq_len = 16;
  o.train_micro_batch_size_per_gpu = 4;
  o.gradient_accumulation_steps = 2;
  o.train_iters = 8;
  o.eval_interval = 4;
  o.eval_iters = 2;
  o.scheduler.params.warmup_num_steps = 2;
  return o;
}

std::string sample_text() {
  std::string s;
  for (int i = 0; i < 60; ++i) s += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

TEST_CASE("learning-rate schedules and AdamW follow their formulas") {
  for (const auto s : {LrSchedule::warmup, LrSchedule::warmup_decay, LrSchedule::warmup_cosine}) {
    CHECK(scheduled_lr(s, 0, 1.0, 4, 14, 0.1) == doctest::Approx(0.25));
    CHECK(scheduled_lr(s, 3, 1.0, 4, 14, 0.1) == doctest::Approx(1.0));
  }
  const auto cosine = LrSchedule::warmup_cosine, decay = LrSchedule::warmup_decay;
  CHECK(scheduled_lr(cosine, 9, 1.0, 4, 14, 0.1) == doctest::Approx(0.55));  // half way: (1 + 0.1) / 2
  CHECK(scheduled_lr(cosine, 14, 1.0, 4, 14, 0.1) == doctest::Approx(0.1));
  CHECK(scheduled_lr(cosine, 20, 1.0, 4, 14, 0.1) == doctest::Approx(0.1));
  CHECK(scheduled_lr(decay, 9, 1.0, 4, 14, 0.1) == doctest::Approx(0.5));
  CHECK(scheduled_lr(decay, 14, 1.0, 4, 14, 0.1) == doctest::Approx(0.0));
  CHECK(scheduled_lr(decay, 20, 1.0, 4, 14, 0.1) == doctest::Approx(0.0));
  CHECK(scheduled_lr(LrSchedule::warmup, 20, 1.0, 4, 14, 0.1) == doctest::Approx(1.0));
  CHECK(parse_lr_schedule("WarmupDecayLR") == decay);
  CHECK_THROWS_AS(parse_lr_schedule("OneCycle"), core::UsageError);

  ModelConfig c = tiny_gpt(8);
  c.n_layer = 1;
  ParamLayout layout(c);
  FlatBuffers<double> p(layout), g(layout);
  AdamWHyper h;
  h.weight_decay = 0.5;
  AdamW<double> opt(layout, h);
  double* w = p.block(0, kQkvW);  // decayed
  double* b = p.block(0, kQkvB);  // not decayed
  w[0] = 2.0;
  b[0] = 2.0;
  g.block(0, kQkvW)[0] = 0.3;
  g.block(0, kQkvB)[0] = 0.3;
  opt.step(p, g, 0.1, 2.0);  // first step: m_hat / sqrt(v_hat) = sign(g) = 1
  CHECK(b[0] == doctest::Approx(2.0 - 0.1 * (1.0)).epsilon(1e-6));
  CHECK(w[0] == doctest::Approx(2.0 - 0.1 * (1.0 + 0.5 * 2.0)).epsilon(1e-6));
  CHECK(global_grad_norm(g) == doctest::Approx(std::sqrt(0.18)));
}

TEST_CASE("a tiny GPT memorises one batch") {
  Model<float> m(tiny_gpt(16));
  init_parameters(m.params(), 3);
  AdamWHyper h;
  h.weight_decay = 0.0;
  AdamW<float> opt(m.layout(), h);
  std::vector<std::int32_t> tok(2 * 12), tgt(2 * 12);
  core::Rng rng(5);
  for (auto& t : tok) t = static_cast<std::int32_t>(rng.below(16));
  for (auto& t : tgt) t = static_cast<std::int32_t>(rng.below(16));
  Batch b;
  b.B = 2;
  b.T = 12;
  b.tokens = tok.data();
  b.targets = tgt.data();
  float first = 0, loss = 0;
  for (int step = 0; step < 200; ++step) {
    m.grads().zero();
    loss = m.forward(b, Task::lm);
    if (step == 0) first = loss;
    m.backward();
    opt.step(m.params(), m.grads(), 3e-3, 1.0);
  }
  CHECK(first == doctest::Approx(std::log(16.0)).epsilon(0.1));
  CHECK(loss < 0.05f);
}

TEST_CASE("gradient accumulation: two half batches with backward(1/2) give the whole batch's loss and gradient") {
  Model<double> m(tiny_gpt(16));
  init_parameters(m.params(), 4);
  std::vector<std::int32_t> tok(4 * 8), tgt(4 * 8);
  core::Rng rng(6);
  for (auto& t : tok) t = static_cast<std::int32_t>(rng.below(16));
  for (auto& t : tgt) t = static_cast<std::int32_t>(rng.below(16));
  const auto batch = [&](int first, int B) {
    Batch b;
    b.B = B;
    b.T = 8;
    b.tokens = tok.data() + first * 8;
    b.targets = tgt.data() + first * 8;
    return b;
  };
  m.grads().zero();
  const double whole = m.forward(batch(0, 4), Task::lm);
  m.backward();
  std::vector<std::vector<double>> want;
  for (int g = 0; g < m.grads().num_groups(); ++g)
    want.emplace_back(m.grads().group(g), m.grads().group(g) + m.grads().group_size(g));
  m.grads().zero();
  double halves = 0;
  for (int first : {0, 2}) {
    halves += m.forward(batch(first, 2), Task::lm) / 2;
    m.backward(0.5);
  }
  CHECK(halves == doctest::Approx(whole).epsilon(1e-12));
  for (int g = 0; g < m.grads().num_groups(); ++g)
    for (std::size_t i = 0; i < m.grads().group_size(g); ++i)
      REQUIRE(m.grads().group(g)[i] == doctest::Approx(want[g][i]).epsilon(1e-9).scale(1e-12));
}

TEST_CASE("loss falls on real text (tinyshakespeare)") {
  if (!core::test::have_dataset("text/tinyshakespeare.txt")) {
    MESSAGE("skipped: tinyshakespeare.txt not available");
    return;
  }
  TempDir tmp("train_text");
  TrainOptions o = small_run(core::test::datasets_dir() / "text/tinyshakespeare.txt");
  o.data.seq_len = 32;
  o.train_micro_batch_size_per_gpu = 8;
  o.gradient_accumulation_steps = 1;
  o.train_iters = 80;
  o.eval_interval = 80;
  o.eval_iters = 4;
  o.optimizer.params.lr = 3e-3;
  core::RunDir rd("zpp-train", tmp.path() / "run");
  const auto out = run_training(o, rd);
  const auto losses = losses_of(tmp.path() / "run/metrics.jsonl");
  REQUIRE(losses.size() == 80);
  CHECK(losses.front() > 5.0);                           // ~ln(256) at the start
  CHECK(losses.back() < losses.front() - 1.5);
  CHECK(out.summary["val_loss"].get<double>() < 3.7);    // ln(256) = 5.55 for a uniform guess
}

TEST_CASE("resume continues bit-identically, after a normal end and after a stop request") {
  TempDir tmp("train_resume");
  core::test::write_text(tmp / "text.txt", sample_text());
  const TrainOptions full = small_run(tmp / "text.txt");

  core::RunDir rd_full("zpp-train", tmp.path() / "full");
  run_training(full, rd_full);
  const auto ref = losses_of(tmp.path() / "full/metrics.jsonl");
  REQUIRE(ref.size() == 8);

  SUBCASE("stop at a shorter train_iters, resume with the full one") {
    TrainOptions first = full;
    first.train_iters = 3;
    first.scheduler.params.total_num_steps = full.train_iters;
    core::RunDir rd("zpp-train", tmp.path() / "split");
    run_training(first, rd);
    TrainOptions second = full;
    second.resume = true;
    const auto out = run_training(second, rd);
    CHECK(out.summary["steps"] == 8);
    const auto got = losses_of(tmp.path() / "split/metrics.jsonl");
    REQUIRE(got.size() == ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == ref[i]);  // exact
  }
  SUBCASE("stop signal: checkpoint at the next step, then resume") {
    core::RunDir rd("zpp-train", tmp.path() / "signal");
    const auto out = run_training(full, rd, [](const nlohmann::json& rec) {
      if (rec["step"] == 5) core::request_stop_for_test();
    });
    core::clear_stop_request();
    CHECK(out.interrupted);
    CHECK(out.summary["steps"] == 5);
    CHECK(out.summary["checkpoint"].get<std::string>().ends_with("step_00000005"));
    TrainOptions again = full;
    again.resume = true;
    run_training(again, rd);
    const auto got = losses_of(tmp.path() / "signal/metrics.jsonl");
    REQUIRE(got.size() == ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == ref[i]);
  }
}

TEST_CASE("a BERT encoder trains with the masked-LM objective") {
  TempDir tmp("train_bert");
  core::test::write_text(tmp / "text.txt", sample_text());
  TrainOptions o = small_run(tmp / "text.txt");
  o.model.arch = "bert";
  o.model.vocab_size = 256;
  {
    core::RunDir rd("zpp-train", tmp.path() / "novocab");
    CHECK_THROWS_WITH_AS(run_training(o, rd), doctest::Contains("[MASK]"), core::UsageError);
  }
  o.model.vocab_size = 257;  // bytes + [MASK]
  o.train_iters = 60;
  o.gradient_accumulation_steps = 1;
  o.train_micro_batch_size_per_gpu = 8;
  o.eval_interval = 60;
  o.optimizer.params.lr = 3e-3;
  core::RunDir rd("zpp-train", tmp.path() / "bert");
  const auto out = run_training(o, rd);
  const auto losses = losses_of(tmp.path() / "bert/metrics.jsonl");
  CHECK(losses.front() > 5.0);
  CHECK(out.summary["val_loss"].get<double>() < 3.5);
}

TEST_CASE("mlm masking: about 15% of positions, 80% of them [MASK], deterministic") {
  std::vector<std::int32_t> tok(20000, 7), tgt(20000);
  apply_mlm_mask(tok, tgt, 99, 50, 0.15, 1, 2);
  const auto chosen = std::count_if(tgt.begin(), tgt.end(), [](int t) { return t >= 0; });
  const auto masked = std::count(tok.begin(), tok.end(), 99);
  CHECK(chosen == doctest::Approx(3000).epsilon(0.08));
  CHECK(double(masked) / double(chosen) == doctest::Approx(0.8).epsilon(0.05));
  std::vector<std::int32_t> tok2(20000, 7), tgt2(20000);
  apply_mlm_mask(tok2, tgt2, 99, 50, 0.15, 1, 2);
  CHECK(tok2 == tok);
}

TEST_CASE("bad configurations are usage errors naming the key") {
  TrainOptions o;
  o.model.n_head = 3;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("model.n_head"), core::UsageError);
  o.model.n_head = 4;
  o.data.seq_len = 512;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("model.n_positions"), core::UsageError);
}

TEST_CASE("resume after a kill past the last checkpoint: metrics.jsonl holds each step once") {
  TempDir tmp("train_resume_kill");
  core::test::write_text(tmp / "text.txt", sample_text());
  TrainOptions o = small_run(tmp / "text.txt");
  core::RunDir rd_full("zpp-train", tmp.path() / "full");
  run_training(o, rd_full);
  const auto ref = losses_of(tmp.path() / "full/metrics.jsonl");

  // A run killed after step 8's record, before its final checkpoint, mid-way through a later line.
  o.save_interval = 4;
  {
    core::RunDir rd("zpp-train", tmp.path() / "killed");
    run_training(o, rd);
  }
  core::fs::remove_all(tmp.path() / "killed/checkpoints/step_00000008");
  std::ofstream(tmp.path() / "killed/metrics.jsonl", std::ios::app) << "{\"step\": 9, \"lo";
  o.resume = true;
  core::RunDir rd("zpp-train", tmp.path() / "killed");
  run_training(o, rd);
  const auto got = losses_of(tmp.path() / "killed/metrics.jsonl");
  REQUIRE(got.size() == ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) CHECK(got[i] == ref[i]);
}

TEST_CASE("--resume refuses a different model or tokenizer and a checkpoint past train_iters; a fresh run refuses a used --out") {
  TempDir tmp("train_resume_guard");
  core::test::write_text(tmp / "text.txt", sample_text());
  TrainOptions o = small_run(tmp / "text.txt");
  o.train_iters = 4;
  core::RunDir rd("zpp-train", tmp.path() / "run");
  run_training(o, rd);
  const auto ckpt = tmp.path() / "run/checkpoints/step_00000004";
  REQUIRE(core::fs::exists(ckpt / "DONE"));

  CHECK_THROWS_WITH_AS(run_training(o, rd), doctest::Contains("pass --resume"), core::UsageError);
  TrainOptions r = o;
  r.resume = true;
  r.model.n_embd = 64;
  CHECK_THROWS_WITH_AS(run_training(r, rd), doctest::Contains("model.n_embd = 64 (checkpoint: 32)"), core::UsageError);
  r = o;
  r.resume = true;
  r.train_iters = 3;
  CHECK_THROWS_WITH_AS(run_training(r, rd), doctest::Contains("past train_iters = 3"), core::UsageError);

  // Resuming a finished run leaves its checkpoint alone (no remove-and-rewrite of the only copy).
  core::test::write_text(ckpt / "marker", "x");
  r.train_iters = 4;
  const auto out = run_training(r, rd);
  CHECK(out.summary["steps"] == 4);
  CHECK(out.summary["checkpoint"] == ckpt.string());
  CHECK(core::fs::exists(ckpt / "marker"));
  CHECK(losses_of(tmp.path() / "run/metrics.jsonl").size() == 4);
}

TEST_CASE("non-finite optimizer and model values are usage errors naming the key") {
  const double inf = std::numeric_limits<double>::infinity();
  TrainOptions o;
  o.optimizer.params.lr = inf;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("optimizer.params.lr"), core::UsageError);
  o = TrainOptions{};
  o.optimizer.params.weight_decay = inf;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("optimizer.params.weight_decay"), core::UsageError);
  o = TrainOptions{};
  o.optimizer.params.eps = inf;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("optimizer.params.eps"), core::UsageError);
  o = TrainOptions{};
  o.model.init_std = inf;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("model.init_std"), core::UsageError);
}

TEST_CASE("a micro batch beyond the host's memory is refused before anything is allocated") {
  const ModelConfig c = tiny_gpt(256);
  // Every activation buffer grows linearly with the batch.
  CHECK(Model<float>::activation_bytes(c, 6, 16) == 3 * Model<float>::activation_bytes(c, 2, 16));
  CHECK(Model<float>::activation_bytes(c, 1, 16) > 16u * 256u * sizeof(float));  // at least the logits
  if (core::available_memory_bytes() == 0) {
    MESSAGE("skipped: the machine reports no available memory figure");
    return;
  }
  TempDir tmp("train_memory_guard");
  core::test::write_text(tmp / "text.txt", sample_text());
  TrainOptions o = small_run(tmp / "text.txt");
  o.train_micro_batch_size_per_gpu = 1 << 30;  // ~ 2^30 x 16 tokens: far beyond any host
  core::RunDir rd("zpp-train", tmp.path() / "run");
  CHECK_THROWS_WITH_AS(run_training(o, rd), doctest::Contains("train_micro_batch_size_per_gpu"), core::UsageError);
  // A model too deep for the host is refused without building its layout (which alone would not fit).
  o = small_run(tmp / "text.txt");
  o.model.n_layer = 100'000'000;
  CHECK_THROWS_WITH_AS(run_training(o, rd), doctest::Contains("smaller model"), core::UsageError);
}

TEST_CASE("sample (greedy) past the context length: the key/value cache draws the full forward's tokens") {
  TempDir tmp("train_sample_window");
  core::test::write_text(tmp / "text.txt", sample_text());
  TrainOptions o = small_run(tmp / "text.txt");
  o.model.n_positions = 16;
  o.train_iters = 30;
  o.eval_interval = 30;
  core::RunDir rd("zpp-train", tmp.path() / "run");
  run_training(o, rd);
  SampleOptions s;
  s.checkpoint = (tmp.path() / "run").string();
  s.prompt = "the quick brown fox jumps over";  // longer than the context
  s.max_new_tokens = 40;
  s.temperature = 0;
  const nlohmann::json sampled = generate(s);

  // The documented context rule with a full forward per token: the prompt's last n_positions tokens;
  // once the context is full, the newer half of it goes on.
  Model<float> model(o.model);
  load_weights(core::fs::path(sampled["checkpoint"].get<std::string>()) / "model.safetensors", model.params());
  const int n = o.model.n_positions, vocab = 256;
  std::vector<std::int32_t> ids(s.prompt.begin(), s.prompt.end());
  std::vector<std::int32_t> context(ids.end() - n, ids.end());
  std::string expected;
  for (int i = 0; i < s.max_new_tokens; ++i) {
    Batch b;
    b.B = 1;
    b.T = static_cast<int>(context.size());
    b.tokens = context.data();
    model.forward(b, Task::lm);
    const float* logits = model.logits() + std::size_t(b.T - 1) * o.model.vocab_size;
    const auto next = static_cast<std::int32_t>(std::max_element(logits, logits + vocab) - logits);  // lowest id on ties
    ids.push_back(next);
    expected += static_cast<char>(next);
    if (static_cast<int>(context.size()) == n)
      context.assign(ids.end() - n / 2, ids.end());
    else
      context.push_back(next);
  }
  REQUIRE(std::all_of(expected.begin(), expected.end(), [](char c) { return c > 0; }));  // ASCII: no U+FFFD
  CHECK(sampled["tokens"] == s.max_new_tokens);
  CHECK(sampled["text"] == expected);
}
