// Host emulation of the CUDA execution model that core::kernels' kernels use, so that their tests
// (tests/gpu/kernels_gpu_test.cpp) also run where no device answers, e.g. in CI. A kernel's .cu file
// is compiled by the host compiler after this header (tests/gpu/emulated/*.cpp, with
// TOOLKIT_SIMT_EMULATION defined): every thread of a block is a fiber on one OS thread that runs
// alone until it reaches a barrier (__syncthreads, __syncwarp or a warp collective), then the next
// one runs (in index order, reversed in odd-numbered blocks); blocks run one after another.
//
// What this catches that a plain host port would not: a thread that reads shared memory another
// thread writes without a barrier between them reads it unwritten, in one of the two orders (each
// fiber runs as far as it can alone); a barrier some threads never reach (deadlock, reported with the waiting threads); a shuffle
// reading a lane that exited or is outside its mask, warp collectives with masks that disagree,
// mma.sync / ldmatrix with lanes of the warp exited; uninitialised shared or device
// memory (filled with 0xFF bytes: NaN in fp32 and bf16); and, since the tests built on it are
// compiled with AddressSanitizer (fiber switches announced to it), reads and writes past the end of
// a device buffer or of shared memory, reported with the kernel's name, as compute-sanitizer would. Warp collectives follow the CUDA
// programming guide (__shfl_*_sync), WMMA fragments are held one element in 32 per lane for
// accumulators (any map is valid for code that uses only the wmma API), and mma.sync / ldmatrix
// (simt_mma.hpp) follow the PTX ISA's fragment layouts. Not modelled: timing, memory ordering
// beyond barriers, coalescing, bank conflicts, register and shared-memory limits.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

// CUDA's built-in variables, set by the scheduler for the fiber that runs.
inline uint3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;

namespace simt {

// A kernel broke a rule of the execution model (deadlock, bad collective) or the launch is invalid.
struct EmulationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs thread_body once per thread of every block of the grid, with smem_bytes of dynamic shared
// memory per block; throws EmulationError when a kernel breaks a rule.
void run_grid(dim3 grid, dim3 block, std::size_t smem_bytes, const std::function<void()>& thread_body);

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem_bytes, Args... args) {
  run_grid(grid, block, smem_bytes, [&] { kernel(args...); });
}

// For the running thread.
unsigned char* dynamic_shared_memory();
int lane_id();
void sync_block();
void sync_warp(unsigned mask);
// A warp collective in two halves: share() stores `bytes` of this lane's data, waits for the lanes
// of mask that have not exited and returns the warp's slots (lane i's data at i * kSlotBytes);
// release() waits until every one of them has read them. In between, took_part(lane) says whether
// that lane's slot holds its data of this collective (a lane outside the mask or exited does not).
constexpr std::size_t kSlotBytes = 64;
const unsigned char* share(unsigned mask, const void* mine, std::size_t bytes);
bool took_part(int lane);
void release(unsigned mask);
// Ends the kernel with an EmulationError naming the running thread.
[[noreturn]] void fail(const std::string& what);

// The width argument of the shuffles: a power of two in [1, 32] (CUDA programming guide, warp
// shuffle functions: otherwise the results are undefined).
inline void check_width(int width) {
  if (width < 1 || width > 32 || (width & (width - 1)) != 0)
    fail("shuffle width " + std::to_string(width) + " is not a power of two in [1, 32]");
}

// The shuffles' value of `value` from lane src. Reading a lane outside the mask or one that has
// exited is undefined on the device (CUDA programming guide, warp shuffle functions; PTX ISA,
// shfl.sync): an error here.
template <class T>
T shuffle_from(unsigned mask, T value, int src) {
  static_assert(sizeof(T) <= kSlotBytes && std::is_trivially_copyable_v<T>);
  const unsigned char* slots = share(mask, &value, sizeof value);
  if (!(mask >> src & 1u)) fail("shuffle reads lane " + std::to_string(src) + ", outside the mask");
  if (!took_part(src)) fail("shuffle reads lane " + std::to_string(src) + ", which has exited");
  T out;
  std::memcpy(&out, slots + src * kSlotBytes, sizeof out);
  release(mask);
  return out;
}

}  // namespace simt

