// Random-LTD in the host model (Model::set_token_subsets): kept = n is bit-identical to no dropping
// (logits, gradients, a 50-step AdamW loss curve) with the gather path forced on the identity subset;
// dropped rows pass through exactly; kept rows equal the block run alone on the gathered sequence (GPT:
// causal in kept order; BERT: the gathered padding mask); float64 finite differences through
// gather -> block -> scatter for GPT and BERT (padding included); subsets that do not fit are refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <numeric>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"

using namespace core::train;

namespace {

ModelConfig config(const char* arch, int n_layer, int n_embd, int T, int vocab) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = n_layer;
  c.n_head = 2;
  c.n_embd = n_embd;
  c.n_positions = T;
  c.vocab_size = vocab;
  c.vocab_pad_to = 4;
  return c;
}

// Random tokens / next-token targets of B sequences of T.
struct Data {
  std::vector<std::int32_t> tok, tgt;
  std::vector<std::uint8_t> mask;
};
Data random_batch_data(int B, int T, int vocab, std::uint64_t seed) {
  core::Rng rng(seed);
  Data d;
  for (int i = 0; i < B * T; ++i) {
    d.tok.push_back(std::int32_t(rng.below(vocab)));
    d.tgt.push_back(std::int32_t(rng.below(vocab)));
  }
  return d;
}
Batch batch_of(Data& d, int B, int T, bool targets = true) {
  Batch b;
  b.B = B;
  b.T = T;
  b.tokens = d.tok.data();
  b.targets = targets ? d.tgt.data() : nullptr;
  b.attention_mask = d.mask.empty() ? nullptr : d.mask.data();
  return b;
}

TokenSubset identity_subset(int B, int T) {
  TokenSubset s;
  s.kept = T;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) s.positions.push_back(t);
  return s;
}
// Layer `layer` keeps `positions` (the same for every sequence); the others run on everything.
std::vector<TokenSubset> one_layer(int n_layer, int layer, int B, const std::vector<std::int32_t>& positions) {
  std::vector<TokenSubset> s(n_layer);
  s[layer].kept = int(positions.size());
  for (int b = 0; b < B; ++b) s[layer].positions.insert(s[layer].positions.end(), positions.begin(), positions.end());
  return s;
}

template <class T>
std::vector<T> group_copy(FlatBuffers<T>& f) {
  std::vector<T> out;
  for (int g = 0; g < f.num_groups(); ++g) out.insert(out.end(), f.group(g), f.group(g) + f.group_size(g));
  return out;
}

}  // namespace

TEST_CASE("kept = n on the gather path is bit-identical to no dropping: logits, loss, gradients") {
  for (const char* arch : {"gpt", "bert"}) {
    CAPTURE(arch);
    const int B = 3, T = 16, L = 3, V = 40;
    const Task task = std::string(arch) == "gpt" ? Task::lm : Task::mlm;
    Model<float> plain(config(arch, L, 32, T, V)), routed(config(arch, L, 32, T, V));
    init_parameters(plain.params(), 5);
    init_parameters(routed.params(), 5);
    Data d = random_batch_data(B, T, V, 11);
    if (task == Task::mlm) {
      d.mask.assign(B * T, 1);
      for (int t = 12; t < T; ++t) d.mask[t] = 0;  // padding at the end of sequence 0
      for (int i = 0; i < B * T; ++i)
        if (i % 3) d.tgt[i] = -1;
    }
    std::vector<TokenSubset> all(L, identity_subset(B, T));
    routed.set_token_subsets(all);
    Batch nb = batch_of(d, B, T, false);
    plain.forward(nb, task);
    routed.forward(nb, task);
    const std::vector<float> lp(plain.logits(), plain.logits() + std::size_t(B) * T * V);
    const std::vector<float> lr(routed.logits(), routed.logits() + std::size_t(B) * T * V);
    CHECK(lp == lr);
    Batch b = batch_of(d, B, T);
    plain.grads().zero();
    routed.grads().zero();
    CHECK(plain.forward(b, task) == routed.forward(b, task));
    plain.backward();
    routed.backward();
    CHECK(group_copy(plain.grads()) == group_copy(routed.grads()));
  }
}

