// CUDA kernels of ops.hpp except attention: LayerNorm, GELU and tanh, bias gradients, fused softmax
// cross-entropy, AdamW, conversions. Formulas as in core::train's layers.cpp and optimizer.cpp; fp32 arithmetic throughout.
// Column sums (LayerNorm dw/db, bias gradients) run in two fixed-order passes (per-chunk partial
// sums, then a sum over chunks) instead of atomics, so they are deterministic.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/device_utils.cuh"
#include "kernels/ops.hpp"

namespace core::kernels {
namespace {

using dev::bf;
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

__global__ void layernorm_forward_kernel(bf* out, float* mean, float* rstd, const bf* x, const bf* w, const bf* b,
                                         int N, int C, float eps) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const bf* xr = x + static_cast<std::int64_t>(row) * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += __bfloat162float(xr[c]);
  const float mu = dev::warp_sum(s) / C;
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = __bfloat162float(xr[c]) - mu;
    v += d * d;
  }
  const float rs = rsqrtf(dev::warp_sum(v) / C + eps);
  bf* o = out + static_cast<std::int64_t>(row) * C;
  for (int c = lane; c < C; c += 32)
    o[c] = __float2bfloat16((__bfloat162float(xr[c]) - mu) * rs * __bfloat162float(w[c]) + __bfloat162float(b[c]));
  if (lane == 0) mean[row] = mu, rstd[row] = rs;
}

// dx += rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dout * w; one warp per
// row, 8 columns per 16-byte access (C % 8 == 0); the second pass re-reads the row from cache.
__global__ void layernorm_backward_dx_kernel(bf* dx, const bf* dout, const bf* x, const bf* w, const float* mean,
                                             const float* rstd, int N, int C) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= N) return;
  const std::int64_t base = static_cast<std::int64_t>(row) * C;
  const float mu = mean[row], rs = rstd[row];
  float sd = 0.0f, sdx = 0.0f;
  for (int c = lane * 8; c < C; c += 32 * 8) {
    float d[8], xv[8], wv[8];
    dev::load8(d, dout + base + c), dev::load8(xv, x + base + c), dev::load8(wv, w + c);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float g = d[e] * wv[e];
      sd += g;
      sdx += g * (xv[e] - mu) * rs;
    }
  }
  const float mean_d = dev::warp_sum(sd) / C, mean_dx = dev::warp_sum(sdx) / C;
  for (int c = lane * 8; c < C; c += 32 * 8) {
    float d[8], xv[8], wv[8], acc[8];
    dev::load8(d, dout + base + c), dev::load8(xv, x + base + c), dev::load8(wv, w + c), dev::load8(acc, dx + base + c);
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[e] += rs * (d[e] * wv[e] - mean_d - (xv[e] - mu) * rs * mean_dx);
    dev::store8(dx + base + c, acc);
  }
}

// Column sums over row chunks: block (32 columns) x (8 row lanes), grid (column tiles, chunks).
// partial[q][chunk][c] for q = 0: sum dout, and (with x) q = 1: sum dout * xhat. Rows of dout and x
// are ld elements apart.
constexpr int kRowLanes = 8;

__global__ void column_partials_kernel(float* partial, const bf* dout, const bf* x, int ld, const float* mean,
                                       const float* rstd, int N, int C, int rows_per_chunk) {
  __shared__ float s_d[kRowLanes][32], s_dx[kRowLanes][32];
  const int c = blockIdx.x * 32 + threadIdx.x, chunk = blockIdx.y, chunks = gridDim.y;
  const int begin = chunk * rows_per_chunk, end = min(N, begin + rows_per_chunk);
  float sd = 0.0f, sdx = 0.0f;
  if (c < C) {
    for (int n = begin + threadIdx.y; n < end; n += kRowLanes) {
      const std::int64_t i = static_cast<std::int64_t>(n) * ld + c;
      const float d = __bfloat162float(dout[i]);
      sd += d;
      if (x) sdx += d * (__bfloat162float(x[i]) - mean[n]) * rstd[n];
    }
  }
  s_d[threadIdx.y][threadIdx.x] = sd;
  s_dx[threadIdx.y][threadIdx.x] = sdx;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float td = 0.0f, tdx = 0.0f;
    for (int r = 0; r < kRowLanes; ++r) td += s_d[r][threadIdx.x], tdx += s_dx[r][threadIdx.x];
    partial[static_cast<std::int64_t>(chunk) * C + c] = td;
    if (x) partial[static_cast<std::int64_t>(chunks + chunk) * C + c] = tdx;
  }
}

