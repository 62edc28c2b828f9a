// CPU reference kernels (see reference.hpp). Plain loops; row and column sums accumulate in double.
#include "kernels/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace core::kernels::ref {

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* w, const T* b, int N, int C, T eps) {
  for (int n = 0; n < N; ++n) {
    const T* xr = x + static_cast<std::int64_t>(n) * C;
    double s = 0;
    for (int c = 0; c < C; ++c) s += xr[c];
    const double mu = s / C;
    double v = 0;
    for (int c = 0; c < C; ++c) v += (xr[c] - mu) * (xr[c] - mu);
    const double rs = 1.0 / std::sqrt(v / C + static_cast<double>(eps));
    T* o = out + static_cast<std::int64_t>(n) * C;
    for (int c = 0; c < C; ++c) o[c] = static_cast<T>((xr[c] - mu) * rs * w[c] + b[c]);
    mean[n] = static_cast<T>(mu);
    rstd[n] = static_cast<T>(rs);
  }
}

template <class T>
void layernorm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w, const T* mean,
                        const T* rstd, int N, int C) {
  std::vector<double> dw_acc(C, 0.0), db_acc(C, 0.0);
  for (int n = 0; n < N; ++n) {
    const std::int64_t row = static_cast<std::int64_t>(n) * C;
    const double mu = mean[n], rs = rstd[n];
    // dxhat = dout * w; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
    double mean_d = 0, mean_dx = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[row + c] - mu) * rs;
      const double d = static_cast<double>(dout[row + c]) * w[c];
      mean_d += d;
      mean_dx += d * xhat;
      dw_acc[c] += static_cast<double>(dout[row + c]) * xhat;
      db_acc[c] += dout[row + c];
    }
    mean_d /= C;
    mean_dx /= C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[row + c] - mu) * rs;
      const double d = static_cast<double>(dout[row + c]) * w[c];
      dx[row + c] = static_cast<T>(dx[row + c] + rs * (d - mean_d - xhat * mean_dx));
    }
  }
  for (int c = 0; c < C; ++c) {
    dw[c] = static_cast<T>(dw[c] + dw_acc[c]);
    db[c] = static_cast<T>(db[c] + db_acc[c]);
  }
}

namespace {
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
}

template <class T>
void gelu_forward(T* out, const T* in, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = in[i];
    out[i] = static_cast<T>(0.5 * x * (1.0 + std::tanh(kGeluScale * (x + 0.044715 * x * x * x))));
  }
}

template <class T>
void gelu_backward(T* din, const T* in, const T* dout, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = in[i];
    const double u = kGeluScale * (x + 0.044715 * x * x * x);
    const double th = std::tanh(u);
    const double du = kGeluScale * (1.0 + 3.0 * 0.044715 * x * x);
    const double grad = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * du;
    din[i] = static_cast<T>(grad * dout[i]);
  }
}

namespace {

// True when query t may attend key j.
bool visible(const std::uint8_t* key_mask, bool causal, int b, int Tn, int t, int j) {
  if (causal && j > t) return false;
  return !key_mask || key_mask[static_cast<std::int64_t>(b) * Tn + j] != 0;
}

}  // namespace

template <class T>
void attention_forward(T* out, T* att, const T* qkv, const std::uint8_t* key_mask, bool causal, int B, int Tn,
                       int C, int NH) {
  const int hd = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const std::int64_t C3 = 3 * static_cast<std::int64_t>(C);
  std::vector<double> logits(Tn);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < Tn; ++t) {
        const T* q = qkv + (static_cast<std::int64_t>(b) * Tn + t) * C3 + h * hd;
        T* a = att + ((static_cast<std::int64_t>(b) * NH + h) * Tn + t) * Tn;
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < Tn; ++j) {
          if (!visible(key_mask, causal, b, Tn, t, j)) continue;
          const T* k = qkv + (static_cast<std::int64_t>(b) * Tn + j) * C3 + C + h * hd;
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * k[d];
          logits[j] = dot * scale;
          mx = std::max(mx, logits[j]);
        }
        double sum = 0;
        for (int j = 0; j < Tn; ++j)
          if (visible(key_mask, causal, b, Tn, t, j)) sum += std::exp(logits[j] - mx);
        for (int j = 0; j < Tn; ++j)
          a[j] = visible(key_mask, causal, b, Tn, t, j) ? static_cast<T>(std::exp(logits[j] - mx) / sum) : T(0);
        T* o = out + (static_cast<std::int64_t>(b) * Tn + t) * C + h * hd;
        for (int d = 0; d < hd; ++d) {
          double acc = 0;
          for (int j = 0; j < Tn; ++j)
            acc += static_cast<double>(a[j]) * qkv[(static_cast<std::int64_t>(b) * Tn + j) * C3 + 2 * C + h * hd + d];
          o[d] = static_cast<T>(acc);
        }
      }
}

