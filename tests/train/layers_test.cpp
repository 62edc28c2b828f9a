// The host layers (layers.hpp) and the AdamW update (optimizer.hpp) as CPU references of the CUDA
// kernels: closed forms (GELU values, uniform-logit cross-entropy, first AdamW step, causal
// attention's first row, a query with no visible key), accumulation contracts, float against double,
// and finite differences in double with pre-filled (accumulating) gradient buffers.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "test_support.hpp"
#include "train/layers.hpp"
#include "train/optimizer.hpp"

using namespace core::train;
using Vec = std::vector<double>;

namespace {

Vec random_vec(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  Vec v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> to_f(const Vec& v) { return {v.begin(), v.end()}; }

using core::test::dot;

// Central differences of f at x, compared with the analytic gradient g: |fd - g| <= tol * (1 + |g|).
void check_gradient(const std::function<double(const Vec&)>& f, Vec x, const Vec& g, double tol, const char* what) {
  CAPTURE(what);
  const double h = 1e-6;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double fp = f(x);
    x[i] = x0 - h;
    const double fm = f(x);
    x[i] = x0;
    const double fd = (fp - fm) / (2 * h);
    CAPTURE(i);
    CHECK(std::abs(fd - g[i]) <= tol * (1 + std::abs(g[i])));
  }
}

// Softmax cross-entropy losses and, when d is not null, the gradient (scale 1) of a copy of logits.
int xent(Vec& losses, Vec* d, const Vec& logits, const std::vector<std::int32_t>& targets, int N, int V, int ld) {
  Vec work = logits;
  const int counted = softmax_xent_forward<double>(work.data(), losses.data(), targets.data(), N, V, ld);
  if (d) {
    softmax_xent_backward<double>(work.data(), targets.data(), 1.0, N, V, ld);
    *d = work;
  }
  return counted;
}

}  // namespace

TEST_CASE("LayerNorm: row means, accumulating backward against finite differences, float agrees with double") {
  const int N = 3, C = 7;
  const Vec x = random_vec(N * C, 2), w = random_vec(C, 3), b = random_vec(C, 4), r = random_vec(N * C, 5);
  auto forward = [&](const Vec& xx, const Vec& ww, const Vec& bb) {
    Vec out(N * C), mean(N), rstd(N);
    layernorm_forward<double>(out.data(), mean.data(), rstd.data(), xx.data(), ww.data(), bb.data(), N, C, 1e-5);
    return dot(out, r);
  };
  Vec out(N * C), mean(N), rstd(N);
  layernorm_forward<double>(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
  for (int n = 0; n < N; ++n) {
    double m = 0;
    for (int c = 0; c < C; ++c) m += x[n * C + c];
    CHECK(mean[n] == doctest::Approx(m / C));
  }
  Vec dx(N * C, 1.0), dw(C, 2.0), db(C, 3.0);  // pre-filled: the backward must add
  layernorm_backward<double>(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(), rstd.data(),
                             N, C);
  for (auto& v : dx) v -= 1.0;
  for (auto& v : dw) v -= 2.0;
  for (auto& v : db) v -= 3.0;
  check_gradient([&](const Vec& v) { return forward(v, w, b); }, x, dx, 1e-6, "dx");
  check_gradient([&](const Vec& v) { return forward(x, v, b); }, w, dw, 1e-6, "dw");
  check_gradient([&](const Vec& v) { return forward(x, w, v); }, b, db, 1e-6, "db");

  std::vector<float> outf(N * C), meanf(N), rstdf(N);
  const auto xf = to_f(x), wf = to_f(w), bf = to_f(b);
  layernorm_forward<float>(outf.data(), meanf.data(), rstdf.data(), xf.data(), wf.data(), bf.data(), N, C, 1e-5f);
  for (int i = 0; i < N * C; ++i) CHECK(outf[i] == doctest::Approx(out[i]).epsilon(1e-5));
}

TEST_CASE("GELU: tanh-approximation values and derivative") {
  const Vec x = {-3.0, -1.0, 0.0, 0.5, 1.0, 6.0};
  const auto n = static_cast<std::int64_t>(x.size());
  Vec y(x.size());
  gelu_forward<double>(y.data(), x.data(), n);
  CHECK(y[2] == 0.0);
  CHECK(y[4] == doctest::Approx(0.8411919906082768).epsilon(1e-12));  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715))
  CHECK(y[5] == doctest::Approx(6.0).epsilon(1e-9));
  const Vec r = random_vec(x.size(), 6);
  Vec g(x.size());
  gelu_backward<double>(g.data(), x.data(), r.data(), n);
  check_gradient(
      [&](const Vec& v) {
        Vec o(v.size());
        gelu_forward<double>(o.data(), v.data(), n);
        return dot(o, r);
      },
      x, g, 1e-7, "gelu");
}