// Device intrinsics the kernels call, on the host.
inline void __syncthreads() { simt::sync_block(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { simt::sync_warp(mask); }
// Source lanes as PTX's shfl.sync computes them for CUDA's width (c = ((32 - width) << 8) | 0x1f):
// only bits 4..0 of laneMask / srcLane count; a butterfly partner past the end of the caller's group
// of `width` lanes gives the caller's own value (later groups), one in an earlier group is read;
// __shfl_sync reads lane srcLane mod width of the caller's group.
template <class T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  simt::check_width(width);
  const int lane = simt::lane_id();
  const int src = lane ^ (lane_mask & 31);
  return simt::shuffle_from(mask, value, src / width > lane / width ? lane : src);
}
template <class T>
T __shfl_sync(unsigned mask, T value, int src_lane, int width = 32) {
  simt::check_width(width);
  const int lane = simt::lane_id();
  return simt::shuffle_from(mask, value, lane / width * width + (src_lane & (width - 1)));
}
// The fast intrinsics as nvcc (13.0, sm_80, without -use_fast_math) lowers them: __expf(x) =
// ex2.approx.f32(x * 0f3FB8AA3B) and __logf(x) = lg2.approx.f32(x) * 0f3F317218, each step rounded
// to fp32 (the rounding of the product x * log2(e) is what makes __expf's error grow with |x|);
// ex2, lg2 and rsqrt themselves are exact here, approximate (a few ulp) on the device. __fdividef is
// x / y except for 2^126 < |y| < 2^128: 0 for finite x, NaN for infinite x (crt/device_functions.h).
inline float __expf(float x) { return std::exp2(x * 0x1.715476p+0f); }
inline float __logf(float x) { return std::log2(x) * 0x1.62e430p-1f; }
inline float __fdividef(float x, float y) {
  if (std::fabs(y) > 0x1p126f && std::isfinite(y)) return std::isinf(x) ? NAN : 0.0f;
  return x / y;
}
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
// __dp4a(a, b, c) (sm_61+): c plus the products of the four signed bytes of a with those of b (int32,
// wrapping as the device's integer adds do).
inline int __dp4a(int a, int b, int c) {
  std::uint32_t sum = static_cast<std::uint32_t>(c);
  for (int i = 0; i < 4; ++i)
    sum += static_cast<std::uint32_t>(static_cast<std::int8_t>(a >> 8 * i) * static_cast<std::int8_t>(b >> 8 * i));
  return static_cast<int>(sum);
}
// Bit casts, and the correctly rounded operations that nvcc never fuses into an FMA: each result goes
// through a volatile so that the host compiler cannot contract it either.
inline unsigned __float_as_uint(float x) {
  unsigned u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float __uint_as_float(unsigned u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __fadd_rn(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline float __fdiv_rn(float a, float b) {
  volatile float r = a / b;
  return r;
}
// cvt.rni.s32.f32 (PTX ISA): round to nearest even, NaN gives 0, out of range saturates.
inline int __float2int_rn(float x) {
  if (std::isnan(x)) return 0;
  const float r = std::nearbyint(x);
  if (r >= 0x1p31f) return 2147483647;
  if (r < -0x1p31f) return -2147483647 - 1;
  return static_cast<int>(r);
}
using std::max;
using std::min;

// Block-scope __shared__ arrays become function statics: one copy, shared by the fibers of the
// block that runs (blocks run one at a time). Dynamic shared memory: dev::dynamic_smem().
#undef __shared__
#define __shared__ static
#undef __launch_bounds__
#define __launch_bounds__(...)

#include "simt_mma.hpp"
#include "simt_wmma.hpp"