template <class T>
void attention_backward(T* dqkv, const T* dout, const T* qkv, const T* att, int B, int Tn, int C, int NH) {
  const int hd = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  const std::int64_t C3 = 3 * static_cast<std::int64_t>(C);
  std::fill(dqkv, dqkv + static_cast<std::int64_t>(B) * Tn * C3, T(0));
  std::vector<double> datt(Tn), dpre(Tn);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < Tn; ++t) {
        const std::int64_t qrow = (static_cast<std::int64_t>(b) * Tn + t) * C3;
        const T* a = att + ((static_cast<std::int64_t>(b) * NH + h) * Tn + t) * Tn;
        const T* dy = dout + (static_cast<std::int64_t>(b) * Tn + t) * C + h * hd;
        // out[t] = sum_j a[j] v[j]: datt[j] = dy . v[j], dv[j] += a[j] dy.
        double dot_sum = 0;
        for (int j = 0; j < Tn; ++j) {
          const std::int64_t jrow = (static_cast<std::int64_t>(b) * Tn + j) * C3;
          double acc = 0;
          for (int d = 0; d < hd; ++d) {
            acc += static_cast<double>(dy[d]) * qkv[jrow + 2 * C + h * hd + d];
            dqkv[jrow + 2 * C + h * hd + d] += static_cast<T>(static_cast<double>(a[j]) * dy[d]);
          }
          datt[j] = acc;
          dot_sum += acc * a[j];
        }
        // Softmax backward: dpre[j] = a[j] (datt[j] - sum_k a[k] datt[k]), then the 1/sqrt(hd) scale.
        for (int j = 0; j < Tn; ++j) dpre[j] = a[j] * (datt[j] - dot_sum) * scale;
        for (int j = 0; j < Tn; ++j) {
          if (dpre[j] == 0) continue;
          const std::int64_t jrow = (static_cast<std::int64_t>(b) * Tn + j) * C3;
          for (int d = 0; d < hd; ++d) {
            dqkv[qrow + h * hd + d] += static_cast<T>(dpre[j] * qkv[jrow + C + h * hd + d]);
            dqkv[jrow + C + h * hd + d] += static_cast<T>(dpre[j] * qkv[qrow + h * hd + d]);
          }
        }
      }
}

template <class T>
int softmax_xent(T* losses, T* dlogits, const T* logits, const std::int32_t* targets, T scale, int N, int V,
                 int ld) {
  int counted = 0;
  for (int n = 0; n < N; ++n) {
    const T* x = logits + static_cast<std::int64_t>(n) * ld;
    const int target = targets[n];
    double mx = -std::numeric_limits<double>::infinity();
    for (int j = 0; j < V; ++j) mx = std::max(mx, static_cast<double>(x[j]));
    double sum = 0;
    for (int j = 0; j < V; ++j) sum += std::exp(x[j] - mx);
    const bool counts = target >= 0;
    counted += counts;
    losses[n] = counts ? static_cast<T>(std::log(sum) + mx - x[target]) : T(0);
    if (!dlogits) continue;
    T* d = dlogits + static_cast<std::int64_t>(n) * ld;
    for (int j = 0; j < V; ++j) {
      const double p = std::exp(x[j] - mx) / sum;
      d[j] = counts ? static_cast<T>((p - (j == target ? 1.0 : 0.0)) * scale) : T(0);
    }
    for (int j = V; j < ld; ++j) d[j] = T(0);
  }
  return counted;
}

template <class T>
void add_bias(T* out, const T* bias, int N, int OC) {
  for (std::int64_t n = 0; n < N; ++n)
    for (int c = 0; c < OC; ++c) out[n * OC + c] += bias[c];
}

template <class T>
void bias_backward(T* db, const T* dout, int N, int OC) {
  for (int c = 0; c < OC; ++c) {
    double s = 0;
    for (std::int64_t n = 0; n < N; ++n) s += dout[n * OC + c];
    db[c] = static_cast<T>(db[c] + s);
  }
}

template <class T>
void residual_add(T* out, const T* a, const T* b, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <class T>
void matmul(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
            T beta, T* C, int ldc, const T* bias) {
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) {
        const double a = trans_a ? A[static_cast<std::int64_t>(k) * lda + i] : A[static_cast<std::int64_t>(i) * lda + k];
        const double b = trans_b ? B[static_cast<std::int64_t>(j) * ldb + k] : B[static_cast<std::int64_t>(k) * ldb + j];
        acc += a * b;
      }
      T& c = C[static_cast<std::int64_t>(i) * ldc + j];
      const double prior = beta == T(0) ? 0.0 : static_cast<double>(beta) * c;
      c = static_cast<T>(alpha * acc + prior + (bias ? static_cast<double>(bias[j]) : 0.0));
    }
}

void adamw_update(float* w, float* m, float* v, const float* grad, bf16* copy, std::int64_t n, const AdamW& p) {
  const double c1 = 1.0 - std::pow(static_cast<double>(p.beta1), p.step);
  const double c2 = 1.0 - std::pow(static_cast<double>(p.beta2), p.step);
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * p.grad_scale;
    m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * g;
    v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * g * g;
    const double mhat = m[i] / c1, vhat = v[i] / c2;
    w[i] = static_cast<float>(w[i] - p.lr * (mhat / (std::sqrt(vhat) + p.eps) + static_cast<double>(p.weight_decay) * w[i]));
    if (copy) copy[i] = to_bf16(w[i]);
  }
}

#define CORE_KERNELS_REF_INSTANTIATE(T)                                                                        \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int, int, T);                  \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int, int); \
  template void gelu_forward<T>(T*, const T*, std::int64_t);                                                  \
  template void gelu_backward<T>(T*, const T*, const T*, std::int64_t);                                       \
  template void attention_forward<T>(T*, T*, const T*, const std::uint8_t*, bool, int, int, int, int);        \
  template void attention_backward<T>(T*, const T*, const T*, const T*, int, int, int, int);                  \
  template int softmax_xent<T>(T*, T*, const T*, const std::int32_t*, T, int, int, int);                      \
  template void add_bias<T>(T*, const T*, int, int);                                                          \
  template void bias_backward<T>(T*, const T*, int, int);                                                     \
  template void residual_add<T>(T*, const T*, const T*, std::int64_t);                                        \
  template void matmul<T>(bool, bool, int, int, int, T, const T*, int, const T*, int, T, T*, int, const T*);
CORE_KERNELS_REF_INSTANTIATE(float)
CORE_KERNELS_REF_INSTANTIATE(double)
#undef CORE_KERNELS_REF_INSTANTIATE

}  // namespace core::kernels::ref