// dst[c] += sum over chunks of partial[chunk][c], in chunk order.
__global__ void sum_partials_kernel(float* dst, const float* partial, int chunks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float s = 0.0f;
  for (int k = 0; k < chunks; ++k) s += partial[static_cast<std::int64_t>(k) * C + c];
  dst[c] += s;
}

// db += colsum(dout) and, when x is given, dw += colsum(dout * xhat); rows ld apart.
void column_sums(float* db, float* dw, const bf* dout, int ld, const bf* x, const float* mean, const float* rstd,
                 int N, int C, Stream stream) {
  const int rows_per_chunk = std::max(64, (N + 255) / 256);
  const int chunks = (N + rows_per_chunk - 1) / rows_per_chunk;
  const int quantities = x ? 2 : 1;
  const dev::Scratch scratch(sizeof(float) * quantities * chunks * static_cast<std::size_t>(C), stream);
  float* partial = scratch.as<float>();
  dev::launch(column_partials_kernel, dim3((C + 31) / 32, chunks), dim3(32, kRowLanes), 0, stream, partial, dout, x,
              ld, mean, rstd, N, C, rows_per_chunk);
  dev::launch(sum_partials_kernel, dev::blocks_for(C, kThreads), kThreads, 0, stream, db, partial, chunks, C);
  if (x) {
    dev::launch(sum_partials_kernel, dev::blocks_for(C, kThreads), kThreads, 0, stream, dw,
                partial + static_cast<std::size_t>(chunks) * C, chunks, C);
  }
}

// Element-wise activations: out = f(in), and din = f'(saved) * dout, where `saved` is what the
// activation's derivative is cheapest from (GELU: its input; tanh: its output, 1 - y^2).
struct Gelu {
  __device__ static float forward(float x) { return dev::gelu(x); }
  __device__ static float derivative(float x) { return dev::gelu_grad(x); }
};
struct Tanh {
  __device__ static float forward(float x) { return tanhf(x); }
  __device__ static float derivative(float y) { return 1.0f - y * y; }
};

template <class Act>
__global__ void activation_forward_kernel(bf* out, const bf* in, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(Act::forward(__bfloat162float(in[i])));
}

template <class Act>
__global__ void activation_backward_kernel(bf* din, const bf* saved, const bf* dout, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    din[i] = __float2bfloat16(Act::derivative(__bfloat162float(saved[i])) * __bfloat162float(dout[i]));
}

template <class Act>
void activation_forward(bf16* out, const bf16* in, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  dev::launch(activation_forward_kernel<Act>, dev::blocks_for(n, kThreads), kThreads, 0, stream, dev::cast(out),
              dev::cast(in), n);
}

template <class Act>
void activation_backward(bf16* din, const bf16* saved, const bf16* dout, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  dev::launch(activation_backward_kernel<Act>, dev::blocks_for(n, kThreads), kThreads, 0, stream, dev::cast(din),
              dev::cast(saved), dev::cast(dout), n);
}

// One block per row. Each thread keeps a running max and a sum of exponentials relative to it over
// its columns (one pass, online softmax: Milakov & Gimelshein 2018); the block combines them, then a
// second pass writes the gradient. logits and dlogits may alias: each element is read before the
// same thread overwrites it, and the target logit is read before the barriers that precede the writes.
constexpr int kXentThreads = 1024;

