// Distillation from the dense teacher: the hidden-state MSE term's gradient (through the block outputs
// of core::train::Model) against finite differences in float64, with padding rows left out; the GPT
// language model's whole distillation loss (logits over the vocabulary + hidden states) against finite
// differences; and hidden_weight 0 leaving the classifier's gradients bit for bit as without the term.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "nxm/classifier.hpp"
#include "nxm/distill.hpp"
#include "nxm/language_model.hpp"
#include "test_support.hpp"
#include "train/data.hpp"

using namespace core::nxm;
using core::train::Batch;
using core::train::Model;
using core::train::Task;

namespace {
core::train::ModelConfig tiny(const char* arch) {
  core::train::ModelConfig c;
  c.arch = arch;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.n_positions = 8;
  c.vocab_size = 20;
  c.init_std = 0.5;
  return c;
}

template <class T>
void perturb(core::train::FlatBuffers<T>& p, std::uint64_t seed) {
  core::train::init_parameters(p, seed);
  core::Rng rng(seed + 1);
  for (int g = 0; g < p.num_groups(); ++g)
    for (std::size_t i = 0; i < p.group_size(g); ++i) p.group(g)[i] += T(0.05 * rng.normal());
}

std::vector<float> all_grads(Model<float>& m) {
  std::vector<float> g;
  for (int k = 0; k < m.grads().num_groups(); ++k)
    g.insert(g.end(), m.grads().group(k), m.grads().group(k) + m.grads().group_size(k));
  return g;
}
}  // namespace

TEST_CASE("hidden-state MSE: gradient through the block outputs against finite differences (float64)") {
  Model<double> student(tiny("bert")), teacher(tiny("bert"));
  perturb(student.params(), 3);
  perturb(teacher.params(), 11);
  const std::vector<std::int32_t> tok = {1, 2, 3, 4, 0, 10, 0, 9, 8, 7}, labels = {1, 0};
  const std::vector<std::uint8_t> mask = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1};  // the first sequence is padded
  Batch b;
  b.B = 2;
  b.T = 5;
  b.tokens = tok.data();
  b.attention_mask = mask.data();
  const double beta = 0.7;
  std::vector<std::vector<double>> g;
  auto loss = [&] {
    student.forward(b, Task::classify);
    return hidden_state_mse(student, teacher, 10, mask.data(), beta, g);
  };
  teacher.forward(b, Task::classify);
  // By hand: beta sum_l mean over the 8 unpadded rows of (h_s - h_t)^2.
  double by_hand = 0;
  Batch lb = b;
  lb.labels = labels.data();
  student.forward(lb, Task::classify);
  for (int l = 0; l < 2; ++l) {
    double s = 0;
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 8; ++c)
        if (mask[r]) s += std::pow(student.block_output(l)[r * 8 + c] - teacher.block_output(l)[r * 8 + c], 2);
    by_hand += beta * s / (8 * 8);
  }
  CHECK(hidden_state_mse(student, teacher, 10, mask.data(), beta, g) == doctest::Approx(by_hand).epsilon(1e-12));
  CHECK(by_hand > 0);
  for (int r = 3; r < 5; ++r) CHECK(g[0][r * 8] == 0.0);  // padding rows get no gradient
  // dloss 0: only the injected term reaches the parameters.
  student.grads().zero();
  student.backward(0.0, block_grad_pointers(g));
  const auto& layout = student.layout();
  int checked = 0;
  for (int k = 0; k < layout.num_groups(); ++k)
    for (int t = 0; t < static_cast<int>(layout.groups()[k].tensors.size()); ++t) {
      double* p = student.params().tensor(k, t);
      const double* an = student.grads().tensor(k, t);
      const std::size_t n = layout.groups()[k].tensors[t].numel;
      for (std::size_t i = 0; i < n; i += std::max<std::size_t>(1, n / 6), ++checked) {
        const double h = 1e-5, x0 = p[i];
        p[i] = x0 + h;
        const double fp = loss();
        p[i] = x0 - h;
        const double fm = loss();
        p[i] = x0;
        const double fd = (fp - fm) / (2 * h);
        INFO(layout.groups()[k].tensors[t].name << "[" << i << "] analytic " << an[i] << " numeric " << fd);
        CHECK(std::abs(fd - an[i]) <= 1e-6 * std::abs(fd) + 1e-9);
      }
    }
  CHECK(checked > 100);
  auto other = tiny("bert");
  other.n_layer = 1;
  Model<double> shallow(other);
  CHECK_THROWS_AS(hidden_state_mse(student, shallow, 10, nullptr, 1.0, g), core::UsageError);
}

