// bf16 GEMM through cuBLASLt with fp32 accumulation. Row-major products
// are computed as their column-major transposes: C^T = op(B)^T op(A)^T, so cuBLAS sees the memory of
// B as its first operand and the memory of A as its second, with m = N and n = M.
#include "kernels/gemm.hpp"

#include <algorithm>
#include <vector>

#include "common/rng.hpp"
#include "kernels/cuda_check.cuh"

namespace core::kernels {
namespace {

// Owns the cuBLASLt descriptors of one call.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

void lt_gemm(Blas& blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda,
             const bf16* B, int ldb, float beta, void* C, cudaDataType_t c_type, int ldc, const GemmEpilogue& ep,
             Stream stream) {
  check_gemm_arguments(trans_a, trans_b, M, N, K, lda, ldb, ldc, beta, ep);
  // cuBLASLt computes D = alpha op(A) op(B) + beta C (+ epilogue); a residual is C with beta = 1.
  const void* c_in = ep.residual ? static_cast<const void*>(ep.residual) : C;
  if (ep.residual) beta = 1.0f;
  auto& impl = blas.impl();
  LtCall call;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_first = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;   // memory of B
  const cublasOperation_t op_second = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // memory of A
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));

  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (ep.gelu && ep.pre_gelu) epilogue = ep.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (ep.gelu) epilogue = ep.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else if (ep.bias) epilogue = CUBLASLT_EPILOGUE_BIAS;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  if (ep.bias) {
    const cudaDataType_t bias_type = CUDA_R_16BF;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                sizeof bias_type));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ep.bias, sizeof ep.bias));
  }
  if (ep.gelu && ep.pre_gelu) {
    const std::int64_t aux_ld = ldc;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &ep.pre_gelu,
                                                sizeof ep.pre_gelu));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
  }

  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.a, CUDA_R_16BF, trans_b ? K : N, trans_b ? N : K, ldb));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.b, CUDA_R_16BF, trans_a ? M : K, trans_a ? K : M, lda));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.c, c_type, N, M, ldc));

  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&call.pref));
  const std::uint64_t ws = impl.workspace_bytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(call.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                    sizeof ws));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(impl.lt, call.op, call.a, call.b, call.c, call.c, call.pref, 1,
                                              &heuristic, &found));
  if (found == 0)
    throw CudaError("gemm: cuBLASLt has no algorithm for M=" + std::to_string(M) + " N=" + std::to_string(N) +
                    " K=" + std::to_string(K) + " with this epilogue. hint: leading dimensions and pointers must be "
                    "16-byte aligned (multiples of 8 bf16 elements)");
  CUBLAS_CHECK(cublasLtMatmul(impl.lt, call.op, &alpha, B, call.a, A, call.b, &beta, c_in, call.c, C, call.c,
                              &heuristic.algo, impl.workspace, impl.workspace_bytes, stream));
}

}  // namespace

void gemm(Blas& blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda,
          const bf16* B, int ldb, float beta, bf16* C, int ldc, const GemmEpilogue& epilogue, Stream stream) {
  lt_gemm(blas, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, CUDA_R_16BF, ldc, epilogue, stream);
}

void gemm(Blas& blas, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const bf16* A, int lda,
          const bf16* B, int ldb, float beta, float* C, int ldc, Stream stream) {
  lt_gemm(blas, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, CUDA_R_32F, ldc, {}, stream);
}

double measure_gemm_tflops(Blas& blas, int n, int reps) {
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  std::vector<bf16> host(nn);
  Rng rng(2024);
  for (bf16& x : host) x = to_bf16(static_cast<float>(rng.uniform(-1.0, 1.0)));
  const DeviceBuffer<bf16> a{std::span<const bf16>(host)}, b{std::span<const bf16>(host)};
  DeviceBuffer<bf16> c(nn);
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  float best_ms = 0.0f;
  for (int r = 0; r <= reps; ++r) {  // r = 0 is the warm-up
    CUDA_CHECK(cudaEventRecord(start));
    gemm(blas, false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r > 0 && (best_ms == 0.0f || ms < best_ms)) best_ms = ms;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 2.0 * n * double(n) * n / (best_ms * 1e-3) / 1e12;
}

float l2_norm(Blas& blas, const float* x, std::int64_t n, Stream stream) {
  if (n <= 0) return 0.0f;
  auto& impl = blas.impl();
  CUBLAS_CHECK(cublasSetStream(impl.blas, stream));
  float result = 0.0f;
  CUBLAS_CHECK(cublasSnrm2_64(impl.blas, n, x, 1, &result));  // host pointer mode: synchronous
  return result;
}

}  // namespace core::kernels
