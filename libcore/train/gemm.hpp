// Dense matrix products on the host over raw row-major buffers (Eigen GEMM behind Map views, no
// copies). Keeping Eigen inside gemm.cpp lets the rest of the trainer work on flat buffers.
//   C[M,N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T; lda/ldb/ldc are row strides.
// Requires non-overlapping A/B and C. beta == 0 overwrites C (NaNs in C are not propagated).
// row_bias (length N, optional): C's rows are first set to row_bias, then the product is added
// (beta is ignored) — the bias of a linear layer, filled by the thread that computes the block.
#pragma once
#include <atomic>
#include <cstdint>

namespace core::train {

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
          T beta, T* C, int ldc, const T* row_bias = nullptr);

// Floating-point operations of every gemm() call in this process so far (2 M N K each, all threads,
// float and double): the FLOPs a step measurably spends (ltd-pretrain reports them per step).
std::uint64_t gemm_flops_counted();

// The same for the calling thread alone: its gemm() calls and those of the worker threads of the
// parallel regions it opens (which count into it through a GemmFlopsInto). Data-parallel ranks that are
// threads of one process each read their own work here.
std::uint64_t thread_gemm_flops();
// This thread's counter, to hand to the workers of a parallel region.
std::atomic<std::uint64_t>* thread_gemm_flop_counter();
// While alive, gemm() calls on this thread count into `counter` (a parallel region's opener's).
class GemmFlopsInto {
 public:
  explicit GemmFlopsInto(std::atomic<std::uint64_t>* counter);
  ~GemmFlopsInto();
  GemmFlopsInto(const GemmFlopsInto&) = delete;
  GemmFlopsInto& operator=(const GemmFlopsInto&) = delete;

 private:
  std::atomic<std::uint64_t>* previous_;
};

// Achieved GFLOP/s of float32 C = A B for square n x n row-major matrices (best of `reps` timed
// products after one warm-up): the machine's GEMM peak through this same library and thread count.
// UsageError when the three matrices do not fit in the memory available.
double measure_gemm_gflops(int n, int reps);

// Threads the GEMMs and the element-wise loops use (OpenMP); 0 keeps the current setting.
void set_num_threads(int n);
int num_threads();

}  // namespace core::train
