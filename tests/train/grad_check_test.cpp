// Finite-difference gradient checks (float64, central differences) of every layer's backward pass
// and of whole GPT and BERT models on tiny configs. A test fails if any checked derivative
// differs from the difference quotient by more than 1e-6 relative (plus a small absolute slack).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "test_support.hpp"
#include "tiny_config.hpp"
#include "train/layers.hpp"
#include "train/model.hpp"

using namespace core::train;

namespace {

std::vector<double> randn(std::size_t n, core::Rng& rng, double s = 1.0) {
  std::vector<double> v(n);
  for (auto& x : v) x = s * rng.normal();
  return v;
}

using core::test::dot;

// Checks d f / d x[i] == analytic[i] for every i (or a strided sample when x is large).
void check_grad(const char* what, std::vector<double>& x, const std::vector<double>& analytic,
                const std::function<double()>& f, std::size_t max_checks = 200) {
  const double h = 1e-5;
  const std::size_t stride = std::max<std::size_t>(1, x.size() / max_checks);
  for (std::size_t i = 0; i < x.size(); i += stride) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f();
    x[i] = x0 - h;
    const double fm = f();
    x[i] = x0;
    const double fd = (fp - fm) / (2 * h);
    INFO(what << " index " << i << " analytic " << analytic[i] << " numeric " << fd);
    CHECK(std::abs(fd - analytic[i]) <= 1e-6 * std::abs(fd) + 1e-7);
  }
}

}  // namespace

