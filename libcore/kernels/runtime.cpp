// CUDA runtime helpers (runtime.hpp): error reporting with hints, device discovery, memory, and the
// cuBLAS/cuBLASLt handles. Compiled by the host compiler against the CUDA runtime headers.
#include <cstdio>
#include <string>

#include "kernels/cuda_check.cuh"
#include "kernels/device_bytes.hpp"

namespace core::kernels {
namespace {

const char* cuda_hint(cudaError_t err) {
  switch (err) {
    case cudaErrorMemoryAllocation:
      return "the GPU is out of memory: lower the batch size or sequence length, or free other GPU jobs";
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
      return "no usable GPU: check nvidia-smi and that the driver supports this CUDA version";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
      return "the binary has no code for this GPU: rebuild with CMAKE_CUDA_ARCHITECTURES set to its compute "
             "capability";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
      return "a kernel accessed memory out of bounds: run under compute-sanitizer to find it (the error may come "
             "from an earlier asynchronous launch)";
    case cudaErrorInvalidConfiguration:
      return "bad launch configuration (grid/block size or shared memory): a shape the kernel does not support";
    default:
      return "errors of asynchronous work surface at a later call: set CUDA_LAUNCH_BLOCKING=1 to locate it";
  }
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

const char* cublas_hint(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_INVALID_VALUE:
      return "the shapes, leading dimensions, alignment (16 bytes) or epilogue are not supported for these types";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the GPU is out of memory";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "no usable GPU or the handle was not created";
    default: return "set CUDA_LAUNCH_BLOCKING=1 and rerun to locate the failing call";
  }
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                  cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + "). hint: " + cuda_hint(err));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                  cublas_status_name(status) + ". hint: " + cublas_hint(status));
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return n;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1u << 30));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " + mem + ")";
}

void synchronize() { CUDA_CHECK(cudaDeviceSynchronize()); }

std::size_t device_memory_used() {
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total - free;
}

namespace detail {

void* device_alloc(std::size_t bytes) {
  void* p = nullptr;
  if (bytes) CUDA_CHECK(cudaMalloc(&p, bytes));
  count_device_alloc(p, bytes);
  return p;
}
void device_free(void* p) noexcept {
  count_device_free(p);
  if (p) cudaFree(p);
}
void copy_to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void copy_to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void device_zero(void* p, std::size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemset(p, 0, bytes));
}
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream stream) {
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}
void synchronize_stream(Stream stream) { CUDA_CHECK(cudaStreamSynchronize(stream)); }
void zero_on_device(void* p, std::size_t bytes, Stream stream) {
  if (bytes) CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream));
}
Stream stream_create() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
void stream_destroy(Stream stream) noexcept {
  if (stream) cudaStreamDestroy(stream);
}
EventHandle event_create() {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}
void event_destroy(EventHandle event) noexcept {
  if (event) cudaEventDestroy(event);
}
void event_record(EventHandle event, Stream stream) { CUDA_CHECK(cudaEventRecord(event, stream)); }
void stream_wait_event(Stream stream, EventHandle event) { CUDA_CHECK(cudaStreamWaitEvent(stream, event, 0)); }

}  // namespace detail

Blas::Blas() : impl_(std::make_unique<Impl>()) {
  CUBLAS_CHECK(cublasCreate(&impl_->blas));
  CUBLAS_CHECK(cublasLtCreate(&impl_->lt));
  CUDA_CHECK(cudaMalloc(&impl_->workspace, impl_->workspace_bytes));
  // cuBLAS (the gradient norms) shares the workspace instead of allocating its own.
  CUBLAS_CHECK(cublasSetWorkspace(impl_->blas, impl_->workspace, impl_->workspace_bytes));
}

Blas::~Blas() = default;

Blas::Impl::~Impl() {
  if (lt) cublasLtDestroy(lt);
  if (blas) cublasDestroy(blas);
  if (workspace) cudaFree(workspace);
}

}  // namespace core::kernels
