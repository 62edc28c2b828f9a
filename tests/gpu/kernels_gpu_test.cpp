// Every CUDA kernel against its CPU reference, which is core::train's float layer of the same meaning
// (train/layers.hpp, train/gemm.hpp, train/optimizer.hpp: one CPU implementation per computation).
// Inputs are drawn in float and rounded to bf16 once, so the GPU and the reference see identical
// values; the reference runs in float on those values. Tolerances, |gpu - ref| <= atol + rtol |ref|:
//   bf16 outputs: rtol 1e-2 (one bf16 rounding is <= 2^-8 = 3.9e-3 relative, plus fp32 ordering),
//                 atol 1e-2 for O(1) values (attention gradients: 3e-2, two bf16 products deep);
//   fp32 outputs from bf16 inputs (statistics, losses, dw/db, fp32-output GEMM): rtol 1e-3, atol 1e-3;
//   fp32-only AdamW: rtol 1e-5, atol 1e-7; conversions: exact.
// Exits 77 (skipped) before any test when no CUDA device answers.
// Built twice: test_kernels_gpu runs the kernels on the device; test_kernels_emulated
// (TOOLKIT_SIMT_EMULATION) runs the same kernel sources on the host SIMT emulator
// (tests/support/simt), which also checks their barrier discipline, in CI. There the GEMM and l2_norm
// cases check the emulator's host gemm (the stand-in for cuBLASLt in test_train_step_emulated), and
// the CUDA runtime's own error case is device-only.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "device_or_skip.hpp"
#include "kernels/embedding_index.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "train/gemm.hpp"
#include "train/layers.hpp"
#include "train/optimizer.hpp"
#include "test_support.hpp"

using namespace core::kernels;
namespace cpu = core::train;
using Floats = std::vector<float>;

namespace {

const bool kHaveDevice = [] {
  core::test::device_or_skip("GPU kernel tests");
  std::fprintf(stderr, "GPU: %s\n", cuda_device_name(0).c_str());
  return true;
}();

// Random values exactly representable in bf16.
Floats random_bf16_exact(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Floats v(n);
  for (auto& x : v) x = to_float(to_bf16(dist(rng)));
  return v;
}

DeviceBuffer<bf16> upload_bf16(const Floats& v) { return DeviceBuffer<bf16>(std::span<const bf16>(to_bf16(v))); }
DeviceBuffer<float> upload_f32(const Floats& v) { return DeviceBuffer<float>(std::span<const float>(v)); }
Floats download(const DeviceBuffer<bf16>& d) { return to_float(d.download()); }
Floats download(const DeviceBuffer<float>& d) { return d.download(); }

void check_close(const Floats& got, const Floats& want, double atol, double rtol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    const double limit = atol + rtol * std::abs(static_cast<double>(want[i]));
    if (!(err <= limit)) ++bad;
    if (!(err - limit <= worst_excess)) worst_excess = err - limit, worst = i;
  }
  INFO(what << ": " << bad << " of " << got.size() << " outside atol " << atol << " rtol " << rtol << "; worst at "
            << worst << ": gpu " << got[worst] << " ref " << want[worst]);
  CHECK(bad == 0);
}

Floats round_bf16(Floats v) {
  for (auto& x : v) x = to_float(to_bf16(x));
  return v;
}

}  // namespace

TEST_CASE("bf16 conversions on the device equal the host's round-to-nearest-even") {
  Floats x = random_bf16_exact(1000, 1);
  std::mt19937_64 rng(2);
  for (auto& v : x) v *= 1.0f + static_cast<float>(rng() % 1000) * 1e-4f;  // not bf16-exact any more
  const auto dx = upload_f32(x);
  DeviceBuffer<bf16> b(x.size());
  DeviceBuffer<float> back(x.size());
  to_bf16(b.data(), dx.data(), static_cast<std::int64_t>(x.size()));
  to_float(back.data(), b.data(), static_cast<std::int64_t>(x.size()));
  const auto bits = b.download();
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(bits[i].bits == to_bf16(x[i]).bits);
  check_close(download(back), round_bf16(x), 0, 0, "to_float");
}