TEST_CASE("layernorm backward matches finite differences") {
  core::Rng rng(1);
  const int N = 5, C = 7;
  auto x = randn(N * C, rng), w = randn(C, rng), b = randn(C, rng), r = randn(N * C, rng);
  std::vector<double> out(N * C), mean(N), rstd(N);
  auto f = [&] {
    layernorm_forward<double>(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
    return dot(out, r);
  };
  f();
  std::vector<double> dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_backward<double>(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
  check_grad("x", x, dx, f);
  check_grad("w", w, dw, f);
  check_grad("b", b, db, f);
}

TEST_CASE("linear backward matches finite differences") {
  core::Rng rng(2);
  const int N = 6, C = 5, OC = 4;
  auto x = randn(N * C, rng), w = randn(OC * C, rng), b = randn(OC, rng), r = randn(N * OC, rng);
  std::vector<double> out(N * OC);
  auto f = [&] {
    linear_forward<double>(out.data(), x.data(), w.data(), b.data(), N, C, OC);
    return dot(out, r);
  };
  std::vector<double> dx(N * C, 0.0), dw(OC * C, 0.0), db(OC, 0.0);
  linear_backward<double>(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, C, OC, false);
  check_grad("x", x, dx, f);
  check_grad("w", w, dw, f);
  check_grad("b", b, db, f);
}

TEST_CASE("gelu and tanh backward match finite differences") {
  core::Rng rng(3);
  const int n = 50;
  auto x = randn(n, rng, 2.0), r = randn(n, rng);
  std::vector<double> out(n), dx(n);
  auto fg = [&] {
    gelu_forward<double>(out.data(), x.data(), n);
    return dot(out, r);
  };
  gelu_backward<double>(dx.data(), x.data(), r.data(), n);
  check_grad("gelu", x, dx, fg);
  auto ft = [&] {
    tanh_forward<double>(out.data(), x.data(), n);
    return dot(out, r);
  };
  ft();
  tanh_backward<double>(dx.data(), out.data(), r.data(), n);
  check_grad("tanh", x, dx, ft);
}

TEST_CASE("attention backward matches finite differences (causal, and bidirectional with padding)") {
  core::Rng rng(4);
  const int B = 2, T = 5, C = 6, NH = 2;
  for (int variant = 0; variant < 2; ++variant) {
    const bool causal = variant == 0;
    std::vector<std::uint8_t> mask = {1, 1, 1, 0, 0, 1, 1, 1, 1, 0};
    const std::uint8_t* km = causal ? nullptr : mask.data();
    auto qkv = randn(B * T * 3 * C, rng), r = randn(B * T * C, rng);
    std::vector<double> out(B * T * C), att(B * NH * T * T), scratch(B * NH * T * T), dqkv(B * T * 3 * C);
    auto f = [&] {
      attention_forward<double>(out.data(), att.data(), qkv.data(), km, causal, B, T, C, NH);
      return dot(out, r);
    };
    f();
    if (causal) CHECK(att[1] == 0.0);                 // query 0 never sees key 1
    else CHECK(att[3] == 0.0);                        // padding key 3 of sequence 0 gets no weight
    attention_backward<double>(dqkv.data(), scratch.data(), r.data(), qkv.data(), att.data(), B, T, C, NH);
    check_grad(causal ? "causal qkv" : "masked qkv", qkv, dqkv, f, 400);
  }
}

TEST_CASE("embedding and softmax cross-entropy backward match finite differences") {
  core::Rng rng(5);
  const int B = 2, T = 3, C = 4, V = 7;
  std::vector<std::int32_t> tok = {1, 6, 1, 0, 3, 6}, seg = {0, 0, 1, 1, 0, 1}, tgt = {2, -1, 0, 6, 6, 1};
  auto wte = randn(V * C, rng), wpe = randn(T * C, rng), wse = randn(2 * C, rng), r = randn(B * T * C, rng);
  std::vector<double> out(B * T * C);
  auto f = [&] {
    embedding_forward<double>(out.data(), tok.data(), seg.data(), wte.data(), wpe.data(), wse.data(), B, T, C);
    return dot(out, r);
  };
  std::vector<double> dwte(V * C, 0.0), dwpe(T * C, 0.0), dwse(2 * C, 0.0);
  embedding_backward<double>(dwte.data(), dwpe.data(), dwse.data(), r.data(), tok.data(), seg.data(), B, T, C);
  check_grad("wte", wte, dwte, f);
  check_grad("wpe", wpe, dwpe, f);
  check_grad("wse", wse, dwse, f);

  const int N = B * T;
  auto logits = randn(N * V, rng);
  std::vector<double> work(N * V), losses(N);
  auto fl = [&] {
    work = logits;
    const int count = softmax_xent_forward<double>(work.data(), losses.data(), tgt.data(), N, V, V);
    double s = 0;
    for (double l : losses) s += l;
    return s / count;
  };
  CHECK(fl() > 0);
  softmax_xent_backward<double>(work.data(), tgt.data(), 1.0 / 5, N, V, V);  // 5 counted rows
  const std::vector<double> dlogits = work;
  check_grad("logits", logits, dlogits, fl);
}

namespace {

// Checks every tensor of the model (a strided sample of each) against finite differences.
void check_model(Model<double>& m, const Batch& batch, Task task) {
  init_parameters(m.params(), 7);
  // Perturb the zero-initialised biases and unit gains so their gradients are generic.
  core::Rng rng(8);
  for (int g = 0; g < m.params().num_groups(); ++g)
    for (std::size_t i = 0; i < m.params().group_size(g); ++i) m.params().group(g)[i] += 0.05 * rng.normal();
  m.grads().zero();
  m.forward(batch, task);
  m.backward(1.0);
  const ParamLayout& layout = m.layout();
  for (int g = 0; g < layout.num_groups(); ++g) {
    for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
      const TensorView& v = layout.groups()[g].tensors[t];
      double* p = m.params().tensor(g, t);
      const double* an = m.grads().tensor(g, t);
      const std::size_t stride = std::max<std::size_t>(1, v.numel / 12);
      for (std::size_t i = 0; i < v.numel; i += stride) {
        const double h = 1e-5, x0 = p[i];
        p[i] = x0 + h;
        const double fp = m.forward(batch, task);
        p[i] = x0 - h;
        const double fm = m.forward(batch, task);
        p[i] = x0;
        const double fd = (fp - fm) / (2 * h);
        INFO(v.name << "[" << i << "] analytic " << an[i] << " numeric " << fd);
        CHECK(std::abs(fd - an[i]) <= 1e-6 * std::abs(fd) + 1e-8);
      }
    }
  }
}

// The tiny GPT or BERT of the whole-model tests below, and the BERT's two-sequence batch (lengths 5;
// tokens and MLM targets).
ModelConfig tiny_model(const char* arch) {
  ModelConfig cfg = core::test::tiny_config(arch, 8, 6, 11);
  cfg.vocab_pad_to = 4;
  cfg.num_labels = 3;
  cfg.init_std = 0.5;
  return cfg;
}
const std::vector<std::int32_t> kBertTokens = {1, 2, 3, 4, 0, 10, 0, 9, 8, 7};
const std::vector<std::int32_t> kBertTargets = {-1, 5, -1, 4, -1, -1, 3, -1, -1, 7};
Batch bert_batch() {
  Batch b;
  b.B = 2;
  b.T = 5;
  b.tokens = kBertTokens.data();
  b.targets = kBertTargets.data();
  return b;
}

}  // namespace

TEST_CASE("whole GPT gradient matches finite differences, with every target and with some left out") {
  Model<double> m(tiny_model("gpt"));
  std::vector<std::int32_t> tok = {1, 2, 3, 4, 5, 10, 0, 9, 8, 7}, tgt = {2, 3, 4, 5, 10, 9, 9, 8, 7, 6};
  Batch b;
  b.B = 2;
  b.T = 5;
  b.tokens = tok.data();
  b.targets = tgt.data();
  SUBCASE("every target") { check_model(m, b, Task::lm); }
  SUBCASE("targets -1 (an eval window's scored rows): the head runs on the others") {
    tgt = {-1, -1, 4, 5, 10, -1, 9, -1, 7, -1};
    check_model(m, b, Task::lm);
  }
}

TEST_CASE("whole BERT gradient matches finite differences (MLM and classification)") {
  Model<double> m(tiny_model("bert"));
  const std::vector<std::int32_t> seg = {0, 0, 1, 1, 1, 0, 0, 0, 1, 1}, labels = {2, 0};
  std::vector<std::uint8_t> mask = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
  Batch b = bert_batch();
  b.segments = seg.data();
  b.attention_mask = mask.data();
  SUBCASE("mlm") { check_model(m, b, Task::mlm); }
  SUBCASE("classify") {
    b.labels = labels.data();
    check_model(m, b, Task::classify);
  }
}

// A BERT batch without segment ids is all segment 0 (BERT's default): same loss and gradients as
// explicit zeros, and the segment table's row 0 gets the gradient.
TEST_CASE("BERT without segment ids equals segment 0 everywhere") {
  Model<double> m(tiny_model("bert"));
  init_parameters(m.params(), 7);
  const std::vector<std::int32_t> zeros(10, 0);
  Batch b = bert_batch();
  auto loss_and_grads = [&](const std::int32_t* seg) {
    b.segments = seg;
    m.grads().zero();
    const double loss = m.forward(b, Task::mlm);
    m.backward();
    std::vector<double> g;
    for (int k = 0; k < m.grads().num_groups(); ++k)
      g.insert(g.end(), m.grads().group(k), m.grads().group(k) + m.grads().group_size(k));
    return std::pair(loss, g);
  };
  const auto [loss_null, g_null] = loss_and_grads(nullptr);
  const auto [loss_zero, g_zero] = loss_and_grads(zeros.data());
  CHECK(loss_null == loss_zero);
  CHECK(g_null == g_zero);
  const TensorView& wse = m.layout().embed(kWse);  // group 0: its offset indexes g directly
  double row0 = 0.0;
  for (int c = 0; c < m.config().n_embd; ++c) row0 += std::abs(g_null[wse.offset + static_cast<std::size_t>(c)]);
  CHECK(row0 > 0.0);
}

// A classify forward allocates no vocabulary logits: an MLM pass of the same shape after it (and a
// classify pass after that) gives the loss and gradients of a model that ran only that task.
TEST_CASE("BERT alternating classify and MLM passes of one shape: each as on a fresh model") {
  const std::vector<std::int32_t> labels = {2, 0};
  Batch b = bert_batch();
  b.labels = labels.data();
  auto loss_and_grads = [&b](Model<double>& m, Task task) {
    m.grads().zero();
    const double loss = m.forward(b, task);
    m.backward();
    std::vector<double> g;
    for (int k = 0; k < m.grads().num_groups(); ++k)
      g.insert(g.end(), m.grads().group(k), m.grads().group(k) + m.grads().group_size(k));
    return std::pair(loss, g);
  };
  Model<double> both(tiny_model("bert")), mlm_only(tiny_model("bert")), classify_only(tiny_model("bert"));
  for (auto* m : {&both, &mlm_only, &classify_only}) init_parameters(m->params(), 11);
  const auto classify = loss_and_grads(classify_only, Task::classify);
  const auto mlm = loss_and_grads(mlm_only, Task::mlm);
  CHECK(loss_and_grads(both, Task::classify) == classify);
  CHECK(loss_and_grads(both, Task::mlm) == mlm);
  CHECK(loss_and_grads(both, Task::classify) == classify);
}

// Model::backward with gradients injected at the block outputs (hidden-state distillation's entry):
// the gradient of loss + sum_l <G_l, block_output(l)> against finite differences, and no gradients
// given is backward() bit for bit.
TEST_CASE("block output gradients: backward with injected gradients matches finite differences") {
  Model<double> m(tiny_model("gpt"));
  init_parameters(m.params(), 7);
  const std::vector<std::int32_t> tok = {1, 2, 3, 4, 5, 10, 0, 9, 8, 7}, tgt = {2, 3, 4, 5, 10, 9, 9, 8, 7, 6};
  Batch b;
  b.B = 2;
  b.T = 5;
  b.tokens = tok.data();
  b.targets = tgt.data();
  const std::size_t NC = 10 * 8;
  core::Rng rng(3);
  const std::vector<std::vector<double>> G = {randn(NC, rng), randn(NC, rng)};
  const std::vector<const double*> gp = {G[0].data(), G[1].data()};
  auto f = [&] {
    double v = m.forward(b, Task::lm);
    for (int l = 0; l < 2; ++l)
      for (std::size_t i = 0; i < NC; ++i) v += G[l][i] * m.block_output(l)[i];
    return v;
  };
  auto grads_of = [&](const std::vector<const double*>* injected) {
    m.grads().zero();
    m.forward(b, Task::lm);
    if (injected) m.backward(1.0, *injected);
    else m.backward(1.0);
    std::vector<double> g;
    for (int k = 0; k < m.grads().num_groups(); ++k)
      g.insert(g.end(), m.grads().group(k), m.grads().group(k) + m.grads().group_size(k));
    return g;
  };
  const std::vector<const double*> none;
  const auto plain = grads_of(nullptr), empty = grads_of(&none);
  CHECK(std::memcmp(plain.data(), empty.data(), plain.size() * sizeof(double)) == 0);
  const auto analytic = grads_of(&gp);
  std::size_t at = 0, checked = 0;
  for (int k = 0; k < m.params().num_groups(); ++k) {
    double* p = m.params().group(k);
    for (std::size_t i = 0; i < m.params().group_size(k); i += 7, ++checked) {
      const double h = 1e-5, x0 = p[i];
      p[i] = x0 + h;
      const double fp = f();
      p[i] = x0 - h;
      const double fm = f();
      p[i] = x0;
      const double fd = (fp - fm) / (2 * h);
      INFO("group " << k << " [" << i << "] analytic " << analytic[at + i] << " numeric " << fd);
      CHECK(std::abs(fd - analytic[at + i]) <= 1e-6 * std::abs(fd) + 1e-8);
    }
    at += m.params().group_size(k);
  }
  CHECK(checked > 50);
  const std::vector<const double*> wrong = {gp[0]};
  m.forward(b, Task::lm);
  CHECK_THROWS_AS(m.backward(1.0, wrong), core::UsageError);
}
