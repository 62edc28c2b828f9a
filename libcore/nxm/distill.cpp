// Logit and hidden-state distillation terms (see distill.hpp).
#include "nxm/distill.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.hpp"

namespace core::nxm {

void distill_logits_row(const float* p, const float* t, int label, int n, const DistillOptions& kd, double divisor,
                        float* dz, double& kl_sum, std::vector<double>& ps, std::vector<double>& pt) {
  // log softmax(z) = log p, so softmax(z / T) = softmax(log p / T).
  const double T = kd.temperature, a = kd.alpha;
  ps.resize(n);
  pt.resize(n);
  double ms = -1e300, mt = -1e300;
  for (int c = 0; c < n; ++c) {
    ps[c] = std::log(std::max(double(p[c]), 1e-30)) / T;
    pt[c] = double(t[c]) / T;
    ms = std::max(ms, ps[c]);
    mt = std::max(mt, pt[c]);
  }
  double zs = 0, zt = 0;
  for (int c = 0; c < n; ++c) {
    ps[c] = std::exp(ps[c] - ms);
    pt[c] = std::exp(pt[c] - mt);
    zs += ps[c];
    zt += pt[c];
  }
  for (int c = 0; c < n; ++c) {
    ps[c] /= zs;
    pt[c] /= zt;
    if (pt[c] > 0) kl_sum += pt[c] * (std::log(pt[c]) - std::log(std::max(ps[c], 1e-300)));
    const double hard = double(p[c]) - (c == label ? 1.0 : 0.0);
    dz[c] = static_cast<float>(((1 - a) * hard + a * T * (ps[c] - pt[c])) / divisor);
  }
}

template <class T>
double hidden_state_mse(const train::Model<T>& student, const train::Model<T>& teacher, int rows,
                        const std::uint8_t* row_mask, double weight, std::vector<std::vector<T>>& grads) {
  const train::ModelConfig &s = student.config(), &t = teacher.config();
  if (s.n_layer != t.n_layer || s.n_embd != t.n_embd)
    throw UsageError("hidden-state distillation maps layer l to layer l: the student has " + std::to_string(s.n_layer) +
                     " x " + std::to_string(s.n_embd) + ", the teacher " + std::to_string(t.n_layer) + " x " +
                     std::to_string(t.n_embd));
  const int L = s.n_layer, C = s.n_embd;
  int counted = 0;
  for (int r = 0; r < rows; ++r) counted += !row_mask || row_mask[r];
  if (counted == 0) throw UsageError("hidden-state distillation: no row to compare");
  const double scale = weight / (double(counted) * C);
  grads.resize(L);
  double loss = 0;
  for (int l = 0; l < L; ++l) {
    const T* hs = student.block_output(l);
    const T* ht = teacher.block_output(l);
    auto& g = grads[l];
    g.assign(std::size_t(rows) * C, T(0));
    double sum = 0;
    for (int r = 0; r < rows; ++r) {
      if (row_mask && !row_mask[r]) continue;
      for (std::size_t i = std::size_t(r) * C; i < std::size_t(r + 1) * C; ++i) {
        const double d = double(hs[i]) - double(ht[i]);
        sum += d * d;
        g[i] = static_cast<T>(2 * scale * d);
      }
    }
    loss += scale * sum;
  }
  return loss;
}

template <class T>
std::vector<const T*> block_grad_pointers(const std::vector<std::vector<T>>& grads) {
  std::vector<const T*> p;
  for (const auto& g : grads) p.push_back(g.data());
  return p;
}

template double hidden_state_mse<float>(const train::Model<float>&, const train::Model<float>&, int,
                                        const std::uint8_t*, double, std::vector<std::vector<float>>&);
template double hidden_state_mse<double>(const train::Model<double>&, const train::Model<double>&, int,
                                         const std::uint8_t*, double, std::vector<std::vector<double>>&);
template std::vector<const float*> block_grad_pointers<float>(const std::vector<std::vector<float>>&);
template std::vector<const double*> block_grad_pointers<double>(const std::vector<std::vector<double>>&);

}  // namespace core::nxm
