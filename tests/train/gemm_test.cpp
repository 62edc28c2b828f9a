// gemm() against a plain triple loop for every transpose combination, row/column splits across
// threads, strided operands, beta and the fused row bias; the per-thread FLOP count (thread_gemm_flops).
#include <doctest/doctest.h>

#include <cmath>
#include <latch>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "common/memory.hpp"
#include "common/rng.hpp"
#include "test_support.hpp"
#include "train/gemm.hpp"
#include "train/layers.hpp"

using namespace core::train;

namespace {

void check_case(bool ta, bool tb, int M, int N, int K, double beta, bool bias) {
  core::Rng rng(M * 131 + N * 7 + K);
  const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
  std::vector<double> A((ta ? K : M) * std::size_t(lda)), B((tb ? N : K) * std::size_t(ldb)), C(M * std::size_t(ldc)),
      bvec(N);
  for (auto* v : {&A, &B, &C, &bvec})
    for (auto& x : *v) x = rng.uniform(-1, 1);
  std::vector<double> ref = C;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += (ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
      double& c = ref[i * std::size_t(ldc) + j];
      c = bias ? bvec[j] + 0.5 * s : beta * c + 0.5 * s;
    }
  gemm<double>(ta, tb, M, N, K, 0.5, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, bias ? bvec.data() : nullptr);
  double err = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) err = std::max(err, std::abs(C[i * std::size_t(ldc) + j] - ref[i * std::size_t(ldc) + j]));
  INFO("ta " << ta << " tb " << tb << " M " << M << " N " << N << " K " << K << " beta " << beta << " bias " << bias);
  CHECK(err < 1e-10);
}

}  // namespace

TEST_CASE("gemm matches a triple loop (serial and split across threads)") {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_case(ta, tb, 7, 5, 3, 0.0, false);        // small: serial path
        check_case(ta, tb, 300, 260, 250, 1.0, false);  // large, rows split
        check_case(ta, tb, 130, 300, 450, 0.5, false);  // large, columns split
        check_case(ta, tb, 257, 129, 600, 0.0, true);   // fused bias
      }
  }
  set_num_threads(1);
}

TEST_CASE("the GEMM peak refuses a size whose matrices do not fit in memory") {
  if (core::available_memory_bytes() == 0) return;  // nothing known to compare against
  CHECK_THROWS_WITH_AS(measure_gemm_gflops(2'000'000, 1), doctest::Contains("lower n"), core::UsageError);  // 48 TB
}

TEST_CASE("thread_gemm_flops: a thread's products, its parallel regions' workers included, never another thread's") {
  // Two threads at once (data-parallel ranks of one process): one runs an attention whose products its 2 OpenMP
  // threads share (B x heads = 4 gemm pairs of 4 T^2 hd FLOPs), the other 50 products of 64^3.
  const int B = 2, NH = 2, T = 128, C = 64;
  std::vector<float> qkv(std::size_t(B) * T * 3 * C, 0.01f), out(std::size_t(B) * T * C), att(std::size_t(B) * NH * T * T);
  std::vector<float> a(64 * 64, 0.5f), c(64 * 64);
  std::uint64_t attention_flops = 0, product_flops = 0, process_before = gemm_flops_counted();
  std::latch start(2);
  std::thread attention([&] {
    set_num_threads(2);  // (this thread's OpenMP setting)
    start.arrive_and_wait();
    const std::uint64_t before = thread_gemm_flops();
    attention_forward<float>(out.data(), att.data(), qkv.data(), nullptr, true, B, T, C, NH);
    attention_flops = thread_gemm_flops() - before;
  });
  std::thread products([&] {
    start.arrive_and_wait();
    const std::uint64_t before = thread_gemm_flops();
    for (int i = 0; i < 50; ++i) gemm<float>(false, false, 64, 64, 64, 1.0f, a.data(), 64, a.data(), 64, 0.0f, c.data(), 64);
    product_flops = thread_gemm_flops() - before;
  });
  attention.join();
  products.join();
  CHECK(attention_flops == std::uint64_t(B) * NH * 4 * T * T * (C / NH));
  CHECK(product_flops == 50ull * 2 * 64 * 64 * 64);
  CHECK(gemm_flops_counted() - process_before == attention_flops + product_flops);
}