TEST_CASE("attention: probabilities, masks, first causal row, gradients, a query with no visible key") {
  const int B = 2, T = 5, C = 8, NH = 2;
  const Vec qkv = random_vec(B * T * 3 * C, 7);
  std::vector<std::uint8_t> mask(B * T, 1);
  mask[1 * T + 2] = 0;  // batch 1: keys 2 and 4 are padding
  mask[1 * T + 4] = 0;
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    Vec out(B * T * C), att(B * NH * T * T);
    attention_forward<double>(out.data(), att.data(), qkv.data(), mask.data(), causal, B, T, C, NH);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h)
        for (int t = 0; t < T; ++t) {
          const double* a = &att[((b * NH + h) * T + t) * T];
          double s = 0;
          for (int j = 0; j < T; ++j) {
            const bool hidden = (causal && j > t) || mask[b * T + j] == 0;
            if (hidden) CHECK(a[j] == 0.0);
            s += a[j];
          }
          CHECK(s == doctest::Approx(1.0));
        }
    if (causal)  // query 0 sees only key 0: out[b=0, t=0] = v[0]
      for (int c = 0; c < C; ++c) CHECK(out[c] == doctest::Approx(qkv[2 * C + c]));

    const Vec r = random_vec(B * T * C, 8);
    Vec dqkv(qkv.size()), scratch(att.size());
    attention_backward<double>(dqkv.data(), scratch.data(), r.data(), qkv.data(), att.data(), B, T, C, NH);
    check_gradient(
        [&](const Vec& v) {
          Vec o(B * T * C), a(B * NH * T * T);
          attention_forward<double>(o.data(), a.data(), v.data(), mask.data(), causal, B, T, C, NH);
          return dot(o, r);
        },
        qkv, dqkv, 1e-6, "dqkv");
  }
  // A query that sees no key gets zero probabilities and a zero output.
  std::vector<std::uint8_t> none(B * T, 0);
  for (int i = 0; i < T; ++i) none[i] = 1;  // batch 0 all valid, batch 1 all padding
  Vec out(B * T * C, 9.0), att(B * NH * T * T, 9.0);
  attention_forward<double>(out.data(), att.data(), qkv.data(), none.data(), false, B, T, C, NH);
  for (int i = T * C; i < B * T * C; ++i) CHECK(out[i] == 0.0);
  for (std::size_t i = att.size() / 2; i < att.size(); ++i) CHECK(att[i] == 0.0);
}