TEST_CASE("LayerNorm forward and backward") {
  const int N = 70, C = 200;
  const Floats x = random_bf16_exact(N * C, 3, 2.0f), w = random_bf16_exact(C, 4), b = random_bf16_exact(C, 5);
  const Floats dout = random_bf16_exact(N * C, 6), dx0 = random_bf16_exact(N * C, 7);
  const Floats dw0 = random_bf16_exact(C, 8), db0 = random_bf16_exact(C, 9);
  Floats out(N * C), mean(N), rstd(N);
  cpu::layernorm_forward<float>(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  Floats dx = dx0, dw = dw0, db = db0;
  cpu::layernorm_backward<float>(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                                 rstd.data(), N, C);

  auto gx = upload_bf16(x), gw = upload_bf16(w), gb = upload_bf16(b), gdout = upload_bf16(dout), gdx = upload_bf16(dx0);
  auto gdw = upload_f32(dw0), gdb = upload_f32(db0);
  DeviceBuffer<bf16> gout(N * C);
  DeviceBuffer<float> gmean(N), grstd(N);
  layernorm_forward(gout.data(), gmean.data(), grstd.data(), gx.data(), gw.data(), gb.data(), N, C, 1e-5f);
  layernorm_backward(gdx.data(), gdw.data(), gdb.data(), gdout.data(), gx.data(), gw.data(), gmean.data(),
                     grstd.data(), N, C);
  check_close(download(gout), out, 1e-2, 1e-2, "out");
  check_close(download(gmean), mean, 1e-3, 1e-3, "mean");
  check_close(download(grstd), rstd, 1e-3, 1e-3, "rstd");
  check_close(download(gdx), dx, 1e-2, 1e-2, "dx");
  check_close(download(gdw), dw, 1e-3 * std::sqrt(N), 1e-3, "dw");
  check_close(download(gdb), db, 1e-3 * std::sqrt(N), 1e-3, "db");
}

TEST_CASE("GELU and tanh forward and backward, bias backward over strided rows") {
  const int N = 33, OC = 100, ld = 104;
  const std::int64_t n = static_cast<std::int64_t>(N) * OC;
  const Floats x = random_bf16_exact(n, 10, 2.0f), dout = random_bf16_exact(n, 11);
  Floats y(n), dx(n), t(n), dt(n);
  cpu::gelu_forward<float>(y.data(), x.data(), n);
  cpu::gelu_backward<float>(dx.data(), x.data(), dout.data(), n);
  cpu::tanh_forward<float>(t.data(), x.data(), n);
  auto gx = upload_bf16(x), gdout = upload_bf16(dout);
  DeviceBuffer<bf16> gy(n), gdx(n), gt(n), gdt(n);
  gelu_forward(gy.data(), gx.data(), n);
  gelu_backward(gdx.data(), gx.data(), gdout.data(), n);
  tanh_forward(gt.data(), gx.data(), n);
  check_close(download(gy), y, 1e-3, 1e-2, "gelu");
  check_close(download(gdx), dx, 1e-3, 1e-2, "gelu backward");
  check_close(download(gt), t, 1e-3, 1e-2, "tanh");
  // tanh's backward reads its output: the reference gets the same bf16 values the device has.
  const Floats t_bf16 = download(gt);
  cpu::tanh_backward<float>(dt.data(), t_bf16.data(), dout.data(), n);
  tanh_backward(gdt.data(), gt.data(), gdout.data(), n);
  check_close(download(gdt), dt, 1e-3, 1e-2, "tanh backward");

  Floats db(OC, 0.5f);  // 0.5 + column sums of dout, through the linear layer's bias gradient
  {
    Floats din(N), dw(OC, 0.0f), ones(N, 1.0f), w(OC, 0.0f);
    cpu::linear_backward<float>(din.data(), dw.data(), db.data(), dout.data(), ones.data(), w.data(), N, 1, OC, false);
  }
  auto gdb = upload_f32(Floats(OC, 0.5f));
  bias_backward(gdb.data(), gdout.data(), N, OC, OC);
  check_close(download(gdb), db, 1e-3 * std::sqrt(N), 1e-3, "bias_backward");
  // The same rows ld apart, with garbage between them that must not be summed.
  Floats strided(static_cast<std::size_t>(N) * ld, 1e3f);
  for (int r = 0; r < N; ++r) std::copy_n(dout.begin() + r * OC, OC, strided.begin() + r * ld);
  auto gstrided = upload_bf16(strided);
  auto gdb2 = upload_f32(Floats(OC, 0.5f));
  bias_backward(gdb2.data(), gstrided.data(), N, OC, ld);
  check_close(download(gdb2), db, 1e-3 * std::sqrt(N), 1e-3, "bias_backward, rows ld apart");
  CHECK_THROWS_AS(bias_backward(gdb2.data(), gstrided.data(), N, OC, OC - 1), CudaError);
}

TEST_CASE("fused softmax cross-entropy: losses, gradient, ignored rows, padding columns") {
  const int N = 12, V = 2500, ld = 2512;  // V > the block's 1024 threads; 12 padding columns
  Floats logits = random_bf16_exact(static_cast<std::size_t>(N) * ld, 33, 3.0f);
  logits[5 * ld + 17] = 60.0f;  // a dominant logit: the running max must rescale the sum
  std::vector<std::int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = n % 5 == 4 ? -1 : (n * 997) % V;  // rows 4 and 9 ignored
  targets[5] = 17;
  const float scale = 0.25f;
  Floats work = logits, losses(N);
  cpu::softmax_xent_forward<float>(work.data(), losses.data(), targets.data(), N, V, ld);
  cpu::softmax_xent_backward<float>(work.data(), targets.data(), scale, N, V, ld);

  auto glogits = upload_bf16(logits);
  DeviceBuffer<std::int32_t> gtargets{std::span<const std::int32_t>(targets)};
  DeviceBuffer<float> glosses(N);
  DeviceBuffer<bf16> gd(logits.size());
  softmax_xent(glosses.data(), nullptr, glogits.data(), gtargets.data(), scale, N, V, ld);  // losses only
  check_close(download(glosses), losses, 1e-3, 1e-3, "losses, no gradient");
  softmax_xent(glosses.data(), gd.data(), glogits.data(), gtargets.data(), scale, N, V, ld);
  check_close(download(glosses), losses, 1e-3, 1e-3, "losses");
  const Floats d = download(gd);
  Floats got, want;
  for (int n = 0; n < N; ++n)
    for (int j = 0; j < ld; ++j) {
      got.push_back(d[n * ld + j]);
      want.push_back(j < V ? work[n * ld + j] : 0.0f);  // padding columns get 0
    }
  check_close(got, want, 1e-4, 1e-2, "dlogits");
  softmax_xent(glosses.data(), glogits.data(), glogits.data(), gtargets.data(), scale, N, V, ld);  // in place
  check_close(download(glogits), got, 0, 0, "dlogits in place");
}

TEST_CASE("AdamW step on fp32 master weights with the bf16 copy") {
  const std::int64_t n = 5000;
  Floats w = random_bf16_exact(n, 34), m = random_bf16_exact(n, 35, 0.1f), v = random_bf16_exact(n, 36, 0.1f);
  const Floats g = random_bf16_exact(n, 37);
  for (auto& x : v) x = x * x;
  AdamW p;
  p.lr = 3e-3f, p.beta1 = 0.9f, p.beta2 = 0.95f, p.eps = 1e-8f, p.weight_decay = 0.1f, p.grad_scale = 0.7f, p.step = 3;
  auto gw = upload_f32(w), gm = upload_f32(m), gv = upload_f32(v), gg = upload_f32(g);
  DeviceBuffer<bf16> copy(n);
  adamw_update(gw.data(), gm.data(), gv.data(), gg.data(), copy.data(), n, p);
  cpu::adamw_update<float>(w.data(), m.data(), v.data(), g.data(), n,
                           cpu::AdamWUpdate{p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.grad_scale, p.step});
  const Floats w_gpu = download(gw);
  check_close(w_gpu, w, 1e-7, 1e-5, "w");
  check_close(download(gm), m, 1e-7, 1e-5, "m");
  check_close(download(gv), v, 1e-7, 1e-5, "v");
  const auto bits = copy.download();
  for (std::int64_t i = 0; i < n; ++i) CHECK(bits[i].bits == to_bf16(w_gpu[i]).bits);
}

TEST_CASE("bf16 GEMM through cuBLASLt: transposes, fp32 output with accumulation, bias, GELU and residual epilogues") {
  Blas blas;
  const int M = 64, N = 96, K = 128;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const Floats a = random_bf16_exact(M * K, 16), b = random_bf16_exact(K * N, 17), c0 = random_bf16_exact(M * N, 18);
      const int lda = ta ? M : K, ldb = tb ? K : N;
      Floats want = c0;
      cpu::gemm<float>(ta, tb, M, N, K, 0.5f, a.data(), lda, b.data(), ldb, 1.0f, want.data(), N);
      auto ga = upload_bf16(a), gb = upload_bf16(b), gc = upload_bf16(c0);
      auto gc32 = upload_f32(c0);
      gemm(blas, ta, tb, M, N, K, 0.5f, ga.data(), lda, gb.data(), ldb, 1.0f, gc.data(), N);
      gemm(blas, ta, tb, M, N, K, 0.5f, ga.data(), lda, gb.data(), ldb, 1.0f, gc32.data(), N);
      check_close(download(gc), want, 1e-2, 1e-2, "bf16 out");
      check_close(download(gc32), want, 1e-3, 1e-3, "fp32 out");
    }
  // Linear layer y = gelu(x W^T + b) with the pre-activation saved.
  const Floats x = random_bf16_exact(M * K, 19), w = random_bf16_exact(N * K, 20, 0.1f), bias = random_bf16_exact(N, 21);
  Floats pre(M * N), act(M * N);
  cpu::linear_forward<float>(pre.data(), x.data(), w.data(), bias.data(), M, K, N);
  cpu::gelu_forward<float>(act.data(), round_bf16(pre).data(), M * N);
  auto gx = upload_bf16(x), gw = upload_bf16(w), gbias = upload_bf16(bias);
  DeviceBuffer<bf16> gy(M * N), gpre(M * N), gy2(M * N);
  gemm(blas, false, true, M, N, K, 1.0f, gx.data(), K, gw.data(), K, 0.0f, gy.data(), N,
       GemmEpilogue{gbias.data(), true, gpre.data()});
  check_close(download(gpre), pre, 1e-2, 1e-2, "pre-GELU aux");
  check_close(download(gy), act, 1e-2, 2e-2, "bias + GELU epilogue");
  gemm(blas, false, true, M, N, K, 1.0f, gx.data(), K, gw.data(), K, 0.0f, gy2.data(), N, GemmEpilogue{gbias.data()});
  check_close(download(gy2), pre, 1e-2, 1e-2, "bias epilogue");
  // Residual block output y = x W^T + b + r, in place (the residual is the output buffer).
  const Floats r = random_bf16_exact(M * N, 24);
  Floats with_residual = pre;
  cpu::add_inplace<float>(with_residual.data(), r.data(), M * N);
  auto gr = upload_bf16(r);
  gemm(blas, false, true, M, N, K, 1.0f, gx.data(), K, gw.data(), K, 0.0f, gr.data(), N,
       GemmEpilogue{.bias = gbias.data(), .residual = gr.data()});
  check_close(download(gr), with_residual, 1e-2, 1e-2, "bias + residual epilogue");
  CHECK_THROWS_AS(gemm(blas, false, true, M, N, K, 1.0f, gx.data(), K, gw.data(), K, 1.0f, gr.data(), N,
                       GemmEpilogue{.residual = gr.data()}),
                  CudaError);
}

