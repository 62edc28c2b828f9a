// CPU reference implementations of the CUDA kernels (ops.hpp, gemm.hpp), one per kernel with the
// same meaning, over row-major host buffers. Templated on the scalar (float: the reference the GPU
// tests compare against; double: finite-difference checks). Straightforward loops, accumulating in
// double where a sum runs over a whole row or column, so they are references, not fast paths.
// Conventions follow core::train's layers (layers.hpp): N = B*T rows, C channels, weights [OC, C].
#pragma once
#include <cstdint>

#include "kernels/bf16.hpp"

namespace core::kernels {

// AdamW (Loshchilov & Hutter 2019) on fp32 master weights, step t >= 1, decoupled weight decay:
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

}  // namespace core::kernels

namespace core::kernels::ref {

// LayerNorm (Ba et al. 2016) over rows of x [N, C]: out = (x - mean) * rstd * w + b, rstd =
// 1/sqrt(var + eps) with the biased variance; mean/rstd [N] saved for the backward pass.
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C, T eps);
// Accumulates: dx += dL/dx, dw += dL/dw, db += dL/db.
template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean,
                        const T* rstd, int N, int C);

// GELU, tanh approximation (Hendrycks & Gimpel 2016):
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class T>
void gelu_forward(T* out, const T* in, std::int64_t n);
template <class T>
void gelu_backward(T* din, const T* in, const T* dout, std::int64_t n);  // din overwritten

// Multi-head scaled dot-product attention (Vaswani et al. 2017) from packed qkv [B, T, 3C] (q, k, v
// blocks of C columns; head h uses columns h*hd .. (h+1)*hd - 1 of each, hd = C / NH) to out [B, T, C].
// att [B, NH, T, T] receives the probabilities softmax(q k^T / sqrt(hd)) over the keys a query may
// see: keys j <= t when causal, and only keys with key_mask[b*T + j] != 0 (key_mask may be null).
// Entries of keys it may not see are 0; a query with no visible key gets an all-zero row and out 0.
template <class T>
void attention_forward(T* out, T* att, const T* qkv, const std::uint8_t* key_mask, bool causal, int B, int Tn,
                       int C, int NH);
// dqkv [B, T, 3C] overwritten with the gradient through q, k and v.
template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int Tn, int C, int NH);

// Softmax cross-entropy over rows of logits [N, ld] (the first V columns are the vocabulary, the rest
// padding). losses[n] = logsumexp(logits[n, :V]) - logits[n, target[n]]; rows with target < 0 are
// ignored (loss 0, gradient 0). When dlogits is not null it receives (softmax - onehot) * scale over
// the first V columns and 0 over the padding; dlogits may equal logits (in place). Returns the number
// of rows that count. Targets >= V are the caller's error (checked by the caller).
template <class T>
int softmax_xent(T* losses, T* dlogits, const T* logits, const std::int32_t* targets, T scale, int N, int V,
                 int ld);

// out[n, c] += bias[c] over [N, OC].
template <class T>
void add_bias(T* out, const T* bias, int N, int OC);
// db[c] += sum_n dout[n, c] over [N, OC].
template <class T>
void bias_backward(T* db, const T* dout, int N, int OC);
// out[i] = a[i] + b[i] (out may equal a or b).
template <class T>
void residual_add(T* out, const T* a, const T* b, std::int64_t n);

// Row-major C[M, N] = alpha op(A) op(B) + beta C (+ bias[N] per row when bias is not null), op(X) = X
// or X^T; A is [M, K] (trans_a: [K, M]) with row stride lda, likewise B. Accumulates in double.
template <class T>
void matmul(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
            T beta, T* C, int ldc, const T* bias);

// AdamW step (formula at AdamW above).
void adamw_update(float* w, float* m, float* v, const float* grad, bf16* copy, std::int64_t n, const AdamW& p);

}  // namespace core::kernels::ref
