// ZeRO++'s block quantizers on the device (see quantize_cuda.hpp; the CPU reference and the byte layout
// are quantize.hpp's). Quantization runs one group of threads per quantization block: the block's absmax
// (max of |x|'s bit patterns), then the codes; a thread keeps its first 8 values in registers between the
// two passes, so a block of up to 2048 elements reads x once. The group is the thread block, or one warp
// where a quantization block needs at most 64 threads (blocks of up to 512 elements on the vector path):
// then a thread block quantizes 8 blocks and reduces with shuffles alone (at block 256, one block per
// thread block ran at half the device copy's bandwidth on an H200, one warp at 0.86-0.92 of it).
// Dequantization and the fused sum are element-wise in a grid-stride loop. The same source runs on the
// device and on the host SIMT emulator (tests/support/simt).
#include <cstdint>
#include <string>

#include "common/errors.hpp"
#include "kernels/device_utils.cuh"
#include "zero/quantize.hpp"
#include "zero/quantize_cuda.hpp"

namespace core::zero::device {
namespace {

namespace dev = kernels::dev;

constexpr int kUnit = 8;  // elements a thread moves per step on the vector path
constexpr int kMaxThreads = 256;
constexpr std::size_t kWarpGroupMaxThreads = 64;  // a quantization block needing at most this many: one warp

__device__ inline std::uint32_t magnitude_bits(float v) { return __float_as_uint(v) & 0x7fffffffu; }

// round-half-even(v * inv) as an int (a NaN gives 0, as the CPU reference's conversion leaves 0 in the low bits).
__device__ inline int code_of(float v, float inv) { return __float2int_rn(__fmul_rn(v, inv)); }

__device__ inline float low_nibble(std::uint32_t byte) { return float(int(byte << 28) >> 28); }
__device__ inline float high_nibble(std::uint32_t byte) { return float(int(byte << 24) >> 28); }

__device__ inline void load8(float (&v)[kUnit], const float* p) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ inline void store8(float* p, const float (&v)[kUnit]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

// Max over the warp; every lane gets it.
__device__ inline std::uint32_t warp_max(std::uint32_t v) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Max over the block (blockDim.x a multiple of 32); every thread gets it. `shared` holds 32 values.
__device__ inline std::uint32_t block_max(std::uint32_t v, std::uint32_t* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_max(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  return warp_max(lane < warps ? shared[lane] : 0u);
}

// Bits 8: codes are int8, one a byte. Bits 4: two nibbles a byte, element 2i low; an odd tail of the span
// leaves the last high nibble 0. Vec: block % 8 == 0 and the pointers aligned for 8 floats / 8 or 4 code bytes.
// WarpGroups: each warp quantizes block blockIdx.x * (blockDim.x / 32) + warp; else the thread block does
// block blockIdx.x.
template <int Bits, bool Vec, bool WarpGroups>
__global__ void quantize_kernel(const float* x, std::size_t n, std::size_t block, std::uint8_t* codes, float* scales) {
  __shared__ std::uint32_t partial[32];
  const unsigned group_threads = WarpGroups ? 32u : blockDim.x, t = WarpGroups ? threadIdx.x % 32 : threadIdx.x;
  const std::size_t q = WarpGroups ? std::size_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32 : blockIdx.x;
  const std::size_t base = q * block;
  if (WarpGroups && base >= n) return;  // the last thread block's spare warps (no barrier follows on this path)
  const std::size_t len = n - base < block ? n - base : block;
  const std::size_t vec_len = Vec ? len / kUnit * kUnit : 0;
  const std::size_t first = std::size_t(t) * kUnit, stride = std::size_t(group_threads) * kUnit;
  const float* xb = x + base;
  float kept[kUnit];  // this thread's first unit, read once
  std::uint32_t m = 0;
  if constexpr (Vec)
    for (std::size_t u = first; u < vec_len; u += stride) {
      float v[kUnit];
      load8(v, xb + u);
#pragma unroll
      for (int k = 0; k < kUnit; ++k) m = max(m, magnitude_bits(v[k]));
      if (u == first)
#pragma unroll
        for (int k = 0; k < kUnit; ++k) kept[k] = v[k];
    }
  for (std::size_t i = vec_len + t; i < len; i += group_threads) m = max(m, magnitude_bits(xb[i]));
  const float absmax = __uint_as_float(WarpGroups ? warp_max(m) : block_max(m, partial));
  constexpr float qmax = Bits == 8 ? 127.0f : 7.0f;
  const bool zero = absmax == 0.0f;
  const float inv = zero ? 0.0f : __fdiv_rn(qmax, absmax);  // a zero block: every code 0
  if (t == 0) scales[q] = zero ? 0.0f : __fdiv_rn(absmax, qmax);

  if constexpr (Vec)
    for (std::size_t u = first; u < vec_len; u += stride) {
      float v[kUnit];
      if (u == first) {
#pragma unroll
        for (int k = 0; k < kUnit; ++k) v[k] = kept[k];
      } else {
        load8(v, xb + u);
      }
      std::uint32_t lo = 0, hi = 0;
      if constexpr (Bits == 8) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          lo |= (std::uint32_t(code_of(v[k], inv)) & 0xffu) << (8 * k);
          hi |= (std::uint32_t(code_of(v[k + 4], inv)) & 0xffu) << (8 * k);
        }
        *reinterpret_cast<uint2*>(codes + base + u) = make_uint2(lo, hi);
      } else {
#pragma unroll
        for (int k = 0; k < kUnit; ++k) lo |= (std::uint32_t(code_of(v[k], inv)) & 0xfu) << (4 * k);
        *reinterpret_cast<std::uint32_t*>(codes + (base + u) / 2) = lo;
      }
    }
  if constexpr (Bits == 8) {
    for (std::size_t i = vec_len + t; i < len; i += group_threads)
      codes[base + i] = std::uint8_t(code_of(xb[i], inv) & 0xff);
  } else {
    std::uint8_t* out = codes + base / 2;  // base is even: blocks start on a byte
    for (std::size_t p = vec_len / 2 + t; p < len / 2; p += group_threads)
      out[p] = std::uint8_t((code_of(xb[2 * p], inv) & 0xf) | (code_of(xb[2 * p + 1], inv) & 0xf) << 4);
    if (len % 2 != 0 && t == 0) out[len / 2] = std::uint8_t(code_of(xb[len - 1], inv) & 0xf);
  }
}

// One code's value: int8 byte, or nibble `e % 2` of an int4 byte.
template <int Bits>
__device__ inline float code_value(const std::uint8_t* codes, std::size_t e) {
  if constexpr (Bits == 8) return float(static_cast<std::int8_t>(codes[e]));
  else return e % 2 == 0 ? low_nibble(codes[e / 2]) : high_nibble(codes[e / 2]);
}

// The 8 codes of the unit starting at element e (e % 8 == 0) as floats.
template <int Bits>
__device__ inline void unit_values(const std::uint8_t* codes, std::size_t e, float (&c)[kUnit]) {
  if constexpr (Bits == 8) {
    const uint2 w = *reinterpret_cast<const uint2*>(codes + e);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      c[k] = float(int(w.x << (24 - 8 * k)) >> 24);
      c[k + 4] = float(int(w.y << (24 - 8 * k)) >> 24);
    }
  } else {
    const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(codes + e / 2);
#pragma unroll
    for (int k = 0; k < kUnit; ++k) c[k] = float(int(w << (28 - 4 * k)) >> 28);
  }
}

// out[i] = (0 + sum_j code_j(i) * s_j) * multiplier over `inputs` spans (codes + j * code_stride bytes, scales + j *
// scale_stride); with `plain` (one input, no sum) out[i] = code(i) * s exactly as the CPU's dequantize.
template <int Bits, bool Vec>
__global__ void dequantize_kernel(const std::uint8_t* codes, std::size_t code_stride, const float* scales,
                                  std::size_t scale_stride, int inputs, std::size_t n, std::size_t block,
                                  float multiplier, bool plain, float* out) {
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t threads = std::size_t(gridDim.x) * blockDim.x;
  const std::size_t vec_n = Vec ? n / kUnit * kUnit : 0;
  if constexpr (Vec)
    for (std::size_t e = tid * kUnit; e < vec_n; e += threads * kUnit) {
      const std::size_t b = e / block;  // block % 8 == 0: the unit lies in one block
      float acc[kUnit] = {};
      for (int j = 0; j < inputs; ++j) {
        float c[kUnit];
        unit_values<Bits>(codes + j * code_stride, e, c);
        const float s = scales[j * scale_stride + b];
#pragma unroll
        for (int k = 0; k < kUnit; ++k) acc[k] = plain ? __fmul_rn(c[k], s) : __fadd_rn(acc[k], __fmul_rn(c[k], s));
      }
      if (!plain)
#pragma unroll
        for (int k = 0; k < kUnit; ++k) acc[k] = __fmul_rn(acc[k], multiplier);
      store8(out + e, acc);
    }
  for (std::size_t e = vec_n + tid; e < n; e += threads) {
    const std::size_t b = e / block;
    float acc = 0.0f;
    for (int j = 0; j < inputs; ++j) {
      const float y = __fmul_rn(code_value<Bits>(codes + j * code_stride, e), scales[j * scale_stride + b]);
      acc = plain ? y : __fadd_rn(acc, y);
    }
    out[e] = plain ? acc : __fmul_rn(acc, multiplier);
  }
}

bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

void require_even(std::size_t block) {
  if (block % 2 != 0) throw UsageError("int4 quantization needs an even block size, got " + std::to_string(block));
}

void require_block(std::size_t block) {
  if (block == 0) throw UsageError("quantization block size must be positive");
}

template <int Bits>
void quantize(const float* x, std::size_t n, std::size_t block, std::uint8_t* codes, float* scales, Stream stream) {
  require_block(block);
  if (n == 0) return;
  const bool vec = block % kUnit == 0 && aligned(x, 16) && aligned(codes, Bits == 8 ? 8 : 4);
  const std::size_t per_thread = vec ? kUnit : (Bits == 8 ? 1 : 2);
  const std::size_t want = (block + per_thread - 1) / per_thread, blocks = block_count(n, block);
  if (want <= kWarpGroupMaxThreads) {
    const dim3 grid(unsigned((blocks + kMaxThreads / 32 - 1) / (kMaxThreads / 32)));
    if (vec) dev::launch(quantize_kernel<Bits, true, true>, grid, kMaxThreads, 0, stream, x, n, block, codes, scales);
    else dev::launch(quantize_kernel<Bits, false, true>, grid, kMaxThreads, 0, stream, x, n, block, codes, scales);
    return;
  }
  const int threads = int(want >= kMaxThreads ? kMaxThreads : (want + 31) / 32 * 32);
  const dim3 grid{unsigned(blocks)};
  if (vec) dev::launch(quantize_kernel<Bits, true, false>, grid, threads, 0, stream, x, n, block, codes, scales);
  else dev::launch(quantize_kernel<Bits, false, false>, grid, threads, 0, stream, x, n, block, codes, scales);
}

template <int Bits>
void dequantize(const std::uint8_t* codes, std::size_t code_stride, const float* scales, std::size_t scale_stride,
                int inputs, std::size_t n, std::size_t block, float multiplier, bool plain, float* out, Stream stream) {
  require_block(block);
  if (n == 0) return;
  const bool vec = block % kUnit == 0 && aligned(out, 16) && aligned(codes, Bits == 8 ? 8 : 4) &&
                   code_stride % (Bits == 8 ? 8 : 4) == 0;
  const std::int64_t work = std::int64_t(vec ? n / kUnit + kUnit : n);
  dev::launch(vec ? dequantize_kernel<Bits, true> : dequantize_kernel<Bits, false>, dev::blocks_for(work, kMaxThreads),
              kMaxThreads, 0, stream, codes, code_stride, scales, scale_stride, inputs, n, block, multiplier, plain, out);
}

// out[i] = (accumulate ? out[i] : 0) + in[i] * multiplier, the product and the sum each rounded (no fma).
__global__ void add_scaled_kernel(float* out, const float* in, std::size_t n, float multiplier, bool accumulate) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float y = __fmul_rn(in[i], multiplier);
    out[i] = accumulate ? __fadd_rn(out[i], y) : y;
  }
}

}  // namespace