namespace {

// Log-sum-exp of each row's scaled scores over the keys it sees, in double from qkv [B, T, 3C]: an
// independent reference for the fused kernel's lse output.
Floats attention_lse(const Floats& qkv, const std::uint8_t* mask, bool causal, int B, int T, int C, int NH) {
  const int hd = C / NH;
  Floats lse(static_cast<std::size_t>(B) * NH * T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        std::vector<double> s;
        for (int j = 0; j < T; ++j) {
          if ((causal && j > t) || (mask && !mask[b * T + j])) continue;
          double dot = 0;
          for (int d = 0; d < hd; ++d)
            dot += double(qkv[(std::size_t(b) * T + t) * 3 * C + h * hd + d]) *
                   qkv[(std::size_t(b) * T + j) * 3 * C + C + h * hd + d];
          s.push_back(dot / std::sqrt(double(hd)));
        }
        double m = -INFINITY, sum = 0;
        for (double x : s) m = std::max(m, x);
        for (double x : s) sum += std::exp(x - m);
        lse[(std::size_t(b) * NH + h) * T + t] = static_cast<float>(m + std::log(sum));
      }
  return lse;
}

struct AttentionShape {
  int B, T, C, NH;
};

}  // namespace

TEST_CASE("fused attention forward and backward against the host layers: causal, padding-masked, every head size") {
  // T = 64 is one tile, T = 100 / 70 / 80 leave partial tiles; head sizes 32, 64, 16, 128.
  for (const AttentionShape sh : {AttentionShape{2, 64, 128, 4}, AttentionShape{2, 100, 128, 2},
                                  AttentionShape{1, 70, 64, 4}, AttentionShape{1, 80, 256, 2}}) {
    const auto [B, T, C, NH] = sh;
    CAPTURE(T);
    CAPTURE(C / NH);
    const Floats qkv = random_bf16_exact(static_cast<std::size_t>(B) * T * 3 * C, 22);
    const Floats dout = random_bf16_exact(static_cast<std::size_t>(B) * T * C, 23);
    std::vector<std::uint8_t> mask(B * T, 1);
    for (int j = T - 14; j < T; ++j) mask[(B - 1) * T + j] = 0;  // the last sequence ends in 14 padding keys
    DeviceBuffer<std::uint8_t> gmask{std::span<const std::uint8_t>(mask)};
    auto gqkv = upload_bf16(qkv), gdout = upload_bf16(dout);
    DeviceBuffer<char> ws(attention_workspace_bytes(B, T, NH));
    for (bool causal : {true, false}) {
      for (bool masked : {false, true}) {
        CAPTURE(causal);
        CAPTURE(masked);
        const std::uint8_t* m = masked ? mask.data() : nullptr;
        Floats out(static_cast<std::size_t>(B) * T * C), att(static_cast<std::size_t>(B) * NH * T * T);
        cpu::attention_forward<float>(out.data(), att.data(), qkv.data(), m, causal, B, T, C, NH);
        Floats dqkv(qkv.size()), scratch(att.size());
        cpu::attention_backward<float>(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);

        DeviceBuffer<bf16> gout(out.size()), gdqkv(qkv.size());
        DeviceBuffer<float> glse(static_cast<std::size_t>(B) * NH * T);
        const std::uint8_t* gm = masked ? gmask.data() : nullptr;
        attention_forward(gout.data(), glse.data(), gqkv.data(), gm, causal, B, T, C, NH);
        attention_backward(gdqkv.data(), gdout.data(), gqkv.data(), gout.data(), glse.data(), gm, causal, B, T, C, NH,
                           ws.data());
        check_close(download(gout), out, 1e-2, 1e-2, "out");
        check_close(download(glse), attention_lse(qkv, m, causal, B, T, C, NH), 1e-3, 1e-3, "lse");
        check_close(download(gdqkv), dqkv, 3e-2, 3e-2, "dqkv");
      }
    }
  }
}

