// Multi-head attention on the GPU (ops.hpp), fused in the manner of FlashAttention-2 (Dao 2023):
// the T x T scores never reach global memory. Forward: one block per (64 queries, head, sequence);
// each of its 4 warps owns 16 query rows, walks the key/value tiles of 64 with an online softmax
// (running max m and sum l, Milakov & Gimelshein 2018), and writes out and lse = m + log l.
// Backward recomputes the probabilities P = exp(s - lse) tile by tile, with D = rowsum(dO * O):
//   dV = P^T dO,  dS = P * (dO V^T - D),  dK = scale dS^T Q,  dQ = scale dS K,
// in two kernels (one per key tile for dK/dV, one per query tile for dQ) so that every gradient is
// summed by one block in a fixed order: no atomics, deterministic. Products are bf16 tensor-core
// WMMA 16x16x16 fragments with fp32 accumulation; softmax arithmetic is fp32. q, k, v are read in
// place from the packed qkv rows and gradients written in place into dqkv: no head transposes.
#include <mma.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/device_utils.cuh"
#include "kernels/ops.hpp"

namespace core::kernels {
namespace {

using dev::bf;
namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;  // rows of a block's own tile, and of each tile it walks over
constexpr int kWarps = 4;  // each warp owns kRows rows of the block's tile
constexpr int kRows = kTile / kWarps;
constexpr int kThreads = kWarps * 32;
static_assert(kRows == 16, "one WMMA fragment of rows per warp");

// Shared-memory strides (elements), padded against bank conflicts; WMMA needs multiples of 8
// (bf16) and 4 (fp32) and 32-byte aligned fragment pointers, which these keep.
template <int HD>
struct Layout {
  static constexpr int ld = HD + 8;                          // a bf16 tile row (q, k, v, dO)
  static constexpr int sld = kTile + 4;                      // an fp32 score row
  static constexpr int pld = kTile + 8;                      // a bf16 probability row
  static constexpr int prod_ld = HD + 4;                        // an fp32 output-product row
  static constexpr int buf_ld = sld > prod_ld ? sld : prod_ld;     // per-warp fp32 buffer holds either
  static constexpr std::size_t tile_bytes = sizeof(bf) * kTile * ld;
  static constexpr std::size_t fbuf_bytes = sizeof(float) * kRows * buf_ld;  // per warp
  static constexpr std::size_t pbuf_bytes = sizeof(bf) * kRows * pld;        // per warp
};

struct Problem {
  const bf* qkv;
  const std::uint8_t* key_mask;  // [B*T] or null
  bool causal;
  int B, T, C, NH;
  float scale;  // 1 / sqrt(head size)
  __device__ std::int64_t qkv_row(int b, int t) const { return (static_cast<std::int64_t>(b) * T + t) * 3 * C; }
  __device__ std::int64_t out_row(int b, int t) const { return (static_cast<std::int64_t>(b) * T + t) * C; }
  __device__ std::int64_t stat(int b, int h, int t) const { return (static_cast<std::int64_t>(b) * NH + h) * T + t; }
  // Query t may attend to key j (both inside the sequence).
  __device__ bool visible(int b, int t, int j) const {
    return t < T && j < T && (!causal || j <= t) && (!key_mask || key_mask[static_cast<std::int64_t>(b) * T + j]);
  }
};

// Copies rows [0, kTile) of a head's slice (HD columns from src, row stride src_ld) into a shared
// tile; rows at or past `valid` are zero. 16-byte loads.
template <int HD>
__device__ void load_tile(bf* dst, const bf* src, std::int64_t src_ld, int valid) {
  constexpr int chunks = HD / 8;
  for (int i = threadIdx.x; i < kTile * chunks; i += kThreads) {
    const int r = i / chunks, c = (i % chunks) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < valid) v = *reinterpret_cast<const uint4*>(src + r * src_ld + c);
    *reinterpret_cast<uint4*>(dst + r * Layout<HD>::ld + c) = v;
  }
}

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf, wmma::row_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf, wmma::col_major>;
using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// c[16 x 64] = a[16 x K] b[64 x K]^T (a, b row-major bf16; c row-major fp32), one warp.
template <int K>
__device__ void warp_abt(float* c, int ldc, const bf* a, int lda, const bf* b, int ldb) {
#pragma unroll
  for (int n = 0; n < kTile / 16; ++n) {
    Acc acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int k = 0; k < K / 16; ++k) {
      FragA fa;
      FragBCol fb;
      wmma::load_matrix_sync(fa, a + k * 16, lda);
      wmma::load_matrix_sync(fb, b + n * 16 * ldb + k * 16, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + n * 16, acc, ldc, wmma::mem_row_major);
  }
}

// acc[16 x N] += a[16 x 64] b[64 x N] (row-major bf16), one warp; acc holds N / 16 fragments.
template <int N>
__device__ void warp_ab_acc(Acc (&acc)[N / 16], const bf* a, int lda, const bf* b, int ldb) {
#pragma unroll
  for (int k = 0; k < kTile / 16; ++k) {
    FragA fa;
    wmma::load_matrix_sync(fa, a + k * 16, lda);
#pragma unroll
    for (int n = 0; n < N / 16; ++n) {
      FragBRow fb;
      wmma::load_matrix_sync(fb, b + k * 16 * ldb + n * 16, ldb);
      wmma::mma_sync(acc[n], fa, fb, acc[n]);
    }
  }
}

template <int N>
__device__ void zero(Acc (&acc)[N / 16]) {
#pragma unroll
  for (int n = 0; n < N / 16; ++n) wmma::fill_fragment(acc[n], 0.0f);
}

// Element-wise work on a warp's 16 x 64 tile: lane handles row lane / 2 and 32 of the columns of
// its half; columns are visited in a lane-dependent rotation so that the 32 lanes hit 32 different
// shared-memory banks (row stride 68 floats: bank = 5 r + 16 half + c mod 32, all distinct).
struct LaneCols {
  int r, half, rot;
  __device__ LaneCols() : r((threadIdx.x % 32) / 2), half(threadIdx.x % 2), rot((r + 16 * half) & 31) {}
  __device__ int col(int c) const { return half * 32 + ((c + rot) & 31); }  // c = 0..31
};

template <int HD>
__global__ void __launch_bounds__(kThreads) flash_forward_kernel(bf* out, float* lse, Problem p) {
  using L = Layout<HD>;
  unsigned char* smem = dev::dynamic_smem();
  const int warp = threadIdx.x / 32;
  bf* q_s = reinterpret_cast<bf*>(smem);
  bf* k_s = q_s + kTile * L::ld;
  bf* v_s = k_s + kTile * L::ld;
  float* buf = reinterpret_cast<float*>(v_s + kTile * L::ld) + warp * kRows * L::buf_ld;
  bf* p_s = reinterpret_cast<bf*>(reinterpret_cast<float*>(v_s + kTile * L::ld) + kWarps * kRows * L::buf_ld) +
            warp * kRows * L::pld;

  // Under a causal mask the last query tiles see the most keys: they are scheduled first (tiles_grid).
  const int q0 = (gridDim.z - 1 - blockIdx.z) * kTile, h = blockIdx.y, b = blockIdx.x, col0 = h * HD;
  load_tile<HD>(q_s, p.qkv + p.qkv_row(b, q0) + col0, 3 * p.C, p.T - q0);
  const LaneCols lc;
  const int t = q0 + warp * kRows + lc.r;
  constexpr int kHalf = HD / 2;  // output columns per lane
  float m = -INFINITY, l = 0.0f, o[kHalf];
#pragma unroll
  for (int c = 0; c < kHalf; ++c) o[c] = 0.0f;

  const int kv_end = p.causal ? min(p.T, q0 + kTile) : p.T;
  for (int k0 = 0; k0 < kv_end; k0 += kTile) {
    __syncthreads();  // every warp is done with the previous k, v tiles
    load_tile<HD>(k_s, p.qkv + p.qkv_row(b, k0) + p.C + col0, 3 * p.C, p.T - k0);
    load_tile<HD>(v_s, p.qkv + p.qkv_row(b, k0) + 2 * p.C + col0, 3 * p.C, p.T - k0);
    __syncthreads();
    warp_abt<HD>(buf, L::sld, q_s + warp * kRows * L::ld, L::ld, k_s, L::ld);  // S = Q K^T
    __syncwarp();
    float s[32], tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const int j = lc.col(c);
      s[c] = p.visible(b, t, k0 + j) ? buf[lc.r * L::sld + j] * p.scale : -INFINITY;
      tile_max = fmaxf(tile_max, s[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float alpha = m == -INFINITY ? 0.0f : __expf(m - m_new);  // o and l are 0 while m is -inf
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < 32; ++c) {
      const float pc = s[c] == -INFINITY ? 0.0f : __expf(s[c] - m_new);
      sum += pc;
      p_s[lc.r * L::pld + lc.col(c)] = __float2bfloat16(pc);
    }
    l = l * alpha + sum + __shfl_xor_sync(0xffffffffu, sum, 1);
    m = m_new;
    __syncwarp();
    Acc pv[HD / 16];
    zero<HD>(pv);
    warp_ab_acc<HD>(pv, p_s, L::pld, v_s, L::ld);  // P V
#pragma unroll
    for (int n = 0; n < HD / 16; ++n) wmma::store_matrix_sync(buf + n * 16, pv[n], L::prod_ld, wmma::mem_row_major);
    __syncwarp();
#pragma unroll
    for (int c = 0; c < kHalf; ++c) o[c] = o[c] * alpha + buf[lc.r * L::prod_ld + lc.half * kHalf + (c + lc.rot) % kHalf];
    __syncwarp();  // the buffer is overwritten by the next tile's scores
  }
  if (t >= p.T) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a row with no visible key gives 0
  bf* orow = out + p.out_row(b, t) + col0 + lc.half * kHalf;
#pragma unroll
  for (int c = 0; c < kHalf; ++c) orow[(c + lc.rot) % kHalf] = __float2bfloat16(o[c] * inv);
  if (lc.half == 0) lse[p.stat(b, h, t)] = l > 0.0f ? m + logf(l) : INFINITY;
}

// D[b, h, t] = sum over the head's columns of dO * O. One thread per 8 columns (16-byte loads);
// the HD / 8 threads of a head sum with shuffles (groups of 2..16 aligned inside a warp).
template <int HD>
__global__ void row_dot_kernel(float* d, const bf* dout, const bf* out, Problem p) {
  constexpr int group = HD / 8;
  const std::int64_t chunks_per_row = p.C / 8, n = static_cast<std::int64_t>(p.B) * p.T * chunks_per_row;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  float s = 0.0f;
  if (i < n) {
    float a[8], o[8];
    dev::load8(a, dout + i * 8), dev::load8(o, out + i * 8);
#pragma unroll
    for (int e = 0; e < 8; ++e) s += a[e] * o[e];
  }
#pragma unroll
  for (int off = group / 2; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (i < n && i % group == 0) {
    const std::int64_t row = i / chunks_per_row;
    const int chunk = static_cast<int>(i % chunks_per_row);
    d[p.stat(static_cast<int>(row / p.T), chunk / group, static_cast<int>(row % p.T))] = s;
  }
}

// Shared memory of both backward kernels: four tiles, then per warp an fp32 score buffer (which
// also stages the final 16 x HD gradient rows), an fp32 dP buffer and two bf16 probability buffers.
template <int HD>
struct BackwardSmem {
  using L = Layout<HD>;
  bf *tile0, *tile1, *tile2, *tile3;
  float *s, *dp;
  bf *pb, *dsb;
  __device__ explicit BackwardSmem(unsigned char* base) {
    const int warp = threadIdx.x / 32;
    tile0 = reinterpret_cast<bf*>(base);
    tile1 = tile0 + kTile * L::ld;
    tile2 = tile1 + kTile * L::ld;
    tile3 = tile2 + kTile * L::ld;
    float* f = reinterpret_cast<float*>(tile3 + kTile * L::ld);
    s = f + warp * kRows * L::buf_ld;
    float* g = f + kWarps * kRows * L::buf_ld;
    dp = g + warp * kRows * L::sld;
    bf* pbase = reinterpret_cast<bf*>(g + kWarps * kRows * L::sld);
    pb = pbase + warp * kRows * L::pld;
    dsb = pbase + (kWarps + warp) * kRows * L::pld;
  }
  static constexpr std::size_t bytes() {
    return 4 * L::tile_bytes + kWarps * (L::fbuf_bytes + sizeof(float) * kRows * L::sld + 2 * L::pbuf_bytes);
  }
};

// Writes a warp's 16 x HD fp32 accumulators, times `scale`, as bf16 into rows [row0, row0 + 16) of
// dst (row stride ld), through the warp's fp32 buffer (16 x Layout::buf_ld); rows at or past `valid` are skipped.
template <int HD>
__device__ void store_rows(bf* dst, std::int64_t ld, Acc (&acc)[HD / 16], float scale, float* buf, int valid) {
  constexpr int bld = Layout<HD>::prod_ld;
#pragma unroll
  for (int n = 0; n < HD / 16; ++n) wmma::store_matrix_sync(buf + n * 16, acc[n], bld, wmma::mem_row_major);
  __syncwarp();
  const int lane = threadIdx.x % 32;
  for (int i = lane; i < kRows * HD; i += 32) {
    const int r = i / HD, c = i % HD;
    if (r < valid) dst[r * ld + c] = __float2bfloat16(buf[r * bld + c] * scale);
  }
  __syncwarp();
}

// dK, dV for one key tile: walks the query tiles that can see it.
template <int HD>
__global__ void __launch_bounds__(kThreads) flash_backward_dkdv_kernel(bf* dqkv, const bf* dout, const float* lse,
                                                                         const float* dsum, Problem p) {
  using L = Layout<HD>;
  unsigned char* smem = dev::dynamic_smem();
  const BackwardSmem<HD> sm(smem);
  bf *k_s = sm.tile0, *v_s = sm.tile1, *q_s = sm.tile2, *do_s = sm.tile3;
  __shared__ float lse_s[kTile], d_s[kTile];
  const int warp = threadIdx.x / 32;
  const int j0 = blockIdx.z * kTile, h = blockIdx.y, b = blockIdx.x, col0 = h * HD;  // longest first
  load_tile<HD>(k_s, p.qkv + p.qkv_row(b, j0) + p.C + col0, 3 * p.C, p.T - j0);
  load_tile<HD>(v_s, p.qkv + p.qkv_row(b, j0) + 2 * p.C + col0, 3 * p.C, p.T - j0);
  const LaneCols lc;
  const int j = j0 + warp * kRows + lc.r;  // this lane's key
  Acc dk[HD / 16], dv[HD / 16];
  zero<HD>(dk);
  zero<HD>(dv);
  for (int t0 = p.causal ? j0 : 0; t0 < p.T; t0 += kTile) {
    __syncthreads();
    load_tile<HD>(q_s, p.qkv + p.qkv_row(b, t0) + col0, 3 * p.C, p.T - t0);
    load_tile<HD>(do_s, dout + p.out_row(b, t0) + col0, p.C, p.T - t0);
    for (int i = threadIdx.x; i < kTile; i += kThreads) {
      const bool in = t0 + i < p.T;
      lse_s[i] = in ? lse[p.stat(b, h, t0 + i)] : INFINITY;
      d_s[i] = in ? dsum[p.stat(b, h, t0 + i)] : 0.0f;
    }
    __syncthreads();
    warp_abt<HD>(sm.s, L::sld, k_s + warp * kRows * L::ld, L::ld, q_s, L::ld);    // S^T = K Q^T
    warp_abt<HD>(sm.dp, L::sld, v_s + warp * kRows * L::ld, L::ld, do_s, L::ld);  // dP^T = V dO^T
    __syncwarp();
#pragma unroll 8
    for (int c = 0; c < 32; ++c) {
      const int ti = lc.col(c), idx = lc.r * L::sld + ti;
      const float pr = p.visible(b, t0 + ti, j) ? __expf(sm.s[idx] * p.scale - lse_s[ti]) : 0.0f;
      sm.pb[lc.r * L::pld + ti] = __float2bfloat16(pr);
      sm.dsb[lc.r * L::pld + ti] = __float2bfloat16(pr * (sm.dp[idx] - d_s[ti]));
    }
    __syncwarp();
    warp_ab_acc<HD>(dv, sm.pb, L::pld, do_s, L::ld);  // dV += P^T dO
    warp_ab_acc<HD>(dk, sm.dsb, L::pld, q_s, L::ld);  // dK += dS^T Q
  }
  const int row0 = j0 + warp * kRows;
  bf* base = dqkv + p.qkv_row(b, row0) + col0;
  store_rows<HD>(base + p.C, 3 * p.C, dk, p.scale, sm.s, p.T - row0);
  store_rows<HD>(base + 2 * p.C, 3 * p.C, dv, 1.0f, sm.s, p.T - row0);
}

// dQ for one query tile: walks the key tiles it can see.
template <int HD>
__global__ void __launch_bounds__(kThreads) flash_backward_dq_kernel(bf* dqkv, const bf* dout, const float* lse,
                                                                       const float* dsum, Problem p) {
  using L = Layout<HD>;
  unsigned char* smem = dev::dynamic_smem();
  const BackwardSmem<HD> sm(smem);
  bf *q_s = sm.tile0, *do_s = sm.tile1, *k_s = sm.tile2, *v_s = sm.tile3;
  const int warp = threadIdx.x / 32;
  const int t0 = (gridDim.z - 1 - blockIdx.z) * kTile, h = blockIdx.y, b = blockIdx.x, col0 = h * HD;  // longest first
  load_tile<HD>(q_s, p.qkv + p.qkv_row(b, t0) + col0, 3 * p.C, p.T - t0);
  load_tile<HD>(do_s, dout + p.out_row(b, t0) + col0, p.C, p.T - t0);
  const LaneCols lc;
  const int t = t0 + warp * kRows + lc.r;  // this lane's query
  const float row_lse = t < p.T ? lse[p.stat(b, h, t)] : INFINITY;
  const float row_d = t < p.T ? dsum[p.stat(b, h, t)] : 0.0f;
  Acc dq[HD / 16];
  zero<HD>(dq);
  const int kv_end = p.causal ? min(p.T, t0 + kTile) : p.T;
  for (int k0 = 0; k0 < kv_end; k0 += kTile) {
    __syncthreads();
    load_tile<HD>(k_s, p.qkv + p.qkv_row(b, k0) + p.C + col0, 3 * p.C, p.T - k0);
    load_tile<HD>(v_s, p.qkv + p.qkv_row(b, k0) + 2 * p.C + col0, 3 * p.C, p.T - k0);
    __syncthreads();
    warp_abt<HD>(sm.s, L::sld, q_s + warp * kRows * L::ld, L::ld, k_s, L::ld);    // S = Q K^T
    warp_abt<HD>(sm.dp, L::sld, do_s + warp * kRows * L::ld, L::ld, v_s, L::ld);  // dP = dO V^T
    __syncwarp();
#pragma unroll 8
    for (int c = 0; c < 32; ++c) {
      const int ji = lc.col(c), idx = lc.r * L::sld + ji;
      const float pr = p.visible(b, t, k0 + ji) ? __expf(sm.s[idx] * p.scale - row_lse) : 0.0f;
      sm.dsb[lc.r * L::pld + ji] = __float2bfloat16(pr * (sm.dp[idx] - row_d));
    }
    __syncwarp();
    warp_ab_acc<HD>(dq, sm.dsb, L::pld, k_s, L::ld);  // dQ += dS K
  }
  const int row0 = t0 + warp * kRows;
  store_rows<HD>(dqkv + p.qkv_row(b, row0) + col0, 3 * p.C, dq, p.scale, sm.s, p.T - row0);
}

Problem make_problem(const bf16* qkv, const std::uint8_t* key_mask, bool causal, int B, int Tn, int C, int NH) {
  if (NH <= 0 || C % NH != 0 || !attention_head_dim_supported(C / NH))
    throw CudaError("attention: head size C / n_head = " + std::to_string(C) + " / " + std::to_string(NH) +
                    " is not one of 16, 32, 64, 128");
  return Problem{dev::cast(qkv), key_mask, causal, B, Tn, C, NH, 1.0f / std::sqrt(static_cast<float>(C / NH))};
}

// Blocks (sequence, head, tile): the tile index varies slowest, so the launch runs tile by tile and
// each kernel can put its longest tiles (most keys or queries under a causal mask) first.
dim3 tiles_grid(const Problem& p) {
  return dim3(static_cast<unsigned>(p.B), static_cast<unsigned>(p.NH),
              static_cast<unsigned>((p.T + kTile - 1) / kTile));
}

template <int HD>
void forward(bf* out, float* lse, const Problem& p, Stream stream) {
  using L = Layout<HD>;
  const std::size_t smem = 3 * L::tile_bytes + kWarps * (L::fbuf_bytes + L::pbuf_bytes);
  dev::launch(flash_forward_kernel<HD>, tiles_grid(p), kThreads, smem, stream, out, lse, p);
}

template <int HD>
void backward(bf* dqkv, const bf* dout, const bf* out, const float* lse, float* dsum, const Problem& p,
              Stream stream) {
  const std::int64_t threads = static_cast<std::int64_t>(p.B) * p.T * (p.C / 8);
  dev::launch(row_dot_kernel<HD>, static_cast<unsigned>((threads + 255) / 256), 256, 0, stream, dsum, dout, out, p);
  const std::size_t smem = BackwardSmem<HD>::bytes();
  dev::launch(flash_backward_dkdv_kernel<HD>, tiles_grid(p), kThreads, smem, stream, dqkv, dout, lse, dsum, p);
  dev::launch(flash_backward_dq_kernel<HD>, tiles_grid(p), kThreads, smem, stream, dqkv, dout, lse, dsum, p);
}

template <class Fn>
void with_head_dim(int hd, Fn&& fn) {
  switch (hd) {
    case 16: return fn(std::integral_constant<int, 16>{});
    case 32: return fn(std::integral_constant<int, 32>{});
    case 64: return fn(std::integral_constant<int, 64>{});
    default: return fn(std::integral_constant<int, 128>{});  // make_problem admitted only these four
  }
}

}  // namespace

bool attention_head_dim_supported(int hd) { return hd == 16 || hd == 32 || hd == 64 || hd == 128; }

std::size_t attention_workspace_bytes(int B, int Tn, int NH) {
  return sizeof(float) * static_cast<std::size_t>(B) * NH * Tn;
}

void attention_forward(bf16* out, float* lse, const bf16* qkv, const std::uint8_t* key_mask, bool causal, int B,
                       int Tn, int C, int NH, Stream stream) {
  const Problem p = make_problem(qkv, key_mask, causal, B, Tn, C, NH);
  if (B <= 0 || Tn <= 0) return;
  with_head_dim(C / NH, [&](auto hd) { forward<decltype(hd)::value>(dev::cast(out), lse, p, stream); });
}

void attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                        const std::uint8_t* key_mask, bool causal, int B, int Tn, int C, int NH, void* workspace,
                        Stream stream) {
  const Problem p = make_problem(qkv, key_mask, causal, B, Tn, C, NH);
  if (B <= 0 || Tn <= 0) return;
  with_head_dim(C / NH, [&](auto hd) {
    backward<decltype(hd)::value>(dev::cast(dqkv), dev::cast(dout), dev::cast(out), lse,
                                  static_cast<float*>(workspace), p, stream);
  });
}

}  // namespace core::kernels
