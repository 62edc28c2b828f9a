// CPU reference kernels checked independently: analytic backward passes against central finite
// differences in double, float results against the double ones, and closed forms (GELU values,
// uniform-logit cross-entropy, first AdamW step, causal attention's first row, bf16 rounding).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernels/bf16.hpp"
#include "kernels/reference.hpp"
#include "test_support.hpp"

using namespace core::kernels;
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

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences of f at x, compared with the analytic gradient g: max |fd - g| <= tol * (1 + |g|).
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

}  // namespace

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN") {
  CHECK(to_bf16(1.0f).bits == 0x3F80);
  CHECK(to_float(bf16{0x3F80}) == 1.0f);
  auto from_bits = [](std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  CHECK(to_bf16(from_bits(0x3F808000u)).bits == 0x3F80);  // tie, even below
  CHECK(to_bf16(from_bits(0x3F818000u)).bits == 0x3F82);  // tie, even above
  CHECK(to_bf16(from_bits(0x3F808001u)).bits == 0x3F81);  // just above the tie
  CHECK(std::isnan(to_float(to_bf16(std::nanf("")))));
  CHECK(std::isinf(to_float(to_bf16(INFINITY))));
  for (double x : random_vec(1000, 1, 100.0)) {
    const float f = static_cast<float>(x);
    CHECK(std::abs(to_float(to_bf16(f)) - f) <= std::ldexp(std::abs(f), -8)  /* half an ulp: 8 significant bits */);
  }
}

TEST_CASE("LayerNorm backward matches finite differences; dx, dw, db accumulate") {
  const int N = 3, C = 7;
  const Vec x = random_vec(N * C, 2), w = random_vec(C, 3), b = random_vec(C, 4), r = random_vec(N * C, 5);
  auto forward = [&](const Vec& xx, const Vec& ww, const Vec& bb) {
    Vec out(N * C), mean(N), rstd(N);
    ref::layernorm_forward(out.data(), mean.data(), rstd.data(), xx.data(), ww.data(), bb.data(), N, C, 1e-5);
    return dot(out, r);
  };
  Vec out(N * C), mean(N), rstd(N);
  ref::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
  for (int n = 0; n < N; ++n) {  // each row normalised: mean b-weighted, unit variance before the affine map
    double m = 0;
    for (int c = 0; c < C; ++c) m += x[n * C + c];
    CHECK(mean[n] == doctest::Approx(m / C));
  }
  Vec dx(N * C, 1.0), dw(C, 2.0), db(C, 3.0);  // pre-filled: the backward must add
  ref::layernorm_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  for (auto& v : dx) v -= 1.0;
  for (auto& v : dw) v -= 2.0;
  for (auto& v : db) v -= 3.0;
  check_gradient([&](const Vec& v) { return forward(v, w, b); }, x, dx, 1e-6, "dx");
  check_gradient([&](const Vec& v) { return forward(x, v, b); }, w, dw, 1e-6, "dw");
  check_gradient([&](const Vec& v) { return forward(x, w, v); }, b, db, 1e-6, "db");

  // float reference agrees with double.
  std::vector<float> outf(N * C), meanf(N), rstdf(N);
  const auto xf = to_f(x), wf = to_f(w), bf_ = to_f(b);
  ref::layernorm_forward(outf.data(), meanf.data(), rstdf.data(), xf.data(), wf.data(), bf_.data(), N, C, 1e-5f);
  for (int i = 0; i < N * C; ++i) CHECK(outf[i] == doctest::Approx(out[i]).epsilon(1e-5));
}

TEST_CASE("GELU: tanh-approximation values and derivative") {
  const Vec x = {-3.0, -1.0, 0.0, 0.5, 1.0, 6.0};
  Vec y(x.size());
  ref::gelu_forward(y.data(), x.data(), static_cast<std::int64_t>(x.size()));
  CHECK(y[2] == 0.0);
  CHECK(y[4] == doctest::Approx(0.8411919906082768).epsilon(1e-12));  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715))
  CHECK(y[5] == doctest::Approx(6.0).epsilon(1e-9));
  const Vec r = random_vec(x.size(), 6);
  Vec g(x.size());
  ref::gelu_backward(g.data(), x.data(), r.data(), static_cast<std::int64_t>(x.size()));
  check_gradient(
      [&](const Vec& v) {
        Vec o(v.size());
        ref::gelu_forward(o.data(), v.data(), static_cast<std::int64_t>(v.size()));
        return dot(o, r);
      },
      x, g, 1e-7, "gelu");
}

TEST_CASE("attention: probabilities, masks, first causal row, and gradients") {
  const int B = 2, T = 5, C = 8, NH = 2;
  const Vec qkv = random_vec(B * T * 3 * C, 7);
  std::vector<std::uint8_t> mask(B * T, 1);
  mask[1 * T + 2] = 0;  // batch 1: key 2 is padding
  mask[1 * T + 4] = 0;
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    Vec out(B * T * C), att(B * NH * T * T);
    ref::attention_forward(out.data(), att.data(), qkv.data(), mask.data(), causal, B, T, C, NH);
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
    Vec dqkv(qkv.size());
    ref::attention_backward(dqkv.data(), r.data(), qkv.data(), att.data(), B, T, C, NH);
    check_gradient(
        [&](const Vec& v) {
          Vec o(B * T * C), a(B * NH * T * T);
          ref::attention_forward(o.data(), a.data(), v.data(), mask.data(), causal, B, T, C, NH);
          return dot(o, r);
        },
        qkv, dqkv, 1e-6, "dqkv");
  }
  // A query that sees no key gets zero probabilities and a zero output.
  std::vector<std::uint8_t> none(B * T, 0);
  for (int i = 0; i < T; ++i) none[i] = 1;  // batch 0 all valid, batch 1 all padding
  Vec out(B * T * C, 9.0), att(B * NH * T * T);
  ref::attention_forward(out.data(), att.data(), qkv.data(), none.data(), false, B, T, C, NH);
  for (int i = T * C; i < B * T * C; ++i) CHECK(out[i] == 0.0);
}