TEST_CASE("GPT language model: logit + hidden-state distillation loss against finite differences") {
  core::test::TempDir dir("nxm_lm_kd");
  {
    std::ofstream f(dir / "text.txt");
    for (int i = 0; i < 40; ++i) f << "the quick brown fox jumps over the lazy dog " << i << "\n";
  }
  core::train::DataOptions d;
  d.input = (dir / "text.txt").string();
  d.tokenizer = "bytes";
  d.seq_len = 6;
  const auto data = core::train::load_token_data(d);
  auto cfg = tiny("gpt");
  cfg.vocab_size = 256;
  LanguageModel lm(cfg, 3, 6);
  Model<float> teacher(cfg);
  perturb(lm.model().params(), 5);
  perturb(teacher.params(), 9);
  lm.set_teacher_model(&teacher);
  const DistillOptions kd{0.6, 2.0, 0.3};
  auto step = [&] {
    core::Rng rng(42);  // the same windows every call
    return lm.step(data.train, rng, kd);
  };
  lm.model().grads().zero();
  const double base = step();
  CHECK(base > 0);
  struct Probe {
    int group, tensor;
    std::size_t index;
  };
  const auto& layout = lm.model().layout();
  const int head = 0;  // ln_f lives with the embeddings
  std::vector<Probe> probes;
  for (int t = 0; t < static_cast<int>(layout.groups()[head].tensors.size()); ++t)
    if (layout.groups()[head].tensors[t].name == "ln_f.bias") probes.push_back({head, t, 3});
  probes.push_back({1, 0, 5});   // block 0's first tensor
  probes.push_back({2, 2, 17});  // block 1's third tensor
  REQUIRE(probes.size() == 3);
  std::vector<float> analytic;  // read before the difference quotients, whose steps add to the gradients
  for (const auto& pr : probes) analytic.push_back(lm.model().grads().tensor(pr.group, pr.tensor)[pr.index]);
  for (std::size_t k = 0; k < probes.size(); ++k) {
    const Probe& pr = probes[k];
    float* p = lm.model().params().tensor(pr.group, pr.tensor) + pr.index;
    const float eps = 1e-2f, saved = *p;
    *p = saved + eps;
    const double lp = step();
    *p = saved - eps;
    const double lm_ = step();
    *p = saved;
    INFO(layout.groups()[pr.group].tensors[pr.tensor].name << "[" << pr.index << "]");
    CHECK(analytic[k] == doctest::Approx((lp - lm_) / (2 * eps)).epsilon(5e-3));
  }
  lm.set_teacher_model(nullptr);
  core::Rng rng(1);
  CHECK_THROWS_AS(lm.step(data.train, rng, kd), core::UsageError);
}

TEST_CASE("hidden_weight 0: the classifier's gradients are bit for bit those without the term") {
  auto cfg = tiny("bert");
  cfg.n_embd = 16;
  Classifier clf(cfg, 2), other(cfg, 2);
  Model<float> teacher(cfg);
  perturb(clf.model().params(), 4);
  perturb(other.model().params(), 4);
  perturb(teacher.params(), 8);
  EncodedSet set;
  set.T = 4;
  set.tokens = {1, 5, 6, 7, 1, 9, 3, 0};
  set.mask = {1, 1, 1, 1, 1, 1, 1, 0};
  set.lengths = {4, 3};
  set.labels = {0, 1};
  const std::vector<float> tl = {1.0f, -1.0f, 0.2f, 0.4f};
  const std::vector<int> idx = {0, 1};
  other.set_teacher_model(&teacher);
  auto grads = [&](Classifier& c, const DistillOptions& kd) {
    c.model().grads().zero();
    c.step(set, idx, tl.data(), kd);
    return all_grads(c.model());
  };
  const auto without = grads(clf, {0.5, 2.0});
  const auto zero = grads(other, {0.5, 2.0, 0.0});
  CHECK(std::memcmp(without.data(), zero.data(), without.size() * sizeof(float)) == 0);
  const auto with = grads(other, {0.5, 2.0, 0.5});
  CHECK(std::memcmp(without.data(), with.data(), without.size() * sizeof(float)) != 0);
  CHECK_THROWS_AS(grads(clf, {0.5, 2.0, 0.5}), core::UsageError);  // no teacher model
}

