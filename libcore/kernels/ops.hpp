// CUDA kernels of the transformer (host-callable, device pointers, asynchronous on `stream`). Each has
// the same meaning as the CPU layer of core::train (train/layers.hpp, train/optimizer.hpp: the one CPU
// reference of each computation), and tests/gpu compares them. Activations and
// the parameter copies the forward pass reads are bf16; statistics, losses, parameter gradients,
// master weights and optimizer moments are fp32; every sum accumulates in fp32. Reductions over rows
// (dw, db) are done in a fixed order, so results are deterministic for a given shape.
// Only available when the build has CUDA (TOOLKIT_HAVE_CUDA).
#pragma once
#include <cstdint>

#include "kernels/bf16.hpp"
#include "kernels/runtime.hpp"

namespace core::kernels {

// AdamW (Loshchilov & Hutter 2019) on fp32 master weights, step >= 1, decoupled weight decay, as
// core::train::adamw_update:
//   g = grad * grad_scale;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   w -= lr * ( (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * w )
// and, when copy is not null, copy[i] = bf16(w[i]) rounded to nearest even.
struct AdamW {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;  // 0 for biases and LayerNorm parameters
  float grad_scale = 1.0f;    // global-norm clipping factor
  int step = 1;
};

// LayerNorm over rows of x [N, C] (as core::train::layernorm_forward). mean/rstd [N] fp32.
void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* x, const bf16* w, const bf16* b, int N,
                       int C, float eps, Stream stream = nullptr);
// Accumulates dx (bf16) += dL/dx, dw (fp32) += dL/dw, db (fp32) += dL/db. C % 8 == 0 (16-byte rows).
void layernorm_backward(bf16* dx, float* dw, float* db, const bf16* dout, const bf16* x, const bf16* w,
                        const float* mean, const float* rstd, int N, int C, Stream stream = nullptr);

// GELU (tanh approximation) element-wise; the backward overwrites din (which may be dout).
void gelu_forward(bf16* out, const bf16* in, std::int64_t n, Stream stream = nullptr);
void gelu_backward(bf16* din, const bf16* in, const bf16* dout, std::int64_t n, Stream stream = nullptr);
// tanh element-wise (BERT's pooler); the backward reads the forward's output: din = (1 - out^2) dout.
void tanh_forward(bf16* out, const bf16* in, std::int64_t n, Stream stream = nullptr);
void tanh_backward(bf16* din, const bf16* out, const bf16* dout, std::int64_t n, Stream stream = nullptr);

// db[c] += sum_n dout[n * ld + c] for c < OC (fp32); ld >= OC. (Bias adds and residual adds are GEMM
// epilogues: gemm.hpp.)
void bias_backward(float* db, const bf16* dout, int N, int OC, int ld, Stream stream = nullptr);

// Fused softmax + cross-entropy over rows of logits [N, ld], vocabulary = first V columns (as
// core::train::softmax_xent_forward then _backward): fp32 losses[N] = logsumexp - logit[target] (0 for
// target < 0), and when dlogits is not null the gradient (softmax - onehot) * scale, 0 on padding
// columns and ignored rows; dlogits may equal logits.
// One block per row; targets must be < V.
void softmax_xent(float* losses, bf16* dlogits, const bf16* logits, const std::int32_t* targets, float scale, int N,
                  int V, int ld, Stream stream = nullptr);

// AdamW step on fp32 master weights with an optional bf16 copy out (formula at AdamW above; the bias
// corrections are computed in double on the host).
void adamw_update(float* w, float* m, float* v, const float* grad, bf16* copy, std::int64_t n, const AdamW& p,
                  Stream stream = nullptr);

// Transformer embeddings (as core::train::embedding_forward): out[b*T + t] = wte[tok] + wpe[t], plus
// wse[seg] when both segments and wse are non-null (BERT; GPT passes nulls), summed in fp32 and
// rounded once to bf16 [B*T, C]; token and segment ids must be valid rows of their tables.
void embedding_forward(bf16* out, const std::int32_t* tokens, const std::int32_t* segments, const bf16* wte,
                       const bf16* wpe, const bf16* wse, int B, int Tn, int C, Stream stream = nullptr);
// Device arrays grouping the positions of a batch by id (uploaded from make_embedding_index,
// embedding_index.hpp): for u < unique, positions[starts[u] .. starts[u+1]) hold id rows[u], in
// increasing order. Lets a table's gradient be summed without atomics, in a fixed order.
struct EmbeddingIndex {
  const std::int32_t* rows = nullptr;       // [unique]
  const std::int32_t* starts = nullptr;     // [unique + 1]
  const std::int32_t* positions = nullptr;  // [B*T]
  int unique = 0;
};
// Accumulates (as core::train::embedding_backward) dwte (fp32 [rows of wte, C]) over the token index,
// dwpe (fp32 [>= T, C]) and, when dwse is not null, dwse (fp32 [segment types, C]) over the segment
// index, from dout bf16 [B*T, C].
void embedding_backward(float* dwte, float* dwpe, float* dwse, const bf16* dout, const EmbeddingIndex& tokens,
                        const EmbeddingIndex& segments, int B, int Tn, int C, Stream stream = nullptr);

// dst = bf16(src) rounded to nearest even, and back.
void to_bf16(bf16* dst, const float* src, std::int64_t n, Stream stream = nullptr);
void to_float(float* dst, const bf16* src, std::int64_t n, Stream stream = nullptr);

// Multi-head attention over packed qkv [B, T, 3C] (as core::train::attention_forward), fused
// (FlashAttention-2 style, attention.cu): out [B, T, C] and, instead of the T x T probabilities, the
// fp32 log-sum-exp of each row's scaled scores lse [B, NH, T] (+inf for a row that sees no key).
// Head size C / NH must be 16, 32, 64 or 128 (otherwise CudaError). No atomics: deterministic.
bool attention_head_dim_supported(int head_dim);
void attention_forward(bf16* out, float* lse, const bf16* qkv, const std::uint8_t* key_mask, bool causal, int B,
                       int Tn, int C, int NH, Stream stream = nullptr);
// dqkv [B, T, 3C] overwritten, from dout and the forward's out and lse (same key_mask and causal).
// `workspace` holds attention_workspace_bytes(B, Tn, NH) (fp32 row sums of dout * out).
std::size_t attention_workspace_bytes(int B, int Tn, int NH);
void attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                        const std::uint8_t* key_mask, bool causal, int B, int Tn, int C, int NH, void* workspace,
                        Stream stream = nullptr);

}  // namespace core::kernels
