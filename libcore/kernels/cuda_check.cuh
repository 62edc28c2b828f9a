// Checked CUDA and cuBLAS calls for .cu files and the CUDA host sources (includes CUDA headers):
//   CUDA_CHECK(cudaMalloc(&p, n));   CUBLAS_CHECK(cublasLtMatmul(...));   CUDA_CHECK_LAUNCH();
// A failure throws CudaError naming the call, file:line, the error and a hint at the usual cause.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/runtime.hpp"

namespace core::kernels {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

inline void cuda_check(cudaError_t err, const char* call, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda_error(err, call, file, line);
}
inline void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

// The cuBLAS handle, cuBLASLt handle and workspace behind Blas.
struct Blas::Impl {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 32u << 20;
  ~Impl();  // releases whatever the constructor got before a failure
};

}  // namespace core::kernels

#define CUDA_CHECK(call) ::core::kernels::cuda_check((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) ::core::kernels::cublas_check((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports launch-configuration errors at the launch site.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