TEST_CASE("softmax cross-entropy: uniform logits, ignored rows, padding, in place, gradient") {
  const int N = 4, V = 6, ld = 8;
  Vec logits = random_vec(N * ld, 9, 2.0);
  for (int j = 0; j < ld; ++j) logits[j] = 0.5;  // row 0 uniform over V
  const std::vector<std::int32_t> targets = {3, 0, -1, 5};
  Vec losses(N), dlogits(N * ld, 7.0);
  const int counted = ref::softmax_xent(losses.data(), dlogits.data(), logits.data(), targets.data(), 1.0, N, V, ld);
  CHECK(counted == 3);
  CHECK(losses[0] == doctest::Approx(std::log(6.0)));
  CHECK(losses[2] == 0.0);
  for (int j = 0; j < ld; ++j) CHECK(dlogits[2 * ld + j] == 0.0);
  for (int n = 0; n < N; ++n)
    for (int j = V; j < ld; ++j) CHECK(dlogits[n * ld + j] == 0.0);
  // In place gives the same gradient.
  Vec inplace = logits, losses2(N);
  ref::softmax_xent(losses2.data(), inplace.data(), inplace.data(), targets.data(), 1.0, N, V, ld);
  CHECK(inplace == dlogits);
  CHECK(losses2 == losses);
  // Gradient of sum(losses) (scale 1), by finite differences over the vocabulary columns.
  check_gradient(
      [&](const Vec& v) {
        Vec l(N);
        ref::softmax_xent<double>(l.data(), nullptr, v.data(), targets.data(), 1.0, N, V, ld);
        return l[0] + l[1] + l[2] + l[3];
      },
      logits, dlogits, 1e-7, "dlogits");
}

TEST_CASE("bias, residual, and matmul with every transpose against explicit products") {
  const int M = 3, N = 4, K = 5;
  const Vec a = random_vec(M * K, 10), b = random_vec(K * N, 11), bias = random_vec(N, 12);
  Vec at(K * M), bt(N * K);  // explicit transposes
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) at[k * M + i] = a[i * K + k];
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) bt[j * K + k] = b[k * N + j];
  Vec expect(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += a[i * K + k] * b[k * N + j];
      expect[i * N + j] = s;
    }
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      Vec c(M * N, 1.0);
      ref::matmul(ta, tb, M, N, K, 2.0, ta ? at.data() : a.data(), ta ? M : K, tb ? bt.data() : b.data(),
                  tb ? K : N, 0.5, c.data(), N, bias.data());
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) CHECK(c[i * N + j] == doctest::Approx(2 * expect[i * N + j] + 0.5 + bias[j]));
    }
  Vec out = expect;
  ref::add_bias(out.data(), bias.data(), M, N);
  Vec db(N, 1.0);
  ref::bias_backward(db.data(), expect.data(), M, N);
  for (int j = 0; j < N; ++j) {
    CHECK(out[j] == doctest::Approx(expect[j] + bias[j]));
    double s = 1.0;
    for (int i = 0; i < M; ++i) s += expect[i * N + j];
    CHECK(db[j] == doctest::Approx(s));
  }
  Vec sum(M * N);
  ref::residual_add(sum.data(), expect.data(), out.data(), M * N);
  CHECK(sum[5] == doctest::Approx(expect[5] + out[5]));
}

TEST_CASE("AdamW: first step is lr * g / (|g| + eps) plus decay; second step by hand; bf16 copy") {
  AdamW p;
  p.lr = 0.01f, p.beta1 = 0.9f, p.beta2 = 0.99f, p.eps = 1e-8f, p.weight_decay = 0.1f, p.grad_scale = 0.5f;
  std::vector<float> w = {1.0f, -2.0f, 0.5f}, m(3, 0.0f), v(3, 0.0f), g = {0.4f, -1.0f, 0.0f};
  std::vector<bf16> copy(3);
  const auto w0 = w;
  p.step = 1;
  ref::adamw_update(w.data(), m.data(), v.data(), g.data(), copy.data(), 3, p);
  for (int i = 0; i < 3; ++i) {
    const double gs = 0.5 * g[i];
    const double upd = gs == 0 ? 0.0 : gs / (std::abs(gs) + 1e-8);
    CHECK(w[i] == doctest::Approx(w0[i] - 0.01 * (upd + 0.1 * w0[i])).epsilon(1e-6));
    CHECK(copy[i].bits == to_bf16(w[i]).bits);
  }
  // Second step against the formulas in double.
  const auto w1 = w;
  p.step = 2;
  ref::adamw_update(w.data(), m.data(), v.data(), g.data(), nullptr, 3, p);
  for (int i = 0; i < 3; ++i) {
    const double gs = 0.5 * g[i];
    const double m2 = 0.9 * (0.1 * gs) + 0.1 * gs, v2 = 0.99 * (0.01 * gs * gs) + 0.01 * gs * gs;
    const double mhat = m2 / (1 - 0.81), vhat = v2 / (1 - 0.9801);
    CHECK(w[i] == doctest::Approx(w1[i] - 0.01 * (mhat / (std::sqrt(vhat) + 1e-8) + 0.1 * w1[i])).epsilon(1e-6));
  }
}
