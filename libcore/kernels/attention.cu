// Multi-head attention on the GPU (ops.hpp), fused in the manner of FlashAttention-2 (Dao 2023):
// the T x T scores never reach global memory. Forward: one block per (64 queries, head, sequence);
// each of its 4 warps owns 16 query rows, walks the key/value tiles of 64 with an online softmax
// (running max m and sum l, Milakov & Gimelshein 2018), and writes out and lse = m + log l.
// Backward recomputes the probabilities P = exp(s - lse) tile by tile, with D = rowsum(dO * O):
//   dV = P^T dO,  dS = P * (dO V^T - D),  dK = scale dS^T Q,  dQ = scale dS K,
// in two kernels (one per key tile for dK/dV, one per query tile for dQ) so that every gradient is
// summed by one block in a fixed order: no atomics, deterministic. Products are bf16 tensor-core
// mma.sync m16n8k16 with fp32 accumulation; scores, probabilities and accumulators stay in registers
// (an accumulator fragment of S is, packed to bf16, the A fragment of P V: FA2's register reuse);
// softmax arithmetic is fp32. q, k, v are read in place from the packed qkv rows and gradients
// written in place into dqkv: no head transposes.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/device_utils.cuh"
#include "kernels/mma.cuh"
#include "kernels/ops.hpp"

namespace core::kernels {
namespace {

using dev::bf;

constexpr int kTile = 64;  // rows of a block's own tile, and of each tile it walks over
constexpr int kWarps = 4;  // each warp owns 16 rows of the block's tile
constexpr int kThreads = kWarps * 32;
constexpr int kKeyTiles = kTile / 8;  // n8 fragments across a 64-wide tile
static_assert(kTile == 16 * kWarps);

// Shared tiles hold 64 rows of HD bf16, rows padded by 8 elements (16 bytes) so that the fragment
// loads of the 8 row groups of a warp fall in different banks; rows stay 16-byte aligned.
template <int HD>
__host__ __device__ constexpr int tile_ld() {
  return HD + 8;
}
template <int HD>
constexpr std::size_t tile_bytes() {
  return sizeof(bf) * kTile * tile_ld<HD>();
}
// Tile i of a kernel's dynamic shared memory (tiles of tile_bytes<HD>() each, from the start).
template <int HD>
__device__ bf* smem_tile(int i) {
  return reinterpret_cast<bf*>(dev::dynamic_smem()) + i * kTile * tile_ld<HD>();
}

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
  // Every pair of queries [t, t + nt) x keys [j, j + nj) is visible: tiles away from the causal
  // diagonal and the sequence end skip the per-element test (a warp-uniform branch).
  __device__ bool all_visible(int t, int nt, int j, int nj) const {
    return !key_mask && t + nt <= T && j + nj <= T && (!causal || j + nj - 1 <= t);
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
    *reinterpret_cast<uint4*>(dst + r * tile_ld<HD>() + c) = v;
  }
}

// This lane's coordinates in the mma fragments (kernels/mma.cuh): lane = 4 g + q.
struct Lane {
  int g, q;
  __device__ Lane() : g((threadIdx.x % 32) / 4), q(threadIdx.x % 4) {}
};

using Frag = float[4];  // a C fragment (16 x 8 fp32)

template <int N>
__device__ void zero(Frag (&f)[N]) {
#pragma unroll
  for (int nt = 0; nt < N; ++nt) f[nt][0] = f[nt][1] = f[nt][2] = f[nt][3] = 0.0f;
}

// A fragment, k-step kk, of the 16 rows of a row-major shared tile starting at x.
__device__ inline void load_a(std::uint32_t (&a)[4], const bf* x, int ld, int kk, const Lane& l) {
  const bf* p = x + l.g * ld + kk * 16 + 2 * l.q;
  a[0] = dev::load_pair(p), a[1] = dev::load_pair(p + 8 * ld), a[2] = dev::load_pair(p + 8),
  a[3] = dev::load_pair(p + 8 * ld + 8);
}

// B fragment (n-tile nt, k-step kk) of Y^T for a row-major shared tile Y [n][k] (k contiguous).
__device__ inline void load_b_t(std::uint32_t& b0, std::uint32_t& b1, const bf* y, int ld, int nt, int kk,
                                const Lane& l) {
  const bf* p = y + (nt * 8 + l.g) * ld + kk * 16 + 2 * l.q;
  b0 = dev::load_pair(p), b1 = dev::load_pair(p + 8);
}

// B fragments of n-tiles nt and nt + 1 (k-step kk) of a row-major shared tile Y [k][n] (n
// contiguous), through ldmatrix.trans: r0, r1 = (b0, b1) of nt, r2, r3 of nt + 1. Lanes 8i..8i+7
// give the row addresses of 8 x 8 matrix i: (k 0-7, nt), (k 8-15, nt), (k 0-7, nt+1), (k 8-15, nt+1).
__device__ inline void load_b_pair(std::uint32_t (&r)[4], const bf* y, int ld, int nt, int kk) {
  const int lane = threadIdx.x % 32;
  dev::ldmatrix_x4_trans(r, y + (kk * 16 + lane % 8 + (lane / 8 % 2) * 8) * ld + (nt + lane / 16) * 8);
}

// acc[16 x 64] = x[16 x HD] y[64 x HD]^T for the warp's 16 rows x of a shared tile and a shared tile y.
template <int HD>
__device__ void product_abt(Frag (&acc)[kKeyTiles], const bf* x, const bf* y, const Lane& l) {
  constexpr int ld = tile_ld<HD>();
  zero(acc);
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    std::uint32_t a[4];
    load_a(a, x, ld, kk, l);
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
      std::uint32_t b0, b1;
      load_b_t(b0, b1, y, ld, nt, kk, l);
      dev::mma_bf16_16816(acc[nt], a, b0, b1);
    }
  }
}

