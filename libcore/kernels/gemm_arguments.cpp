// The argument rules of gemm (gemm.hpp), apart from the cuBLASLt calls so that the tests' host
// emulation of gemm (tests/support/simt/emulated_blas.cpp) enforces the same ones.
#include <string>

#include "kernels/gemm.hpp"

namespace core::kernels {

void check_gemm_arguments(bool trans_a, bool trans_b, int M, int N, int K, int lda, int ldb, int ldc, float beta,
                          const GemmEpilogue& epilogue) {
  const bool ok = M > 0 && N > 0 && K > 0 && lda >= (trans_a ? M : K) && ldb >= (trans_b ? K : N) && ldc >= N;
  if (!ok)
    throw CudaError("gemm: bad shape M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" +
                    std::to_string(K) + " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) +
                    " ldc=" + std::to_string(ldc));
  if (epilogue.residual && (beta != 0.0f || epilogue.gelu))
    throw CudaError("gemm: a residual epilogue needs beta = 0 and no GELU");
}

}  // namespace core::kernels
