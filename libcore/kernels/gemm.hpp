// bf16 matrix products on the GPU through cuBLASLt with fp32 accumulation, in the row-major
// convention of core::train's gemm (train/gemm.hpp, the CPU reference):
//   C[M, N] = alpha op(A) op(B) + beta C, op(X) = X or X^T, A [M, K] (trans_a: [K, M]) with row
//   stride lda, B [K, N] (trans_b: [N, K]) with row stride ldb, C with row stride ldc.
// A linear layer y = x W^T + b with W [OC, C] is gemm(false, true, N, OC, C, 1, x, C, W, C, 0, y, OC, {b}).
// Only available when the build has CUDA (TOOLKIT_HAVE_CUDA).
#pragma once
#include <cstdint>

#include "kernels/bf16.hpp"
#include "kernels/runtime.hpp"

namespace core::kernels {

// Fused epilogue of a bf16-output product: + bias[N] per row, then GELU (tanh approximation, as
// cuBLASLt computes it), or + residual (a [M, N] matrix with row stride ldc, read before the output
// is written, so it may be the output itself; needs beta = 0 and no GELU). With gelu, pre_gelu (when
// not null) receives the pre-activation values with row stride ldc, for the backward pass.
// cuBLASLt wants ldc a multiple of 8 for the aux output.
struct GemmEpilogue {
  const bf16* bias = nullptr;
  bool gelu = false;
  bf16* pre_gelu = nullptr;
  const bf16* residual = nullptr;
};

// Throws CudaError for arguments gemm never accepts: a shape or leading dimension out of range, a
// residual with beta != 0 or with GELU. (Host code, shared by the cuBLASLt path and the tests' host
// emulation of it.)
void check_gemm_arguments(bool trans_a, bool trans_b, int M, int N, int K, int lda, int ldb, int ldc, float beta,
                          const GemmEpilogue& epilogue);

// bf16 output (activations).
void gemm(Blas& blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda,
          const bf16* B, int ldb, float beta, bf16* C, int ldc, const GemmEpilogue& epilogue = {},
          Stream stream = nullptr);
// fp32 output (parameter gradients, accumulated with beta = 1).
void gemm(Blas& blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda,
          const bf16* B, int ldb, float beta, float* C, int ldc, Stream stream = nullptr);

}  // namespace core::kernels

namespace core::kernels {

// The device's bf16 matrix-product rate through this module's gemm (cuBLASLt, fp32 accumulation): an
// n x n x n product on random data in [-1, 1), one warm-up, then the best of `reps` timed products
// (CUDA events), in TFLOP/s (2 n^3 FLOPs per product). MFU figures divide by this.
double measure_gemm_tflops(Blas& blas, int n, int reps);

// Euclidean norm of n fp32 values (cublasSnrm2, fp32); waits for the result.
float l2_norm(Blas& blas, const float* x, std::int64_t n, Stream stream = nullptr);

}  // namespace core::kernels