// acc[16 x HD] += p[16 x 64] y[64 x HD]: p is a register tile in C layout (as product_abt leaves
// it), rounded to bf16 and reused as A fragments; y a row-major shared tile.
template <int HD>
__device__ void product_ab_acc(Frag (&acc)[HD / 8], const Frag (&p)[kKeyTiles], const bf* y) {
#pragma unroll
  for (int kk = 0; kk < kTile / 16; ++kk) {
    const std::uint32_t a[4] = {dev::pack_pair(p[2 * kk][0], p[2 * kk][1]), dev::pack_pair(p[2 * kk][2], p[2 * kk][3]),
                                dev::pack_pair(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                                dev::pack_pair(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt += 2) {
      std::uint32_t b[4];
      load_b_pair(b, y, tile_ld<HD>(), nt, kk);
      dev::mma_bf16_16816(acc[nt], a, b[0], b[1]);
      dev::mma_bf16_16816(acc[nt + 1], a, b[2], b[3]);
    }
  }
}

// Element (nt, e) of a C-layout register tile: row offset (0 or 8) and column within the 64.
__device__ inline int frag_row(int e, const Lane& l) { return l.g + (e / 2) * 8; }
__device__ inline int frag_col(int nt, int e, const Lane& l) { return nt * 8 + 2 * l.q + (e & 1); }

// Writes a warp's 16 x HD accumulators, times scale, as bf16 into rows row0 + (0..15) of dst (row
// stride ld, columns 0..HD); rows at or past T are skipped.
template <int HD>
__device__ void store_rows(bf* dst, std::int64_t ld, const Frag (&acc)[HD / 8], float scale, int row0, int T,
                           const Lane& l) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + l.g + 8 * half;
    if (row >= T) continue;
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt)
      *reinterpret_cast<std::uint32_t*>(dst + (row - row0) * ld + nt * 8 + 2 * l.q) =
          dev::pack_pair(acc[nt][2 * half] * scale, acc[nt][2 * half + 1] * scale);
  }
}

