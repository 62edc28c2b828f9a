// Adam (Kingma & Ba 2015, Algorithm 1) over a flat parameter array: the optimiser of NICE-SLAM's grid
// features, decoder weights and camera poses. adam_scale holds the bias correction, so that the device
// step (render_cuda.cu) has the same meaning.
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

namespace core::nerf {

inline constexpr double kAdamBeta1 = 0.9, kAdamBeta2 = 0.999, kAdamEps = 1e-8;

// Step t (from 1): params -= a m / (sqrt(v) + e) with the bias corrections folded into a and e.
struct AdamScale {
  double a, e;
};
inline AdamScale adam_scale(int t, double lr, double beta1, double beta2, double eps) {
  const double c1 = 1 - std::pow(beta1, t), c2 = 1 - std::pow(beta2, t);
  return {lr * std::sqrt(c2) / c1, eps * std::sqrt(c2)};
}

template <class T>
class Adam {
 public:
  explicit Adam(std::size_t n = 0, double beta1 = kAdamBeta1, double beta2 = kAdamBeta2, double eps = kAdamEps)
      : m_(n, T(0)), v_(n, T(0)), beta1_(beta1), beta2_(beta2), eps_(eps) {}
  std::size_t size() const { return m_.size(); }
  // Updates the moments with `grad` and returns the step (to subtract) in `step`, or applies it to params.
  void step(T* params, const T* grad, double lr) {
    const AdamScale s = adam_scale(++t_, lr, beta1_, beta2_, eps_);
    const T a = T(s.a), b1 = T(beta1_), b2 = T(beta2_), e = T(s.e);
    for (std::size_t i = 0; i < m_.size(); ++i) {
      m_[i] = b1 * m_[i] + (1 - b1) * grad[i];
      v_[i] = b2 * v_[i] + (1 - b2) * grad[i] * grad[i];
      params[i] -= a * m_[i] / (std::sqrt(v_[i]) + e);
    }
  }

 private:
  std::vector<T> m_, v_;
  double beta1_, beta2_, eps_;
  int t_ = 0;
};

}  // namespace core::nerf
