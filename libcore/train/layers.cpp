// Host forward/backward of the transformer layers (see layers.hpp for the contracts). Element-wise
// maths goes through Eigen arrays (vectorised exp/tanh for float); products through gemm().
// Parallel loops split rows (or, for parameter-gradient sums, columns) into fixed contiguous
// ranges, so every sum runs in the same order whatever the thread count.
#include "train/layers.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "train/gemm.hpp"

namespace core::train {

namespace {

template <class T>
using Arr = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using CArr = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// A parallel region pays off only above ~1 ms of serial work: waking the second thread costs
// microseconds on an idle machine but milliseconds on a busy one (measured: a 0.25 ms LayerNorm
// took 9 ms with 2 threads under load). Work is counted in rough element-operations.
constexpr double kParallelWork = double(1 << 21);

// Calls f(begin, end) on contiguous sub-ranges of [0, n), one per thread. (The workers' GEMM FLOPs count
// as the calling thread's: thread_gemm_flops.)
template <class F>
void parallel_ranges(std::int64_t n, double cost_per_item, F&& f) {
#ifdef _OPENMP
  if (double(n) * cost_per_item >= kParallelWork && omp_get_max_threads() > 1 && !omp_in_parallel()) {
    std::atomic<std::uint64_t>* const flops = thread_gemm_flop_counter();
#pragma omp parallel
    {
      const GemmFlopsInto count(flops);
      const std::int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      f(n * t / nt, n * (t + 1) / nt);
    }
    return;
  }
#endif
  f(std::int64_t{0}, n);
}

// Calls f(i) for every i in [0, n), spread over threads (independent iterations only) when the
// total work (n * cost_per_item, ~flops) pays for a parallel region.
template <class F>
void parallel_for(int n, double cost_per_item, F&& f) {
#ifdef _OPENMP
  std::atomic<std::uint64_t>* const flops = thread_gemm_flop_counter();
#pragma omp parallel if (n > 1 && double(n) * cost_per_item >= kParallelWork && !omp_in_parallel())
  {
    const GemmFlopsInto count(flops);
#pragma omp for schedule(static)
    for (int i = 0; i < n; ++i) f(i);
  }
#else
  for (int i = 0; i < n; ++i) f(i);
#endif
}

}  // namespace

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C, T eps) {
  const CArr<T> wv(w, C), bv(b, C);
  parallel_for(N, 2.0 * C, [&](int n) {
    const CArr<T> xr(x + std::int64_t{n} * C, C);
    const T m = xr.sum() / C;
    const T var = (xr - m).square().sum() / C;
    const T r = T(1) / std::sqrt(var + eps);
    Arr<T>(out + std::int64_t{n} * C, C) = (xr - m) * r * wv + bv;
    mean[n] = m;
    rstd[n] = r;
  });
}

template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean,
                        const T* rstd, int N, int C) {
  const CArr<T> wv(w, C);
  parallel_for(N, 3.0 * C, [&](int n) {
    const CArr<T> xr(x + std::int64_t{n} * C, C), dr(dout + std::int64_t{n} * C, C);
    const auto xhat = (xr - mean[n]) * rstd[n];
    const auto dnorm = dr * wv;
    const T dnorm_mean = dnorm.sum() / C;
    const T dnorm_xhat_mean = (dnorm * xhat).sum() / C;
    Arr<T>(dx + std::int64_t{n} * C, C) += (dnorm - dnorm_mean - xhat * dnorm_xhat_mean) * rstd[n];
  });
  parallel_ranges(C, 2.0 * N, [&](std::int64_t c0, std::int64_t c1) {
    const int len = static_cast<int>(c1 - c0);
    if (len == 0) return;
    Arr<T> dwv(dw + c0, len), dbv(db + c0, len);
    for (int n = 0; n < N; ++n) {
      const CArr<T> xr(x + std::int64_t{n} * C + c0, len), dr(dout + std::int64_t{n} * C + c0, len);
      dwv += dr * (xr - mean[n]) * rstd[n];
      dbv += dr;
    }
  });
}