TEST_CASE("Classifier::step on fewer examples than its batch (an epoch's last batch): that batch's mean loss") {
  auto cfg = tiny("bert");
  cfg.n_embd = 16;
  Classifier big(cfg, 4), exact(cfg, 2);
  perturb(big.model().params(), 6);
  for (int g = 0; g < big.model().params().num_groups(); ++g)
    std::copy_n(big.model().params().group(g), big.model().params().group_size(g), exact.model().params().group(g));
  EncodedSet set;
  set.T = 4;
  set.tokens = {1, 5, 6, 7, 1, 9, 3, 0, 1, 2, 0, 0};
  set.mask = {1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0};
  set.lengths = {4, 3, 2};
  set.labels = {0, 1, 1};
  const std::vector<float> tl = {1.0f, -1.0f, 0.2f, 0.4f, -0.3f, 0.9f};
  const std::vector<int> idx = {2, 0};
  const DistillOptions kd{0.5, 2.0};
  big.model().grads().zero();
  exact.model().grads().zero();
  const double loss = big.step(set, idx, tl.data(), kd);
  CHECK(loss == exact.step(set, idx, tl.data(), kd));
  const auto gb = all_grads(big.model()), ge = all_grads(exact.model());
  CHECK(std::memcmp(gb.data(), ge.data(), gb.size() * sizeof(float)) == 0);
  CHECK(big.padding().example_tokens == 6);
  CHECK(big.padding().batch_tokens == 2 * 4);  // the longest (4) rounded up to 8, at most the set's 4
  CHECK_THROWS_AS(big.step(set, std::vector<int>{}, tl.data(), kd), core::UsageError);
  CHECK_THROWS_AS(exact.step(set, std::vector<int>{0, 1, 2}, tl.data(), kd), core::UsageError);
}

TEST_CASE("Classifier::logits pads each length-sorted batch to its own longest example: the fully padded logits") {
  auto cfg = tiny("bert");
  cfg.n_positions = 24;
  cfg.n_embd = 16;
  Classifier clf(cfg, 3);
  perturb(clf.model().params(), 5);
  // 7 examples of lengths 1..24 in no order, padded to 24: the length-sorted batches are padded to 8,
  // 16 and 24 tokens, and the last batch repeats its last example.
  const std::vector<int> lengths = {24, 3, 9, 1, 17, 5, 12};
  EncodedSet set;
  set.T = 24;
  core::Rng rng(3);
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    for (int t = 0; t < set.T; ++t) {
      set.tokens.push_back(t < lengths[i] ? static_cast<std::int32_t>(rng.below(20)) : 0);
      set.mask.push_back(t < lengths[i] ? 1 : 0);
    }
    set.lengths.push_back(lengths[i]);
    set.labels.push_back(static_cast<std::int32_t>(i % 2));
  }
  const std::vector<float> z = clf.logits(set);
  // The reference: all examples in one batch at the set's padded length.
  Model<float> whole(cfg);
  for (int g = 0; g < whole.params().num_groups(); ++g)
    std::copy_n(clf.model().params().group(g), whole.params().group_size(g), whole.params().group(g));
  Batch batch;
  batch.B = set.size();
  batch.T = set.T;
  batch.tokens = set.tokens.data();
  batch.attention_mask = set.mask.data();
  whole.forward(batch, Task::classify);
  REQUIRE(z.size() == std::size_t(set.size()) * cfg.num_labels);
  for (std::size_t k = 0; k < z.size(); ++k) {
    INFO("example " << k / cfg.num_labels);
    CHECK(z[k] == doctest::Approx(whole.logits()[k]).epsilon(1e-5));
  }
  // A training step on three short examples (padded to 16) has the loss and gradients of the same
  // examples padded to 24.
  const std::vector<int> idx = {1, 2, 5};
  clf.model().grads().zero();
  const double loss = clf.step(set, idx, nullptr, {});
  std::vector<std::int32_t> tokens, labels;
  std::vector<std::uint8_t> mask;
  for (const int i : idx) {
    tokens.insert(tokens.end(), set.tokens.begin() + i * set.T, set.tokens.begin() + (i + 1) * set.T);
    mask.insert(mask.end(), set.mask.begin() + i * set.T, set.mask.begin() + (i + 1) * set.T);
    labels.push_back(set.labels[i]);
  }
  batch.B = 3;
  batch.tokens = tokens.data();
  batch.attention_mask = mask.data();
  batch.labels = labels.data();
  whole.grads().zero();
  CHECK(loss == doctest::Approx(whole.forward(batch, Task::classify)).epsilon(1e-5));
  whole.backward();
  const auto short_grads = all_grads(clf.model()), full_grads = all_grads(whole);
  REQUIRE(short_grads.size() == full_grads.size());
  for (std::size_t k = 0; k < short_grads.size(); ++k)
    CHECK(short_grads[k] == doctest::Approx(full_grads[k]).epsilon(1e-4).scale(1e-3));
}