__global__ void softmax_xent_kernel(float* losses, bf* dlogits, const bf* logits, const std::int32_t* targets,
                                    float scale, int V, int ld) {
  __shared__ float shared[32];
  const std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * ld;
  const int target = targets[blockIdx.x];
  const float x_target = target >= 0 ? __bfloat162float(logits[base + target]) : 0.0f;
  float m = -INFINITY, s = 0.0f;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    const float x = __bfloat162float(logits[base + j]);
    if (x > m) s = s * __expf(m - x) + 1.0f, m = x;  // __expf(-inf) = 0 on the first column
    else s += __expf(x - m);
  }
  const float row_max = dev::block_max(m, shared);
  s = dev::block_sum(m == -INFINITY ? 0.0f : s * __expf(m - row_max), shared);  // ends with a barrier
  if (threadIdx.x == 0) losses[blockIdx.x] = target >= 0 ? logf(s) + row_max - x_target : 0.0f;
  if (!dlogits) return;
  const float inv = 1.0f / s;
  for (int j = threadIdx.x; j < ld; j += blockDim.x) {
    float d = 0.0f;
    if (target >= 0 && j < V)
      d = (__expf(__bfloat162float(logits[base + j]) - row_max) * inv - (j == target ? 1.0f : 0.0f)) * scale;
    dlogits[base + j] = __float2bfloat16(d);
  }
}

__global__ void adamw_kernel(float* w, float* m, float* v, const float* grad, bf* copy, std::int64_t n, float lr,
                             float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                             float correction1, float correction2) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = grad[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float wi = w[i] - lr * ((mi / correction1) / (sqrtf(vi / correction2) + eps) + weight_decay * w[i]);
    w[i] = wi;
    if (copy) copy[i] = __float2bfloat16(wi);
  }
}

__global__ void to_bf16_kernel(bf* dst, const float* src, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16(src[i]);
}

__global__ void to_float_kernel(float* dst, const bf* src, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[i] = __bfloat162float(src[i]);
}

// out[n, c] = wte[tokens[n], c] + wpe[n % T, c] (+ wse[segments[n], c]).
__global__ void embedding_forward_kernel(bf* out, const std::int32_t* tokens, const std::int32_t* segments,
                                         const bf* wte, const bf* wpe, const bf* wse, int Tn, int C, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / C;
    const int c = static_cast<int>(i % C), t = static_cast<int>(row % Tn);
    float s = __bfloat162float(wte[static_cast<std::int64_t>(tokens[row]) * C + c]) +
              __bfloat162float(wpe[static_cast<std::int64_t>(t) * C + c]);
    if (segments) s += __bfloat162float(wse[static_cast<std::int64_t>(segments[row]) * C + c]);
    out[i] = __float2bfloat16(s);
  }
}

// dtable[rows[u], c] += sum over positions[starts[u] .. starts[u+1]) of dout[pos, c], in that order;
// block (u, column tile). The token table's and the segment table's gradient.
__global__ void embedding_backward_rows_kernel(float* dtable, const bf* dout, const std::int32_t* rows,
                                               const std::int32_t* starts, const std::int32_t* positions, int C) {
  const int u = blockIdx.x, c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float s = 0.0f;
  for (int k = starts[u]; k < starts[u + 1]; ++k) s += __bfloat162float(dout[static_cast<std::int64_t>(positions[k]) * C + c]);
  dtable[static_cast<std::int64_t>(rows[u]) * C + c] += s;
}

// dwpe[t, c] += sum_b dout[b*T + t, c], b in order.
__global__ void embedding_backward_wpe_kernel(float* dwpe, const bf* dout, int B, int Tn, int C) {
  const std::int64_t n = static_cast<std::int64_t>(Tn) * C;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float s = 0.0f;
    for (int b = 0; b < B; ++b) s += __bfloat162float(dout[static_cast<std::int64_t>(b) * n + i]);
    dwpe[i] += s;
  }
}