template <class T>
void linear_forward(T* out, const T* in, const T* w, const T* b, int N, int C, int OC) {
  gemm<T>(false, true, N, OC, C, T(1), in, C, w, C, T(0), out, OC, b);
}

template <class T>
void linear_backward(T* din, T* dw, T* db, const T* dout, const T* in, const T* w, int N, int C, int OC,
                     bool accumulate_din) {
  gemm<T>(false, false, N, C, OC, T(1), dout, OC, w, C, accumulate_din ? T(1) : T(0), din, C);
  gemm<T>(true, false, OC, C, N, T(1), dout, OC, in, C, T(1), dw, C);
  if (db) {
    parallel_ranges(OC, 1.0 * N, [&](std::int64_t c0, std::int64_t c1) {
      const int len = static_cast<int>(c1 - c0);
      if (len == 0) return;
      Arr<T> dbv(db + c0, len);
      for (int n = 0; n < N; ++n) dbv += CArr<T>(dout + std::int64_t{n} * OC + c0, len);
    });
  }
}

namespace {
constexpr double kGeluS = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluA = 0.044715;
}  // namespace

template <class T>
void gelu_forward(T* out, const T* in, std::int64_t n) {
  parallel_ranges(n, 8.0, [&](std::int64_t i0, std::int64_t i1) {
    const CArr<T> x(in + i0, i1 - i0);
    const auto th = (T(kGeluS) * (x + T(kGeluA) * x.cube())).tanh();
    Arr<T>(out + i0, i1 - i0) = T(0.5) * x * (T(1) + th);
  });
}

template <class T>
void gelu_backward(T* din, const T* in, const T* dout, std::int64_t n) {
  parallel_ranges(n, 12.0, [&](std::int64_t i0, std::int64_t i1) {
    const CArr<T> x(in + i0, i1 - i0), d(dout + i0, i1 - i0);
    const Eigen::Array<T, Eigen::Dynamic, 1> th = (T(kGeluS) * (x + T(kGeluA) * x.cube())).tanh();
    const auto sech2 = T(1) - th.square();
    const auto local = T(0.5) * (T(1) + th) + T(0.5) * x * sech2 * T(kGeluS) * (T(1) + T(3 * kGeluA) * x.square());
    Arr<T>(din + i0, i1 - i0) = local * d;
  });
}

template <class T>
void tanh_forward(T* out, const T* in, std::int64_t n) {
  Arr<T>(out, n) = CArr<T>(in, n).tanh();
}

template <class T>
void tanh_backward(T* din, const T* out, const T* dout, std::int64_t n) {
  Arr<T>(din, n) = (T(1) - CArr<T>(out, n).square()) * CArr<T>(dout, n);
}

template <class T>
void attention_forward(T* out, T* att, const T* qkv, const std::uint8_t* key_mask, bool causal, int B, int Tn,
                       int C, int NH) {
  const int hd = C / NH, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(hd));
  parallel_for(B * NH, 4.0 * Tn * Tn * hd, [&](int bh) {
    const int b = bh / NH, h = bh % NH;
    const T* q = qkv + std::int64_t{b} * Tn * C3 + h * hd;
    T* S = att + std::int64_t{bh} * Tn * Tn;
    gemm<T>(false, true, Tn, Tn, hd, scale, q, C3, q + C, C3, T(0), S, Tn);
    const std::uint8_t* km = key_mask ? key_mask + std::int64_t{b} * Tn : nullptr;
    for (int t = 0; t < Tn; ++t) {
      T* row = S + std::int64_t{t} * Tn;
      const int kend = causal ? t + 1 : Tn;
      if (km) {
        for (int k = 0; k < kend; ++k)
          if (!km[k]) row[k] = -std::numeric_limits<T>::infinity();
      }
      Arr<T> r(row, kend);
      const T mx = r.maxCoeff();
      if (!(mx > -std::numeric_limits<T>::infinity())) {  // no valid key: attend to nothing
        Arr<T>(row, Tn).setZero();
        continue;
      }
      r = (r - mx).exp();
      if (km) {  // Eigen's vectorised exp(-inf) is a denormal, not 0: masked keys get exactly 0
        for (int k = 0; k < kend; ++k)
          if (!km[k]) row[k] = T(0);
      }
      r /= r.sum();
      for (int k = kend; k < Tn; ++k) row[k] = T(0);
    }
    gemm<T>(false, false, Tn, hd, Tn, T(1), S, Tn, q + 2 * C, C3, T(0), out + std::int64_t{b} * Tn * C + h * hd, C);
  });
}

