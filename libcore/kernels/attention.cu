// Multi-head attention on the GPU (ops.hpp): heads are split out of the packed qkv into [B, NH, T, hd]
// tensors, scores and weighted sums are strided-batched cuBLAS products (bf16 in, fp32 accumulation;
// the 1/sqrt(hd) scale folded into the products' alpha), and the masked softmax and its backward are
// fused one-warp-per-row kernels. Scores are kept in fp32 until the softmax; probabilities in bf16.
#include "kernels/device_utils.cuh"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"

namespace core::kernels {
namespace {

using dev::bf;
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

// dst [B, NH, T, hd] <- columns [offset, offset + C) of src rows [B*T, ld].
__global__ void split_heads_kernel(bf* dst, const bf* src, int B, int Tn, int NH, int hd, int ld, int offset) {
  const std::int64_t n = static_cast<std::int64_t>(B) * NH * Tn * hd;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int d = i % hd, t = (i / hd) % Tn, h = (i / (static_cast<std::int64_t>(hd) * Tn)) % NH;
    const std::int64_t b = i / (static_cast<std::int64_t>(hd) * Tn * NH);
    dst[i] = src[(b * Tn + t) * ld + offset + h * hd + d];
  }
}

// Columns [offset, offset + C) of dst rows [B*T, ld] <- src [B, NH, T, hd].
__global__ void merge_heads_kernel(bf* dst, const bf* src, int B, int Tn, int NH, int hd, int ld, int offset) {
  const std::int64_t n = static_cast<std::int64_t>(B) * NH * Tn * hd;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int d = i % hd, t = (i / hd) % Tn, h = (i / (static_cast<std::int64_t>(hd) * Tn)) % NH;
    const std::int64_t b = i / (static_cast<std::int64_t>(hd) * Tn * NH);
    dst[(b * Tn + t) * ld + offset + h * hd + d] = src[i];
  }
}

__device__ inline bool visible(const std::uint8_t* key_mask, bool causal, std::int64_t b, int Tn, int t, int j) {
  return (!causal || j <= t) && (!key_mask || key_mask[b * Tn + j] != 0);
}

// att row (b, h, t) = softmax over the visible keys of the (already scaled) scores; 0 elsewhere.
__global__ void softmax_forward_kernel(bf* att, const float* scores, const std::uint8_t* key_mask, bool causal,
                                       int rows, int Tn, int NH) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int t = row % Tn;
  const std::int64_t b = row / Tn / NH;
  const float* s = scores + static_cast<std::int64_t>(row) * Tn;
  float m = -INFINITY;
  for (int j = lane; j < Tn; j += 32)
    if (visible(key_mask, causal, b, Tn, t, j)) m = fmaxf(m, s[j]);
  m = dev::warp_max(m);
  float sum = 0.0f;
  for (int j = lane; j < Tn; j += 32)
    if (visible(key_mask, causal, b, Tn, t, j)) sum += expf(s[j] - m);
  sum = dev::warp_sum(sum);
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  bf* a = att + static_cast<std::int64_t>(row) * Tn;
  for (int j = lane; j < Tn; j += 32)
    a[j] = __float2bfloat16(visible(key_mask, causal, b, Tn, t, j) ? expf(s[j] - m) * inv : 0.0f);
}

// dscores = att * (datt - sum_j att_j datt_j) per row (masked entries have att = 0).
__global__ void softmax_backward_kernel(bf* dscores, const bf* att, const float* datt, int rows, int Tn) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const std::int64_t base = static_cast<std::int64_t>(row) * Tn;
  float dot = 0.0f;
  for (int j = lane; j < Tn; j += 32) dot += __bfloat162float(att[base + j]) * datt[base + j];
  dot = dev::warp_sum(dot);
  for (int j = lane; j < Tn; j += 32)
    dscores[base + j] = __float2bfloat16(__bfloat162float(att[base + j]) * (datt[base + j] - dot));
}

// Carves the workspace into 256-byte aligned pieces.
class Carver {
 public:
  explicit Carver(void* base) : p_(static_cast<char*>(base)) {}
  template <class T>
  T* take(std::size_t n) {
    T* r = reinterpret_cast<T*>(p_ + used_);
    used_ += (n * sizeof(T) + 255) / 256 * 256;
    return r;
  }
  std::size_t used() const { return used_; }

 private:
  char* p_;
  std::size_t used_ = 0;
};

struct Shapes {
  int B, Tn, C, NH, hd;
  std::size_t btc() const { return static_cast<std::size_t>(B) * Tn * C; }
  std::size_t scores() const { return static_cast<std::size_t>(B) * NH * Tn * Tn; }
  int batches() const { return B * NH; }
  long long head_stride() const { return static_cast<long long>(Tn) * hd; }
  long long score_stride() const { return static_cast<long long>(Tn) * Tn; }
};

// Backward layout (the forward uses a prefix of the same pieces: q, k, v, y = dy, scores = datt).
struct Workspace {
  bf16 *q, *k, *v, *dy, *dq, *dk, *dv, *dscores;
  float* scores;
  Workspace(void* base, const Shapes& s) {
    Carver c(base);
    q = c.take<bf16>(s.btc()), k = c.take<bf16>(s.btc()), v = c.take<bf16>(s.btc()), dy = c.take<bf16>(s.btc());
    scores = c.take<float>(s.scores());
    dq = c.take<bf16>(s.btc()), dk = c.take<bf16>(s.btc()), dv = c.take<bf16>(s.btc());
    dscores = c.take<bf16>(s.scores());
  }
};

