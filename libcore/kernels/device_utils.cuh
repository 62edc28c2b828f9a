// Device-side helpers shared by the .cu files: bf16 views of the host type, kernel launches, dynamic
// shared memory and stream-ordered scratch memory, warp and block reductions, launch-size arithmetic,
// and the GELU formulas. Include only from .cu files. With TOOLKIT_SIMT_EMULATION (the kernel tests'
// host build, tests/support/simt/simt.hpp included first) launches, shared and scratch memory go to
// the host emulator instead of the device; everything else is the same source.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>
#include <new>

#include "kernels/bf16.hpp"
#include "kernels/cuda_check.cuh"

namespace core::kernels::dev {

using bf = __nv_bfloat16;
static_assert(sizeof(bf) == sizeof(bf16));

inline bf* cast(bf16* p) { return reinterpret_cast<bf*>(p); }
inline const bf* cast(const bf16* p) { return reinterpret_cast<const bf*>(p); }

#ifdef TOOLKIT_SIMT_EMULATION
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, Stream, Args... args) {
  simt::launch(kernel, grid, block, smem, args...);
}
inline unsigned char* dynamic_smem() { return simt::dynamic_shared_memory(); }
inline void* scratch_alloc(std::size_t bytes, Stream) {
  void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(256));
  std::memset(p, 0xFF, bytes);  // unwritten scratch reads as NaN
  return p;
}
inline void scratch_free(void* p, Stream) noexcept { ::operator delete(p, std::align_val_t(256)); }
#else
// kernel<<<grid, block, smem, stream>>>(args...), opting in to more than 48 KiB of dynamic shared
// memory when asked, and reporting a bad configuration at the launch site.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, Stream stream, Args... args) {
  if (smem > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  kernel<<<grid, block, smem, stream>>>(args...);
  CUDA_CHECK_LAUNCH();
}
// The block's dynamic shared memory (the launch's smem bytes), 128-byte aligned.
__device__ inline unsigned char* dynamic_smem() {
  extern __shared__ __align__(128) unsigned char smem[];
  return smem;
}
inline void* scratch_alloc(std::size_t bytes, Stream stream) {
  void* p = nullptr;
  CUDA_CHECK(cudaMallocAsync(&p, bytes, stream));
  return p;
}
inline void scratch_free(void* p, Stream stream) noexcept { cudaFreeAsync(p, stream); }
#endif

// Stream-ordered scratch memory (cudaMallocAsync), freed in stream order at the end of its scope.
class Scratch {
 public:
  Scratch(std::size_t bytes, Stream stream) : p_(scratch_alloc(bytes, stream)), stream_(stream) {}
  ~Scratch() { scratch_free(p_, stream_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_;
  Stream stream_;
};

inline unsigned blocks_for(std::int64_t n, int threads, std::int64_t cap = 65535LL * 32) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > cap ? cap : b));
}

// Eight consecutive bf16 values (16-byte aligned) to and from fp32 registers, in one 16-byte access.
__device__ inline void load8(float (&v)[8], const bf* p) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x, v[2 * i + 1] = f.y;
  }
}
__device__ inline void store8(bf* p, const float (&v)[8]) {
  uint4 u;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `shared` holds 32 floats; the call ends with a barrier, so it may be reused right after.
__device__ inline float block_sum(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float total = lane < warps ? shared[lane] : 0.0f;
  total = warp_sum(total);
  __syncthreads();
  return total;
}
__device__ inline float block_max(float v, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = lane < warps ? shared[lane] : -INFINITY;
  m = warp_max(m);
  __syncthreads();
  return m;
}

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)

__device__ inline float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
}
__device__ inline float gelu_grad(float x) {
  const float th = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
  const float du = kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}

}  // namespace core::kernels::dev
