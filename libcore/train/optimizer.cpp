// AdamW update, global gradient norm and the learning-rate schedules (see optimizer.hpp).
#include "train/optimizer.hpp"

#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "common/errors.hpp"

namespace core::train {

LrSchedule parse_lr_schedule(const std::string& type) {
  if (type == "WarmupLR") return LrSchedule::warmup;
  if (type == "WarmupDecayLR") return LrSchedule::warmup_decay;
  if (type == "WarmupCosineLR") return LrSchedule::warmup_cosine;
  throw UsageError("scheduler.type '" + type + "': expected WarmupLR, WarmupDecayLR or WarmupCosineLR");
}

double scheduled_lr(LrSchedule schedule, std::int64_t step, double peak, std::int64_t warmup, std::int64_t total,
                    double min_ratio) {
  if (step < warmup) return peak * double(step + 1) / double(warmup);
  if (schedule == LrSchedule::warmup) return peak;
  const double progress =
      std::min(1.0, double(step - warmup) / double(std::max<std::int64_t>(1, total - warmup)));
  if (schedule == LrSchedule::warmup_decay) return peak * (1.0 - progress);
  const double lo = peak * min_ratio;
  return lo + 0.5 * (peak - lo) * (1.0 + std::cos(M_PI * progress));
}

template <class T>
double global_grad_norm(const FlatBuffers<T>& grads) {
  constexpr std::int64_t kChunk = 1 << 14;
  double total = 0;
  for (int g = 0; g < grads.num_groups(); ++g) {
    const T* p = grads.group(g);
    const std::int64_t n = static_cast<std::int64_t>(grads.group_size(g));
    const std::int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> part(chunks);
#pragma omp parallel for schedule(static) if (n >= (1 << 20))
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t b = c * kChunk, e = std::min(n, b + kChunk);
      part[c] = static_cast<double>(Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(p + b, e - b).square().sum());
    }
    for (double x : part) total += x;
  }
  return std::sqrt(total);
}

template <class T>
void adamw_update(T* p, T* m, T* v, const T* grad, std::int64_t n, const AdamWUpdate& u) {
  const T b1 = T(u.beta1), b2 = T(u.beta2), eps = T(u.eps), gs = T(u.grad_scale), wd = T(u.weight_decay);
  const T c1 = T(1) / T(1 - std::pow(u.beta1, double(u.t)));
  const T c2 = T(1) / T(1 - std::pow(u.beta2, double(u.t)));
  const T tlr = T(u.lr);
#pragma omp parallel for simd schedule(static) if (n >= (1 << 18))
  for (std::int64_t i = 0; i < n; ++i) {
    const T gi = grad[i] * gs;
    const T mi = b1 * m[i] + (T(1) - b1) * gi;
    const T vi = b2 * v[i] + (T(1) - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= tlr * ((mi * c1) / (std::sqrt(vi * c2) + eps) + wd * p[i]);
  }
}

template <class T>
void AdamW<T>::step(FlatBuffers<T>& params, const FlatBuffers<T>& grads, double lr, double grad_scale) {
  ++t_;
  AdamWUpdate u{lr, hyper_.beta1, hyper_.beta2, hyper_.eps, 0.0, grad_scale, t_};
  const ParamLayout& layout = params.layout();
  for (int g = 0; g < layout.num_groups(); ++g) {
    const auto& tensors = layout.groups()[g].tensors;
    for (int t = 0; t < static_cast<int>(tensors.size()); ++t) {
      const TensorView& view = tensors[t];
      u.weight_decay = view.decay ? hyper_.weight_decay : 0.0;
      adamw_update(params.tensor(g, t), m_.tensor(g, t), v_.tensor(g, t), grads.tensor(g, t),
                   static_cast<std::int64_t>(view.numel), u);
    }
  }
}

template double global_grad_norm<float>(const FlatBuffers<float>&);
template double global_grad_norm<double>(const FlatBuffers<double>&);
template void adamw_update<float>(float*, float*, float*, const float*, std::int64_t, const AdamWUpdate&);
template void adamw_update<double>(double*, double*, double*, const double*, std::int64_t, const AdamWUpdate&);
template class AdamW<float>;
template class AdamW<double>;

}  // namespace core::train