void check_heads(int C, int NH) {
  if (NH <= 0 || C % NH != 0)
    throw CudaError("attention: n_head " + std::to_string(NH) + " does not divide width " + std::to_string(C));
}

void split(bf16* dst, const bf16* src, const Shapes& s, int ld, int offset, Stream stream) {
  split_heads_kernel<<<dev::blocks_for(s.btc(), kThreads), kThreads, 0, stream>>>(dev::cast(dst), dev::cast(src), s.B,
                                                                                  s.Tn, s.NH, s.hd, ld, offset);
  CUDA_CHECK_LAUNCH();
}

void merge(bf16* dst, const bf16* src, const Shapes& s, int ld, int offset, Stream stream) {
  merge_heads_kernel<<<dev::blocks_for(s.btc(), kThreads), kThreads, 0, stream>>>(dev::cast(dst), dev::cast(src), s.B,
                                                                                  s.Tn, s.NH, s.hd, ld, offset);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

std::size_t attention_workspace_bytes(int B, int Tn, int C, int NH) {
  check_heads(C, NH);
  const Shapes s{B, Tn, C, NH, C / NH};
  Carver c(nullptr);
  for (int i = 0; i < 7; ++i) c.take<bf16>(s.btc());
  c.take<float>(s.scores());
  c.take<bf16>(s.scores());
  return c.used();
}

void attention_forward(Blas& blas, bf16* out, bf16* att, const bf16* qkv, const std::uint8_t* key_mask, bool causal,
                       int B, int Tn, int C, int NH, void* workspace, Stream stream) {
  check_heads(C, NH);
  const Shapes s{B, Tn, C, NH, C / NH};
  const Workspace ws(workspace, s);
  for (int part = 0; part < 3; ++part) split(part == 0 ? ws.q : part == 1 ? ws.k : ws.v, qkv, s, 3 * C, part * C, stream);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
  // scores = scale * q k^T, per (b, h): [T, hd] x [T, hd]^T.
  gemm_batched(blas, false, true, Tn, Tn, s.hd, scale, ws.q, s.hd, s.head_stride(), ws.k, s.hd, s.head_stride(), 0.0f,
               ws.scores, Tn, s.score_stride(), s.batches(), stream);
  const int rows = s.batches() * Tn;
  softmax_forward_kernel<<<(rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kThreads, 0, stream>>>(
      dev::cast(att), ws.scores, key_mask, causal, rows, Tn, NH);
  CUDA_CHECK_LAUNCH();
  // y = att v: [T, T] x [T, hd], into dy's slot, then back to [B, T, C].
  gemm_batched(blas, false, false, Tn, s.hd, Tn, 1.0f, att, Tn, s.score_stride(), ws.v, s.hd, s.head_stride(), 0.0f,
               ws.dy, s.hd, s.head_stride(), s.batches(), stream);
  merge(out, ws.dy, s, C, 0, stream);
}

void attention_backward(Blas& blas, bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* att, int B, int Tn,
                        int C, int NH, void* workspace, Stream stream) {
  check_heads(C, NH);
  const Shapes s{B, Tn, C, NH, C / NH};
  const Workspace ws(workspace, s);
  for (int part = 0; part < 3; ++part) split(part == 0 ? ws.q : part == 1 ? ws.k : ws.v, qkv, s, 3 * C, part * C, stream);
  split(ws.dy, dout, s, C, 0, stream);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
  // datt = dy v^T (fp32); dv = att^T dy.
  gemm_batched(blas, false, true, Tn, Tn, s.hd, 1.0f, ws.dy, s.hd, s.head_stride(), ws.v, s.hd, s.head_stride(), 0.0f,
               ws.scores, Tn, s.score_stride(), s.batches(), stream);
  gemm_batched(blas, true, false, Tn, s.hd, Tn, 1.0f, att, Tn, s.score_stride(), ws.dy, s.hd, s.head_stride(), 0.0f,
               ws.dv, s.hd, s.head_stride(), s.batches(), stream);
  const int rows = s.batches() * Tn;
  softmax_backward_kernel<<<(rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kThreads, 0, stream>>>(
      dev::cast(ws.dscores), dev::cast(att), ws.scores, rows, Tn);
  CUDA_CHECK_LAUNCH();
  // dq = scale * dscores k; dk = scale * dscores^T q.
  gemm_batched(blas, false, false, Tn, s.hd, Tn, scale, ws.dscores, Tn, s.score_stride(), ws.k, s.hd, s.head_stride(),
               0.0f, ws.dq, s.hd, s.head_stride(), s.batches(), stream);
  gemm_batched(blas, true, false, Tn, s.hd, Tn, scale, ws.dscores, Tn, s.score_stride(), ws.q, s.hd, s.head_stride(),
               0.0f, ws.dk, s.hd, s.head_stride(), s.batches(), stream);
  merge(dqkv, ws.dq, s, 3 * C, 0, stream);
  merge(dqkv, ws.dk, s, 3 * C, C, stream);
  merge(dqkv, ws.dv, s, 3 * C, 2 * C, stream);
}

}  // namespace core::kernels