TEST_CASE("kept = n on the gather path: a 50-step AdamW loss curve bit-identical to no dropping") {
  const int B = 4, T = 16, L = 3, V = 30;
  Model<float> plain(config("gpt", L, 32, T, V)), routed(config("gpt", L, 32, T, V));
  init_parameters(plain.params(), 3);
  init_parameters(routed.params(), 3);
  AdamW<float> op(plain.layout(), AdamWHyper{}), orr(routed.layout(), AdamWHyper{});
  routed.set_token_subsets(std::vector<TokenSubset>(L, identity_subset(B, T)));
  for (int step = 0; step < 50; ++step) {
    Data d = random_batch_data(B, T, V, 100 + step % 5);
    Batch b = batch_of(d, B, T);
    plain.grads().zero();
    routed.grads().zero();
    const float a = plain.forward(b, Task::lm), c = routed.forward(b, Task::lm);
    CHECK(a == c);
    plain.backward();
    routed.backward();
    op.step(plain.params(), plain.grads(), 3e-3, 1.0);
    orr.step(routed.params(), routed.grads(), 3e-3, 1.0);
  }
  CHECK(group_copy(plain.params()) == group_copy(routed.params()));
}

TEST_CASE("dropped rows pass through exactly; kept rows equal the block alone on the gathered sequence") {
  for (const char* arch : {"gpt", "bert"}) {
    CAPTURE(arch);
    const bool bert = std::string(arch) == "bert";
    const Task task = bert ? Task::mlm : Task::lm;
    const int B = 2, T = 12, V = 20;
    const std::vector<std::int32_t> kept = {0, 2, 3, 7, 8, 11};
    const int r = int(kept.size());
    Data d = random_batch_data(B, T, V, 4);
    if (bert) {
      d.mask.assign(B * T, 1);
      d.mask[T + 8] = d.mask[T + 9] = d.mask[T + 10] = d.mask[T + 11] = 0;  // sequence 1 padded after 8
    }
    SUBCASE("pass-through: a routed block equals, on its dropped rows, a block with zero weights") {
      Model<float> routed(config(arch, 1, 16, T, V)), zero(config(arch, 1, 16, T, V));
      init_parameters(routed.params(), 9);
      init_parameters(zero.params(), 9);
      const int g0 = ParamLayout::block_group(0);
      std::fill(zero.params().group(g0), zero.params().group(g0) + zero.params().group_size(g0), 0.0f);
      routed.set_token_subsets(one_layer(1, 0, B, kept));
      Batch nb = batch_of(d, B, T, false);
      routed.forward(nb, task);
      zero.forward(nb, task);
      int checked = 0;
      for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
          if (std::find(kept.begin(), kept.end(), t) != kept.end()) continue;
          const std::size_t row = (std::size_t(b) * T + t) * V;
          CHECK(std::equal(routed.logits() + row, routed.logits() + row + V, zero.logits() + row));
          ++checked;
        }
      CHECK(checked == B * (T - r));
    }
    SUBCASE("kept rows: the block alone on the gathered tokens (positions zeroed, so embeddings match)") {
      Model<float> routed(config(arch, 1, 16, T, V)), alone(config(arch, 1, 16, T, V));
      init_parameters(routed.params(), 9);
      std::fill(routed.params().embed(kWpe), routed.params().embed(kWpe) + std::size_t(T) * 16, 0.0f);
      for (int g = 0; g < routed.params().num_groups(); ++g)
        std::copy(routed.params().group(g), routed.params().group(g) + routed.params().group_size(g),
                  alone.params().group(g));
      routed.set_token_subsets(one_layer(1, 0, B, kept));
      Batch nb = batch_of(d, B, T, false);
      routed.forward(nb, task);
      Data g;
      for (int b = 0; b < B; ++b)
        for (int p : kept) {
          g.tok.push_back(d.tok[b * T + p]);
          if (bert) g.mask.push_back(d.mask[b * T + p]);
        }
      Batch gb = batch_of(g, B, r, false);
      alone.forward(gb, task);
      for (int b = 0; b < B; ++b)
        for (int i = 0; i < r; ++i) {
          const float* a = routed.logits() + (std::size_t(b) * T + kept[i]) * V;
          const float* e = alone.logits() + (std::size_t(b) * r + i) * V;
          for (int v = 0; v < V; ++v) CHECK(a[v] == doctest::Approx(e[v]).epsilon(1e-6));
        }
    }
  }
}

