// Forward and backward passes of the transformer's layers on the host, over row-major flat
// buffers (N = B*T rows). Templated on the scalar: float is the training path, double drives the
// finite-difference gradient checks. Backward functions ACCUMULATE (+=) into parameter gradients
// (dw, db) so gradient accumulation and weight tying need no extra buffers; activation gradients
// are overwritten unless noted. All loops are deterministic for a fixed thread count (no atomics,
// no unordered reductions), which --resume's bit-identical continuation relies on.
#pragma once
#include <cstdint>

namespace core::train {

// LayerNorm over the last dimension (Ba, Kiros, Hinton 2016): out = (x - mean) * rstd * w + b.
// mean/rstd [N] are saved for the backward pass. dx is accumulated (it feeds a residual stream).
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C, T eps);
template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean,
                        const T* rstd, int N, int C);

// Linear layer with W [OC, C] row-major: out[N, OC] = in[N, C] W^T + b (b may be null).
// Backward: din = dout W (accumulated when accumulate_din), dW += dout^T in, db += colsum(dout).
template <class T>
void linear_forward(T* out, const T* in, const T* w, const T* b, int N, int C, int OC);
template <class T>
void linear_backward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, int N, int C, int OC,
                     bool accumulate_din);

// GELU, tanh approximation (Hendrycks & Gimpel 2016), element-wise over n values.
template <class T>
void gelu_forward(T* out, const T* in, std::int64_t n);
template <class T>
void gelu_backward(T* din, const T* in, const T* dout, std::int64_t n);  // din overwritten

// tanh element-wise (BERT pooler).
template <class T>
void tanh_forward(T* out, const T* in, std::int64_t n);
template <class T>
void tanh_backward(T* din, const T* out, const T* dout, std::int64_t n);

// Multi-head scaled dot-product attention (Vaswani et al. 2017) from packed qkv [N, 3C] (q, k, v
// blocks of C columns, head h at columns h*hd..) to out [N, C]. att [B, NH, T, T] keeps the
// softmax probabilities. causal: query t sees keys <= t. key_mask [B*T] (null: all valid):
// 0 marks a padding key that no query may attend to; every sequence needs one valid key.
template <class T>
void attention_forward(T* out, T* att, const T* qkv, const std::uint8_t* key_mask, bool causal, int B, int Tn,
                       int C, int NH);
// The same attention for M new positions p0..p0+M-1 of one causal sequence, over the keys and values
// of positions 0..p0+M-1 held apart (rows of C, head h at columns h*hd): incremental decoding with a
// key/value cache. q [M, ldq] (head h at columns h*hd), out [M, C]; scores: NH*M*(p0+M) scratch.
template <class T>
void attention_decode(T* out, T* scores, const T* q, int ldq, const T* keys, const T* values, int M, int p0, int C,
                      int NH);
// dqkv overwritten; scratch has B*NH*T*T elements.
template <class T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B, int Tn, int C,
                        int NH);

// out[b,t] = wte[tok] + wpe[t] (+ wse[seg] when wse and seg are non-null). Token ids must be in
// range (checked by the caller).
template <class T>
void embedding_forward(T* out, const std::int32_t* tok, const std::int32_t* seg, const T* wte, const T* wpe,
                       const T* wse, int B, int Tn, int C);
template <class T>
void embedding_backward(T* dwte, T* dwpe, T* dwse, const T* dout, const std::int32_t* tok,
                        const std::int32_t* seg, int B, int Tn, int C);

// Softmax cross-entropy over rows of logits [N, V] (row stride ld), turned into probabilities in
// place. losses[n] = -log p[n, target[n]], 0 for rows with target < 0 (ignored). Returns the
// number of counted rows.
template <class T>
int softmax_xent_forward(T* logits, T* losses, const std::int32_t* targets, int N, int V, int ld);
// probs -> dlogits in place: (p - onehot(target)) * scale; ignored rows become 0.
template <class T>
void softmax_xent_backward(T* probs, const std::int32_t* targets, T scale, int N, int V, int ld);

// a[i] += b[i].
template <class T>
void add_inplace(T* a, const T* b, std::int64_t n);

}  // namespace core::train
