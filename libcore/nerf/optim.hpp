// Adam (Kingma & Ba 2015, Algorithm 1) over a flat parameter array: the optimiser of NICE-SLAM's grid
// features, decoder weights and camera poses.
#pragma once
#include <cmath>
#include <cstddef>
#include <vector>

namespace core::nerf {

template <class T>
class Adam {
 public:
  explicit Adam(std::size_t n = 0, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8)
      : m_(n, T(0)), v_(n, T(0)), beta1_(beta1), beta2_(beta2), eps_(eps) {}
  std::size_t size() const { return m_.size(); }
  // Updates the moments with `grad` and returns the step (to subtract) in `step`, or applies it to params.
  void step(T* params, const T* grad, double lr) {
    ++t_;
    const double c1 = 1 - std::pow(beta1_, t_), c2 = 1 - std::pow(beta2_, t_);
    const T a = T(lr * std::sqrt(c2) / c1), b1 = T(beta1_), b2 = T(beta2_), e = T(eps_ * std::sqrt(c2));
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