TEST_CASE("softmax cross-entropy: uniform logits, ignored rows, padding columns untouched, gradient") {
  const int N = 4, V = 6, ld = 8;
  Vec logits = random_vec(N * ld, 9, 2.0);
  for (int j = 0; j < ld; ++j) logits[j] = 0.5;  // row 0 uniform over V
  const std::vector<std::int32_t> targets = {3, 0, -1, 5};
  Vec losses(N), dlogits;
  const int counted = xent(losses, &dlogits, logits, targets, N, V, ld);
  CHECK(counted == 3);
  CHECK(losses[0] == doctest::Approx(std::log(6.0)));
  CHECK(losses[2] == 0.0);
  for (int j = 0; j < V; ++j) CHECK(dlogits[2 * ld + j] == 0.0);
  for (int n = 0; n < N; ++n)  // the padding columns are neither read nor written
    for (int j = V; j < ld; ++j) CHECK(dlogits[n * ld + j] == logits[n * ld + j]);
  // Gradient of sum(losses) (scale 1), by finite differences over the vocabulary columns.
  Vec g(N * ld, 0.0);
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < V; ++j) g[n * ld + j] = dlogits[n * ld + j];
  check_gradient(
      [&](const Vec& v) {
        Vec l(N);
        xent(l, nullptr, v, targets, N, V, ld);
        return l[0] + l[1] + l[2] + l[3];
      },
      logits, g, 1e-7, "dlogits");
  // Scaled gradient: (p - onehot) * scale.
  Vec work = logits, l(N);
  softmax_xent_forward<double>(work.data(), l.data(), targets.data(), N, V, ld);
  softmax_xent_backward<double>(work.data(), targets.data(), 0.25, N, V, ld);
  for (int j = 0; j < V; ++j) CHECK(work[j] == doctest::Approx(0.25 * dlogits[j]));
}

TEST_CASE("linear bias against explicit sums; bias gradient accumulates; residual add") {
  const int N = 3, C = 5, OC = 4;
  const Vec x = random_vec(N * C, 10), w = random_vec(OC * C, 11), bias = random_vec(OC, 12), r = random_vec(N * OC, 13);
  Vec out(N * OC);
  linear_forward<double>(out.data(), x.data(), w.data(), bias.data(), N, C, OC);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o) {
      double s = bias[o];
      for (int c = 0; c < C; ++c) s += x[n * C + c] * w[o * C + c];
      CHECK(out[n * OC + o] == doctest::Approx(s));
    }
  Vec dx(N * C), dw(OC * C, 0.0), db(OC, 1.0);
  linear_backward<double>(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, C, OC, false);
  for (int o = 0; o < OC; ++o) {
    double s = 1.0;
    for (int n = 0; n < N; ++n) s += r[n * OC + o];
    CHECK(db[o] == doctest::Approx(s));
  }
  Vec sum = out;
  add_inplace<double>(sum.data(), r.data(), N * OC);
  CHECK(sum[5] == doctest::Approx(out[5] + r[5]));
}

TEST_CASE("AdamW update: first step is lr * g / (|g| + eps) plus decay; second step by hand") {
  AdamWUpdate u;
  u.lr = 0.01, u.beta1 = 0.9, u.beta2 = 0.99, u.eps = 1e-8, u.weight_decay = 0.1, u.grad_scale = 0.5;
  std::vector<float> w = {1.0f, -2.0f, 0.5f}, m(3, 0.0f), v(3, 0.0f), g = {0.4f, -1.0f, 0.0f};
  const auto w0 = w;
  u.t = 1;
  adamw_update<float>(w.data(), m.data(), v.data(), g.data(), 3, u);
  for (int i = 0; i < 3; ++i) {
    const double gs = 0.5 * g[i];
    const double upd = gs == 0 ? 0.0 : gs / (std::abs(gs) + 1e-8);
    CHECK(w[i] == doctest::Approx(w0[i] - 0.01 * (upd + 0.1 * w0[i])).epsilon(1e-6));
  }
  const auto w1 = w;
  u.t = 2;
  adamw_update<float>(w.data(), m.data(), v.data(), g.data(), 3, u);
  for (int i = 0; i < 3; ++i) {
    const double gs = 0.5 * g[i];
    const double m2 = 0.9 * (0.1 * gs) + 0.1 * gs, v2 = 0.99 * (0.01 * gs * gs) + 0.01 * gs * gs;
    const double mhat = m2 / (1 - 0.81), vhat = v2 / (1 - 0.9801);
    CHECK(w[i] == doctest::Approx(w1[i] - 0.01 * (mhat / (std::sqrt(vhat) + 1e-8) + 0.1 * w1[i])).epsilon(1e-6));
  }
}