template <int HD>
__global__ void __launch_bounds__(kThreads) flash_forward_kernel(bf* out, float* lse, Problem p) {
  constexpr int ld = tile_ld<HD>();
  bf *q_s = smem_tile<HD>(0), *k_s = smem_tile<HD>(1), *v_s = smem_tile<HD>(2);
  const Lane ln;
  const int warp = threadIdx.x / 32;
  // Under a causal mask the last query tiles see the most keys: they are scheduled first (tiles_grid).
  const int q0 = (gridDim.z - 1 - blockIdx.z) * kTile, h = blockIdx.y, b = blockIdx.x, col0 = h * HD;
  const int row0 = q0 + 16 * warp;
  load_tile<HD>(q_s, p.qkv + p.qkv_row(b, q0) + col0, 3 * p.C, p.T - q0);
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // rows g and g + 8
  Frag o[HD / 8];
  zero(o);

  const int kv_end = p.causal ? min(p.T, q0 + kTile) : p.T;
  for (int k0 = 0; k0 < kv_end; k0 += kTile) {
    __syncthreads();  // every warp is done with the previous k, v tiles
    load_tile<HD>(k_s, p.qkv + p.qkv_row(b, k0) + p.C + col0, 3 * p.C, p.T - k0);
    load_tile<HD>(v_s, p.qkv + p.qkv_row(b, k0) + 2 * p.C + col0, 3 * p.C, p.T - k0);
    __syncthreads();
    Frag s[kKeyTiles];
    product_abt<HD>(s, q_s + 16 * warp * ld, k_s, ln);  // S = Q K^T
    const bool all = p.all_visible(row0, 16, k0, kTile);
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float v = s[nt][e] * p.scale;
        if (!all && !p.visible(b, row0 + frag_row(e, ln), k0 + frag_col(nt, e, ln))) v = -INFINITY;
        s[nt][e] = v;
        tile_max[e / 2] = fmaxf(tile_max[e / 2], v);
      }
    float alpha[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < 2; ++r) {  // a row's values sit in the 4 lanes of its group
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float m_new = fmaxf(m[r], tile_max[r]);                 // -inf while the row has seen no key
      alpha[r] = m[r] == -INFINITY ? 0.0f : __expf(m[r] - m_new);  // o and l are 0 while m is -inf
      m[r] = m_new;
    }
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float v = s[nt][e] == -INFINITY ? 0.0f : __expf(s[nt][e] - m[e / 2]);
        s[nt][e] = v;
        sum[e / 2] += v;
      }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 1);
      sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 2);
      l[r] = l[r] * alpha[r] + sum[r];
    }
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nt][e] *= alpha[e / 2];
    product_ab_acc<HD>(o, s, v_s);  // O += P V
  }
  const float inv[2] = {l[0] > 0.0f ? 1.0f / l[0] : 0.0f, l[1] > 0.0f ? 1.0f / l[1] : 0.0f};  // no key seen: 0
#pragma unroll
  for (int nt = 0; nt < HD / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[nt][e] *= inv[e / 2];
  store_rows<HD>(out + p.out_row(b, row0) + col0, p.C, o, 1.0f, row0, p.T, ln);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int t = row0 + ln.g + 8 * r;
    if (ln.q == 0 && t < p.T) lse[p.stat(b, h, t)] = l[r] > 0.0f ? m[r] + logf(l[r]) : INFINITY;
  }
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

// dK, dV for one key tile (each warp 16 keys): walks the query tiles that can see it.
template <int HD>
__global__ void __launch_bounds__(kThreads) flash_backward_dkdv_kernel(bf* dqkv, const bf* dout, const float* lse,
                                                                         const float* dsum, Problem p) {
  constexpr int ld = tile_ld<HD>();
  bf *k_s = smem_tile<HD>(0), *v_s = smem_tile<HD>(1), *q_s = smem_tile<HD>(2), *do_s = smem_tile<HD>(3);
  float* lse_s = reinterpret_cast<float*>(smem_tile<HD>(4));
  float* d_s = lse_s + kTile;
  const Lane ln;
  const int warp = threadIdx.x / 32;
  const int j0 = blockIdx.z * kTile, h = blockIdx.y, b = blockIdx.x, col0 = h * HD;  // longest first
  const int row0 = j0 + 16 * warp;  // this warp's first key
  load_tile<HD>(k_s, p.qkv + p.qkv_row(b, j0) + p.C + col0, 3 * p.C, p.T - j0);
  load_tile<HD>(v_s, p.qkv + p.qkv_row(b, j0) + 2 * p.C + col0, 3 * p.C, p.T - j0);
  Frag dk[HD / 8], dv[HD / 8];
  zero(dk);
  zero(dv);
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
    Frag pt[kKeyTiles], dst[kKeyTiles];  // P^T and dP^T, then dS^T: rows = keys, columns = queries
    product_abt<HD>(pt, k_s + 16 * warp * ld, q_s, ln);    // S^T = K Q^T
    product_abt<HD>(dst, v_s + 16 * warp * ld, do_s, ln);  // dP^T = V dO^T
    const bool all = p.all_visible(t0, kTile, row0, 16);
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int ti = frag_col(nt, e, ln);
        const bool vis = all || p.visible(b, t0 + ti, row0 + frag_row(e, ln));
        const float pr = vis ? __expf(pt[nt][e] * p.scale - lse_s[ti]) : 0.0f;
        pt[nt][e] = pr;
        dst[nt][e] = pr * (dst[nt][e] - d_s[ti]);
      }
    product_ab_acc<HD>(dv, pt, do_s);  // dV += P^T dO
    product_ab_acc<HD>(dk, dst, q_s);  // dK += dS^T Q
  }
  bf* base = dqkv + p.qkv_row(b, row0) + col0;
  store_rows<HD>(base + p.C, 3 * p.C, dk, p.scale, row0, p.T, ln);
  store_rows<HD>(base + 2 * p.C, 3 * p.C, dv, 1.0f, row0, p.T, ln);
}

