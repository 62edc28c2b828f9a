// Eigen-backed GEMM over row-major raw buffers with arbitrary row strides (see gemm.hpp).
#include "train/gemm.hpp"

// Threading is done here (see gemm()); Eigen's own GEMM threading stays off.
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/memory.hpp"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace core::train {

namespace {

std::atomic<std::uint64_t> flops_counted{0};  // relaxed: a statistic, read between steps
// This thread's count, and where its gemm() calls count (null: its own; a parallel region's worker: the opener's).
thread_local std::atomic<std::uint64_t> thread_flops{0};
thread_local std::atomic<std::uint64_t>* thread_sink = nullptr;

template <class T>
using CMat = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                        Eigen::OuterStride<>>;
template <class T>
using MMat = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;

template <class T, class OA, class OB>
void run(const OA& a, const OB& b, T alpha, T beta, MMat<T>& c) {
  if (beta == T(0)) {
    c.noalias() = alpha * (a * b);
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

// One thread's product on a block of C, Eigen single-threaded.
template <class T>
void gemm_serial(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
                 T beta, T* C, int ldc, const T* row_bias) {
  MMat<T> c(C, M, N, Eigen::OuterStride<>(ldc));
  if (row_bias) {
    c.rowwise() = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(row_bias, N);
    beta = T(1);
  }
  if (K == 0) {
    if (beta == T(0)) c.setZero();
    else c *= beta;
    return;
  }
  // op(A) is M x K: stored K x M when transposed.
  const CMat<T> a(A, trans_a ? K : M, trans_a ? M : K, Eigen::OuterStride<>(lda));
  const CMat<T> b(B, trans_b ? N : K, trans_b ? K : N, Eigen::OuterStride<>(ldb));
  if (!trans_a && !trans_b) run(a, b, alpha, beta, c);
  else if (!trans_a && trans_b) run(a, b.transpose(), alpha, beta, c);
  else if (trans_a && !trans_b) run(a.transpose(), b, alpha, beta, c);
  else run(a.transpose(), b.transpose(), alpha, beta, c);
}

}  // namespace

// Threads split C into disjoint blocks of rows (or columns, whichever is longer), each computed
// by one single-threaded Eigen product: one barrier per product instead of Eigen's shared packed
// panels and spin-waits, which measured 2-3x slower on a busy 2-core machine. Each element is
// computed by one thread, so results depend only on the thread count.
template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
          T beta, T* C, int ldc, const T* row_bias) {
  const std::uint64_t flops = 2 * std::uint64_t(M) * std::uint64_t(N) * std::uint64_t(K);
  flops_counted.fetch_add(flops, std::memory_order_relaxed);
  thread_gemm_flop_counter()->fetch_add(flops, std::memory_order_relaxed);
#ifdef _OPENMP
  const double work = double(M) * N * K;
  if (work >= double(1 << 24) && omp_get_max_threads() > 1 && !omp_in_parallel()) {
    const bool split_rows = M >= N;
    const int extent = split_rows ? M : N;
#pragma omp parallel
    {
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      // Block boundaries on multiples of 16 keep the kernels on full SIMD panels.
      const int units = (extent + 15) / 16;
      const int b0 = std::min(extent, units * t / nt * 16), b1 = std::min(extent, units * (t + 1) / nt * 16);
      if (b1 > b0) {
        if (split_rows)
          gemm_serial<T>(trans_a, trans_b, b1 - b0, N, K, alpha, trans_a ? A + b0 : A + std::size_t(b0) * lda, lda, B,
                         ldb, beta, C + std::size_t(b0) * ldc, ldc, row_bias);
        else
          gemm_serial<T>(trans_a, trans_b, M, b1 - b0, K, alpha, A, lda, trans_b ? B + std::size_t(b0) * ldb : B + b0,
                         ldb, beta, C + b0, ldc, row_bias ? row_bias + b0 : nullptr);
      }
    }
    return;
  }
#endif
  gemm_serial<T>(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, row_bias);
}

template void gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*,
                          int, const float*);
template void gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*, int, double,
                           double*, int, const double*);

std::uint64_t gemm_flops_counted() { return flops_counted.load(std::memory_order_relaxed); }

std::atomic<std::uint64_t>* thread_gemm_flop_counter() { return thread_sink ? thread_sink : &thread_flops; }
std::uint64_t thread_gemm_flops() { return thread_flops.load(std::memory_order_relaxed); }
GemmFlopsInto::GemmFlopsInto(std::atomic<std::uint64_t>* counter) : previous_(thread_sink) {
  thread_sink = counter == &thread_flops ? nullptr : counter;
}
GemmFlopsInto::~GemmFlopsInto() { thread_sink = previous_; }

double measure_gemm_gflops(int n, int reps) {
  const std::size_t nn = std::size_t(n) * n;
  const std::uint64_t avail = available_memory_bytes();
  if (avail > 0 && 3.0 * double(nn) * sizeof(float) > double(avail))
    throw UsageError("peak: n = " + std::to_string(n) + " needs three n x n float32 matrices (" +
                     std::to_string(3 * (nn * sizeof(float) >> 20)) + " MiB) but " + std::to_string(avail >> 20) +
                     " MiB are available; lower n");
  std::vector<float> a(nn), b(nn), c(nn);
  for (std::size_t i = 0; i < nn; ++i) {
    a[i] = float(i % 7) * 0.25f - 0.5f;
    b[i] = float(i % 5) * 0.2f - 0.4f;
  }
  gemm<float>(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm<float>(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(n) * n * n / best / 1e9;
}

void set_num_threads(int n) {
#ifdef _OPENMP
  if (n > 0) omp_set_num_threads(n);
#endif
}

int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace core::train
