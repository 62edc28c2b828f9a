// core::kernels' cuBLAS pieces (gemm.hpp, Blas) on the host, for tests that run the device training
// step on the SIMT emulator: the documented gemm contract (row-major, bf16 operands, fp32 sums by the
// host gemm, then bias, GELU with its pre-activation, or a residual, rounded once to the output type) and
// the argument rules it shares with the cuBLASLt path (check_gemm_arguments). The cuBLASLt calls
// themselves are tested on the device (test_kernels_gpu).
#include <chrono>
#include <cmath>
#include <vector>

#include "simt.hpp"
// (the emulator first)
#include "kernels/cuda_check.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/gemm.hpp"
#include "train/gemm.hpp"

namespace core::kernels {
namespace {

float value(const bf16& x) { return to_float(x); }
float value(float x) { return x; }

// The first `rows` rows (row stride ld, `cols` used) of a bf16 matrix, widened to fp32 with the same stride.
std::vector<float> widen(const bf16* x, int rows, int cols, int ld) {
  std::vector<float> out(rows == 0 ? 0 : static_cast<std::size_t>(rows - 1) * ld + cols);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_float(x[i]);
  return out;
}

// out[m, n] = alpha op(A) op(B) [m, n] + beta C[m, n] in fp32, before any epilogue: the bf16 operands
// widened exactly, the product by the host's fp32 gemm (core::train::gemm, the CPU reference).
template <class Out>
std::vector<float> product(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda,
                           const bf16* B, int ldb, float beta, const Out* C, int ldc) {
  const std::vector<float> a = trans_a ? widen(A, K, M, lda) : widen(A, M, K, lda);
  const std::vector<float> b = trans_b ? widen(B, N, K, ldb) : widen(B, K, N, ldb);
  std::vector<float> out(static_cast<std::size_t>(M) * N, 0.0f);
  if (beta != 0.0f)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n)
        out[static_cast<std::size_t>(m) * N + n] = value(C[static_cast<std::size_t>(m) * ldc + n]);
  core::train::gemm<float>(trans_a, trans_b, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, out.data(), N);
  return out;
}

}  // namespace

Blas::Impl::~Impl() = default;
Blas::Blas() : impl_(std::make_unique<Impl>()) {}
Blas::~Blas() = default;

void gemm(Blas&, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda, const bf16* B,
          int ldb, float beta, bf16* C, int ldc, const GemmEpilogue& ep, Stream) {
  check_gemm_arguments(trans_a, trans_b, M, N, K, lda, ldb, ldc, beta, ep);
  const std::vector<float> p = product(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const std::size_t at = static_cast<std::size_t>(m) * ldc + n;
      float v = p[static_cast<std::size_t>(m) * N + n] + (ep.bias ? to_float(ep.bias[n]) : 0.0f);
      if (ep.gelu) {
        if (ep.pre_gelu) ep.pre_gelu[at] = to_bf16(v);
        v = dev::gelu(v);
      }
      if (ep.residual) v += to_float(ep.residual[at]);
      C[at] = to_bf16(v);
    }
}

void gemm(Blas&, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda, const bf16* B,
          int ldb, float beta, float* C, int ldc, Stream) {
  check_gemm_arguments(trans_a, trans_b, M, N, K, lda, ldb, ldc, beta, {});
  const std::vector<float> p = product(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) C[static_cast<std::size_t>(m) * ldc + n] = p[static_cast<std::size_t>(m) * N + n];
}

// The rate of the host gemm above, timed like the device's (one warm-up, best of reps).
double measure_gemm_tflops(Blas& blas, int n, int reps) {
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  std::vector<bf16> a(nn, to_bf16(0.5f)), c(nn);
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    gemm(blas, false, true, n, n, n, 1.0f, a.data(), n, a.data(), n, 0.0f, c.data(), n);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0 && (best == 0 || s < best)) best = s;
  }
  return 2.0 * n * double(n) * n / best / 1e12;
}

float l2_norm(Blas&, const float* x, std::int64_t n, Stream) {
  double s = 0.0;
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return static_cast<float>(std::sqrt(s));
}

}  // namespace core::kernels