template <class T>
void attention_decode(T* out, T* scores, const T* q, int ldq, const T* keys, const T* values, int M, int p0, int C,
                      int NH) {
  const int hd = C / NH, L = p0 + M;
  const T scale = T(1) / std::sqrt(T(hd));
  parallel_for(NH, 4.0 * M * L * hd, [&](int h) {
    T* S = scores + std::int64_t{h} * M * L;
    gemm<T>(false, true, M, L, hd, scale, q + h * hd, ldq, keys + h * hd, C, T(0), S, L);
    for (int i = 0; i < M; ++i) {
      T* row = S + std::int64_t{i} * L;
      const int kend = p0 + i + 1;  // position p0 + i sees keys <= itself
      Arr<T> r(row, kend);
      r = (r - r.maxCoeff()).exp();
      r /= r.sum();
      for (int k = kend; k < L; ++k) row[k] = T(0);
    }
    gemm<T>(false, false, M, hd, L, T(1), S, L, values + h * hd, C, T(0), out + h * hd, C);
  });
}

template <class T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int B, int Tn, int C,
                        int NH) {
  const int hd = C / NH, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(hd));
  parallel_for(B * NH, 4.0 * Tn * Tn * hd, [&](int bh) {
    const int b = bh / NH, h = bh % NH;
    const T* q = qkv + std::int64_t{b} * Tn * C3 + h * hd;
    T* dq = dqkv + std::int64_t{b} * Tn * C3 + h * hd;
    const T* P = att + std::int64_t{bh} * Tn * Tn;
    T* dP = scratch + std::int64_t{bh} * Tn * Tn;
    const T* dO = dout + std::int64_t{b} * Tn * C + h * hd;
    gemm<T>(false, true, Tn, Tn, hd, T(1), dO, C, q + 2 * C, C3, T(0), dP, Tn);   // dP = dO V^T
    gemm<T>(true, false, Tn, hd, Tn, T(1), P, Tn, dO, C, T(0), dq + 2 * C, C3);   // dV = P^T dO
    for (int t = 0; t < Tn; ++t) {                                                  // dS = P (dP - <P, dP>)
      const CArr<T> p(P + std::int64_t{t} * Tn, Tn);
      Arr<T> d(dP + std::int64_t{t} * Tn, Tn);
      const T dot = (p * d).sum();
      d = p * (d - dot) * scale;
    }
    gemm<T>(false, false, Tn, hd, Tn, T(1), dP, Tn, q + C, C3, T(0), dq, C3);       // dQ = dS K
    gemm<T>(true, false, Tn, hd, Tn, T(1), dP, Tn, q, C3, T(0), dq + C, C3);        // dK = dS^T Q
  });
}

template <class T>
void embedding_forward(T* out, const std::int32_t* tok, const std::int32_t* seg, const T* wte, const T* wpe,
                       const T* wse, int B, int Tn, int C) {
  parallel_for(B * Tn, 1.0 * C, [&](int n) {
    const int t = n % Tn;
    Arr<T> o(out + std::int64_t{n} * C, C);
    o = CArr<T>(wte + std::int64_t{tok[n]} * C, C) + CArr<T>(wpe + std::int64_t{t} * C, C);
    if (wse && seg) o += CArr<T>(wse + std::int64_t{seg[n]} * C, C);
  });
}