TEST_CASE("fused attention rejects a head size it has no kernel for") {
  DeviceBuffer<bf16> qkv(3 * 48), out(48);
  DeviceBuffer<float> lse(1);
  CHECK_THROWS_AS(attention_forward(out.data(), lse.data(), qkv.data(), nullptr, true, 1, 1, 48, 1), CudaError);
}

TEST_CASE("embeddings forward and backward, with and without segments (gradients grouped by id, no atomics)") {
  const int B = 3, T = 40, C = 96, V = 50, P = 64, S = 3;
  std::vector<std::int32_t> tok(B * T), seg(B * T);
  std::mt19937_64 rng(24);
  for (auto& t : tok) t = static_cast<std::int32_t>(rng() % 7 == 0 ? 5 : rng() % V);  // token 5 repeats often
  for (int i = 0; i < B * T; ++i) seg[i] = static_cast<std::int32_t>((i % T) * S / T);  // 0, 1, 2 along each row
  const Floats wte = random_bf16_exact(static_cast<std::size_t>(V) * C, 25), wpe = random_bf16_exact(P * C, 26);
  const Floats wse = random_bf16_exact(static_cast<std::size_t>(S) * C, 31);
  const Floats dout = random_bf16_exact(static_cast<std::size_t>(B) * T * C, 27);
  const Floats dwte0 = random_bf16_exact(wte.size(), 28), dwpe0 = random_bf16_exact(wpe.size(), 29);
  const Floats dwse0 = random_bf16_exact(wse.size(), 32);

  const HostEmbeddingIndex ix = make_embedding_index(tok.data(), B * T, V);
  const HostEmbeddingIndex sx = make_embedding_index(seg.data(), B * T, S);
  DeviceBuffer<std::int32_t> gtok{std::span<const std::int32_t>(tok)}, gseg{std::span<const std::int32_t>(seg)},
      grows{std::span<const std::int32_t>(ix.rows)}, gstarts{std::span<const std::int32_t>(ix.starts)},
      gpos{std::span<const std::int32_t>(ix.positions)}, gsrows{std::span<const std::int32_t>(sx.rows)},
      gsstarts{std::span<const std::int32_t>(sx.starts)}, gspos{std::span<const std::int32_t>(sx.positions)};
  const EmbeddingIndex tokens{grows.data(), gstarts.data(), gpos.data(), static_cast<int>(ix.rows.size())};
  const EmbeddingIndex segments{gsrows.data(), gsstarts.data(), gspos.data(), static_cast<int>(sx.rows.size())};
  auto gwte = upload_bf16(wte), gwpe = upload_bf16(wpe), gwse = upload_bf16(wse), gdout = upload_bf16(dout);
  for (bool with_segments : {false, true}) {
    CAPTURE(with_segments);
    const std::int32_t* s = with_segments ? seg.data() : nullptr;
    Floats out(dout.size()), dwte = dwte0, dwpe = dwpe0, dwse = dwse0;
    cpu::embedding_forward<float>(out.data(), tok.data(), s, wte.data(), wpe.data(), wse.data(), B, T, C);
    cpu::embedding_backward<float>(dwte.data(), dwpe.data(), dwse.data(), dout.data(), tok.data(), s, B, T, C);

    auto gdwte = upload_f32(dwte0), gdwpe = upload_f32(dwpe0), gdwse = upload_f32(dwse0);
    DeviceBuffer<bf16> gout(out.size());
    embedding_forward(gout.data(), gtok.data(), with_segments ? gseg.data() : nullptr, gwte.data(), gwpe.data(),
                      with_segments ? gwse.data() : nullptr, B, T, C);
    embedding_backward(gdwte.data(), gdwpe.data(), with_segments ? gdwse.data() : nullptr, gdout.data(), tokens,
                       with_segments ? segments : EmbeddingIndex{}, B, T, C);
    check_close(download(gout), out, 1e-2, 1e-2, "embedding out");
    check_close(download(gdwte), dwte, 1e-3 * std::sqrt(B * T), 1e-3, "dwte");
    check_close(download(gdwpe), dwpe, 1e-3 * std::sqrt(B), 1e-3, "dwpe");
    check_close(download(gdwse), dwse, 1e-3 * std::sqrt(B * T), 1e-3, "dwse");  // unchanged without segments
  }
}

TEST_CASE("l2_norm of fp32 values") {
  Blas blas;
  const Floats x = random_bf16_exact(100000, 30);
  double s = 0;
  for (float v : x) s += double(v) * v;
  auto gx = upload_f32(x);
  CHECK(l2_norm(blas, gx.data(), static_cast<std::int64_t>(x.size())) == doctest::Approx(std::sqrt(s)).epsilon(1e-5));
}

#ifndef TOOLKIT_SIMT_EMULATION
TEST_CASE("a failing CUDA call throws CudaError with file:line and a hint") {
  try {
    DeviceBuffer<char> huge(std::size_t{1} << 50);  // 1 PiB
    FAIL("expected CudaError");
  } catch (const CudaError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("runtime.cpp:") != std::string::npos);
    CHECK(msg.find("cudaMalloc") != std::string::npos);
    CHECK(msg.find("hint:") != std::string::npos);
  }
  synchronize();
}
#endif