TEST_CASE("float64 finite differences through gather -> block -> scatter (GPT, and BERT with padding)") {
  for (const char* arch : {"gpt", "bert"}) {
    CAPTURE(arch);
    const bool bert = std::string(arch) == "bert";
    const Task task = bert ? Task::mlm : Task::lm;
    const int B = 2, T = 7, L = 3, V = 11;
    ModelConfig cfg = config(arch, L, 8, T, V);
    cfg.init_std = 0.5;
    Model<double> m(cfg);
    init_parameters(m.params(), 7);
    core::Rng rng(8);
    for (int g = 0; g < m.params().num_groups(); ++g)
      for (std::size_t i = 0; i < m.params().group_size(g); ++i) m.params().group(g)[i] += 0.05 * rng.normal();
    Data d = random_batch_data(B, T, V, 21);
    if (bert) {
      d.mask = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};  // sequence 1: 4 real tokens
      for (int i = 0; i < B * T; ++i)
        if (i % 2 || !d.mask[i]) d.tgt[i] = -1;
    }
    // Layer 1 keeps different positions per sequence (sequence 1 keeps some padding), layer 2 keeps 2.
    std::vector<TokenSubset> s(L);
    s[1].kept = 4;
    s[1].positions = {0, 2, 5, 6, 1, 3, 4, 6};
    s[2].kept = 2;
    s[2].positions = {3, 4, 0, 5};
    m.set_token_subsets(s);
    Batch b = batch_of(d, B, T);
    m.grads().zero();
    m.forward(b, task);
    m.backward(1.0);
    const ParamLayout& layout = m.layout();
    int checked = 0;
    for (int g = 0; g < layout.num_groups(); ++g)
      for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
        const TensorView& v = layout.groups()[g].tensors[t];
        double* p = m.params().tensor(g, t);
        const double* an = m.grads().tensor(g, t);
        for (std::size_t i = 0; i < v.numel; i += std::max<std::size_t>(1, v.numel / 10)) {
          const double h = 1e-5, x0 = p[i];
          p[i] = x0 + h;
          const double fp = m.forward(b, task);
          p[i] = x0 - h;
          const double fm = m.forward(b, task);
          p[i] = x0;
          const double fd = (fp - fm) / (2 * h);
          INFO(v.name << "[" << i << "] analytic " << an[i] << " numeric " << fd);
          CHECK(std::abs(fd - an[i]) <= 1e-6 * std::abs(fd) + 1e-8);
          ++checked;
        }
      }
    CHECK(checked > 100);
  }
}

TEST_CASE("subsets that do not fit the batch are refused") {
  Model<float> m(config("gpt", 2, 16, 8, 10));
  init_parameters(m.params(), 1);
  Data d = random_batch_data(1, 8, 10, 1);
  Batch b = batch_of(d, 1, 8);
  m.set_token_subsets(one_layer(2, 1, 1, {3, 2}));
  CHECK_THROWS_AS(m.forward(b, Task::lm), core::UsageError);
  m.set_token_subsets(one_layer(2, 1, 1, {3, 8}));
  CHECK_THROWS_AS(m.forward(b, Task::lm), core::UsageError);
  m.set_token_subsets(std::vector<TokenSubset>(3));
  CHECK_THROWS_AS(m.forward(b, Task::lm), core::UsageError);
  m.set_token_subsets(one_layer(2, 1, 1, {0, 5}));
  CHECK(std::isfinite(m.forward(b, Task::lm)));
}