void add_scaled(float* out, const float* in, std::size_t n, float multiplier, bool accumulate, Stream stream) {
  if (n == 0) return;
  dev::launch(add_scaled_kernel, dev::blocks_for(std::int64_t(n), kMaxThreads), kMaxThreads, 0, stream, out, in, n,
              multiplier, accumulate);
}

void quantize_int8(const float* x, std::size_t n, std::size_t block, std::int8_t* codes, float* scales, Stream stream) {
  quantize<8>(x, n, block, reinterpret_cast<std::uint8_t*>(codes), scales, stream);
}

void dequantize_int8(const std::int8_t* codes, const float* scales, std::size_t n, std::size_t block, float* out,
                     Stream stream) {
  dequantize<8>(reinterpret_cast<const std::uint8_t*>(codes), 0, scales, 0, 1, n, block, 1.0f, true, out, stream);
}

void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* scales,
                   Stream stream) {
  require_even(block);
  quantize<4>(x, n, block, packed, scales, stream);
}

void dequantize_int4(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block, float* out,
                     Stream stream) {
  require_even(block);
  dequantize<4>(packed, 0, scales, 0, 1, n, block, 1.0f, true, out, stream);
}

void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                         std::size_t scales_stride, int inputs, std::size_t n, std::size_t block, float multiplier,
                         float* out, Stream stream) {
  require_even(block);
  if (inputs < 0) throw UsageError("dequantize_sum_int4: negative input count " + std::to_string(inputs));
  dequantize<4>(packed, packed_stride, scales, scales_stride, inputs, n, block, multiplier, false, out, stream);
}

}  // namespace core::zero::device