unsigned row_blocks(int N) { return static_cast<unsigned>((N + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* x, const bf16* w, const bf16* b, int N,
                       int C, float eps, Stream stream) {
  if (N <= 0) return;
  dev::launch(layernorm_forward_kernel, row_blocks(N), kThreads, 0, stream, dev::cast(out), mean, rstd, dev::cast(x),
              dev::cast(w), dev::cast(b), N, C, eps);
}

void layernorm_backward(bf16* dx, float* dw, float* db, const bf16* dout, const bf16* x, const bf16* w,
                        const float* mean, const float* rstd, int N, int C, Stream stream) {
  if (C % 8 != 0) throw CudaError("layernorm_backward: C = " + std::to_string(C) + " is not a multiple of 8");
  if (N <= 0) return;
  dev::launch(layernorm_backward_dx_kernel, row_blocks(N), kThreads, 0, stream, dev::cast(dx), dev::cast(dout),
              dev::cast(x), dev::cast(w), mean, rstd, N, C);
  column_sums(db, dw, dev::cast(dout), C, dev::cast(x), mean, rstd, N, C, stream);
}

void gelu_forward(bf16* out, const bf16* in, std::int64_t n, Stream stream) {
  activation_forward<Gelu>(out, in, n, stream);
}
void gelu_backward(bf16* din, const bf16* in, const bf16* dout, std::int64_t n, Stream stream) {
  activation_backward<Gelu>(din, in, dout, n, stream);
}
void tanh_forward(bf16* out, const bf16* in, std::int64_t n, Stream stream) {
  activation_forward<Tanh>(out, in, n, stream);
}
void tanh_backward(bf16* din, const bf16* out, const bf16* dout, std::int64_t n, Stream stream) {
  activation_backward<Tanh>(din, out, dout, n, stream);
}

void bias_backward(float* db, const bf16* dout, int N, int OC, int ld, Stream stream) {
  if (ld < OC) throw CudaError("bias_backward: row stride " + std::to_string(ld) + " < " + std::to_string(OC));
  if (N <= 0) return;
  column_sums(db, nullptr, dev::cast(dout), ld, nullptr, nullptr, nullptr, N, OC, stream);
}

void softmax_xent(float* losses, bf16* dlogits, const bf16* logits, const std::int32_t* targets, float scale, int N,
                  int V, int ld, Stream stream) {
  if (N <= 0) return;
  dev::launch(softmax_xent_kernel, N, kXentThreads, 0, stream, losses, dev::cast(dlogits), dev::cast(logits), targets,
              scale, V, ld);
}

void adamw_update(float* w, float* m, float* v, const float* grad, bf16* copy, std::int64_t n, const AdamW& p,
                  Stream stream) {
  if (n <= 0) return;
  const auto c1 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta1), p.step));
  const auto c2 = static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta2), p.step));
  dev::launch(adamw_kernel, dev::blocks_for(n, kThreads), kThreads, 0, stream, w, m, v, grad, dev::cast(copy), n, p.lr,
              p.beta1, p.beta2, p.eps, p.weight_decay, p.grad_scale, c1, c2);
}

void to_bf16(bf16* dst, const float* src, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  dev::launch(to_bf16_kernel, dev::blocks_for(n, kThreads), kThreads, 0, stream, dev::cast(dst), src, n);
}

void to_float(float* dst, const bf16* src, std::int64_t n, Stream stream) {
  if (n <= 0) return;
  dev::launch(to_float_kernel, dev::blocks_for(n, kThreads), kThreads, 0, stream, dst, dev::cast(src), n);
}

void embedding_forward(bf16* out, const std::int32_t* tokens, const std::int32_t* segments, const bf16* wte,
                       const bf16* wpe, const bf16* wse, int B, int Tn, int C, Stream stream) {
  const std::int64_t n = static_cast<std::int64_t>(B) * Tn * C;
  if (n <= 0) return;
  if (!wse) segments = nullptr;
  dev::launch(embedding_forward_kernel, dev::blocks_for(n, kThreads), kThreads, 0, stream, dev::cast(out), tokens,
              segments, dev::cast(wte), dev::cast(wpe), dev::cast(wse), Tn, C, n);
}

void embedding_backward(float* dwte, float* dwpe, float* dwse, const bf16* dout, const EmbeddingIndex& tokens,
                        const EmbeddingIndex& segments, int B, int Tn, int C, Stream stream) {
  if (B <= 0 || Tn <= 0) return;
  const auto table_backward = [&](float* dtable, const EmbeddingIndex& ix) {
    if (ix.unique <= 0) return;
    const dim3 grid(static_cast<unsigned>(ix.unique), static_cast<unsigned>((C + kThreads - 1) / kThreads));
    dev::launch(embedding_backward_rows_kernel, grid, kThreads, 0, stream, dtable, dev::cast(dout), ix.rows, ix.starts,
                ix.positions, C);
  };
  table_backward(dwte, tokens);
  if (dwse) table_backward(dwse, segments);
  const std::int64_t n = static_cast<std::int64_t>(Tn) * C;
  dev::launch(embedding_backward_wpe_kernel, dev::blocks_for(n, kThreads), kThreads, 0, stream, dwpe, dev::cast(dout),
              B, Tn, C);
}

}  // namespace core::kernels