template <class T>
void embedding_backward(T* dwte, T* dwpe, T* dwse, const T* dout, const std::int32_t* tok,
                        const std::int32_t* seg, int B, int Tn, int C) {
  parallel_ranges(C, 2.0 * B * Tn, [&](std::int64_t c0, std::int64_t c1) {
    const int len = static_cast<int>(c1 - c0);
    if (len == 0) return;
    for (int n = 0; n < B * Tn; ++n) {
      const CArr<T> d(dout + std::int64_t{n} * C + c0, len);
      Arr<T>(dwte + std::int64_t{tok[n]} * C + c0, len) += d;
      Arr<T>(dwpe + std::int64_t{n % Tn} * C + c0, len) += d;
      if (dwse && seg) Arr<T>(dwse + std::int64_t{seg[n]} * C + c0, len) += d;
    }
  });
}

template <class T>
int softmax_xent_forward(T* logits, T* losses, const std::int32_t* targets, int N, int V, int ld) {
  parallel_for(N, 20.0 * V, [&](int n) {
    Arr<T> r(logits + std::int64_t{n} * ld, V);
    const T mx = r.maxCoeff();
    const int tgt = targets ? targets[n] : -1;
    const T target_logit = tgt >= 0 ? r[tgt] - mx : T(0);
    r = (r - mx).exp();
    const T sum = r.sum();
    losses[n] = tgt >= 0 ? std::log(sum) - target_logit : T(0);
    r /= sum;
  });
  int count = 0;
  for (int n = 0; n < N; ++n) count += (targets && targets[n] >= 0) ? 1 : 0;
  return count;
}

template <class T>
void softmax_xent_backward(T* probs, const std::int32_t* targets, T scale, int N, int V, int ld) {
  parallel_for(N, 2.0 * V, [&](int n) {
    Arr<T> r(probs + std::int64_t{n} * ld, V);
    const int tgt = targets[n];
    if (tgt < 0) {
      r.setZero();
      return;
    }
    r[tgt] -= T(1);
    r *= scale;
  });
}

template <class T>
void add_inplace(T* a, const T* b, std::int64_t n) {
  parallel_ranges(n, 0.5, [&](std::int64_t i0, std::int64_t i1) { Arr<T>(a + i0, i1 - i0) += CArr<T>(b + i0, i1 - i0); });
}

#define CORE_TRAIN_LAYERS(T)                                                                                  \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, T);                  \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int, int); \
  template void linear_forward<T>(T*, const T*, const T*, const T*, int, int, int);                           \
  template void linear_backward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, int, bool);            \
  template void gelu_forward<T>(T*, const T*, std::int64_t);                                                  \
  template void gelu_backward<T>(T*, const T*, const T*, std::int64_t);                                       \
  template void tanh_forward<T>(T*, const T*, std::int64_t);                                                  \
  template void tanh_backward<T>(T*, const T*, const T*, std::int64_t);                                       \
  template void attention_forward<T>(T*, T*, const T*, const std::uint8_t*, bool, int, int, int, int);        \
  template void attention_decode<T>(T*, T*, const T*, int, const T*, const T*, int, int, int, int);           \
  template void attention_backward<T>(T*, T*, const T*, const T*, const T*, int, int, int, int);              \
  template void embedding_forward<T>(T*, const std::int32_t*, const std::int32_t*, const T*, const T*,        \
                                     const T*, int, int, int);                                                \
  template void embedding_backward<T>(T*, T*, T*, const T*, const std::int32_t*, const std::int32_t*, int,    \
                                      int, int);                                                              \
  template int softmax_xent_forward<T>(T*, T*, const std::int32_t*, int, int, int);                           \
  template void softmax_xent_backward<T>(T*, const std::int32_t*, T, int, int, int);                          \
  template void add_inplace<T>(T*, const T*, std::int64_t);

CORE_TRAIN_LAYERS(float)
CORE_TRAIN_LAYERS(double)

}  // namespace core::train