// dQ for one query tile (each warp 16 queries): walks the key tiles it can see.
template <int HD>
__global__ void __launch_bounds__(kThreads) flash_backward_dq_kernel(bf* dqkv, const bf* dout, const float* lse,
                                                                       const float* dsum, Problem p) {
  constexpr int ld = tile_ld<HD>();
  bf *q_s = smem_tile<HD>(0), *do_s = smem_tile<HD>(1), *k_s = smem_tile<HD>(2), *v_s = smem_tile<HD>(3);
  const Lane ln;
  const int warp = threadIdx.x / 32;
  const int t0 = (gridDim.z - 1 - blockIdx.z) * kTile, h = blockIdx.y, b = blockIdx.x, col0 = h * HD;  // longest first
  const int row0 = t0 + 16 * warp;  // this warp's first query
  load_tile<HD>(q_s, p.qkv + p.qkv_row(b, t0) + col0, 3 * p.C, p.T - t0);
  load_tile<HD>(do_s, dout + p.out_row(b, t0) + col0, p.C, p.T - t0);
  float row_lse[2], row_d[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int t = row0 + ln.g + 8 * r;
    row_lse[r] = t < p.T ? lse[p.stat(b, h, t)] : INFINITY;
    row_d[r] = t < p.T ? dsum[p.stat(b, h, t)] : 0.0f;
  }
  Frag dq[HD / 8];
  zero(dq);
  const int kv_end = p.causal ? min(p.T, t0 + kTile) : p.T;
  for (int k0 = 0; k0 < kv_end; k0 += kTile) {
    __syncthreads();
    load_tile<HD>(k_s, p.qkv + p.qkv_row(b, k0) + p.C + col0, 3 * p.C, p.T - k0);
    load_tile<HD>(v_s, p.qkv + p.qkv_row(b, k0) + 2 * p.C + col0, 3 * p.C, p.T - k0);
    __syncthreads();
    Frag s[kKeyTiles], dp[kKeyTiles];
    product_abt<HD>(s, q_s + 16 * warp * ld, k_s, ln);    // S = Q K^T
    product_abt<HD>(dp, do_s + 16 * warp * ld, v_s, ln);  // dP = dO V^T
    const bool all = p.all_visible(row0, 16, k0, kTile);
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool vis = all || p.visible(b, row0 + frag_row(e, ln), k0 + frag_col(nt, e, ln));
        const float pr = vis ? __expf(s[nt][e] * p.scale - row_lse[e / 2]) : 0.0f;
        s[nt][e] = pr * (dp[nt][e] - row_d[e / 2]);  // dS
      }
    product_ab_acc<HD>(dq, s, k_s);  // dQ += dS K
  }
  store_rows<HD>(dqkv + p.qkv_row(b, row0) + col0, 3 * p.C, dq, p.scale, row0, p.T, ln);
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
  dev::launch(flash_forward_kernel<HD>, tiles_grid(p), kThreads, 3 * tile_bytes<HD>(), stream, out, lse, p);
}

template <int HD>
void backward(bf* dqkv, const bf* dout, const bf* out, const float* lse, float* dsum, const Problem& p,
              Stream stream) {
  const std::int64_t threads = static_cast<std::int64_t>(p.B) * p.T * (p.C / 8);
  dev::launch(row_dot_kernel<HD>, static_cast<unsigned>((threads + 255) / 256), 256, 0, stream, dsum, dout, out, p);
  const std::size_t smem = 4 * tile_bytes<HD>() + 2 * sizeof(float) * kTile;
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
