// AdamW (Loshchilov & Hutter 2019: Adam with decoupled weight decay) over the flat parameter
// groups, global-norm gradient clipping (Pascanu et al. 2013) and the learning-rate schedules
// (linear warmup, then constant, linear or cosine decay). Weight decay applies only to tensors whose view has decay = true (matrices and
// embeddings; not biases or LayerNorm gains). The moments mirror the parameter layout, so a
// ZeRO shard of a group is the same [begin, end) range in params, grads, m and v.
#pragma once
#include <cstdint>
#include <string>

#include "train/params.hpp"

namespace core::train {

struct AdamWHyper {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
};

// Learning-rate schedules under DeepSpeed's names. The rate at 0-based `step` rises linearly to
// `peak` over `warmup` steps, then
//   WarmupLR:       stays at peak;
//   WarmupDecayLR:  falls linearly to 0 at `total` steps;
//   WarmupCosineLR: falls along a half cosine to peak * min_ratio at `total` steps;
// and after `total` stays where it ended.
enum class LrSchedule { warmup, warmup_decay, warmup_cosine };
// "WarmupLR", "WarmupDecayLR", "WarmupCosineLR"; UsageError otherwise.
LrSchedule parse_lr_schedule(const std::string& type);
double scheduled_lr(LrSchedule schedule, std::int64_t step, double peak, std::int64_t warmup, std::int64_t total,
                    double min_ratio);

// sqrt(sum of squares) of all gradients (double accumulation, fixed summation order).
template <class T>
double global_grad_norm(const FlatBuffers<T>& grads);

// The AdamW update of one tensor at step t >= 1 (the one CPU reference of the update; the CUDA
// kernel core::kernels::adamw_update is tested against it):
//   g = grad * grad_scale;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr * ( (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + weight_decay * p )
struct AdamWUpdate {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.0, grad_scale = 1.0;
  std::int64_t t = 1;
};
template <class T>
void adamw_update(T* p, T* m, T* v, const T* grad, std::int64_t n, const AdamWUpdate& u);

template <class T>
class AdamW {
 public:
  AdamW(const ParamLayout& layout, AdamWHyper hyper, Allocation allocation = Allocation::eager)
      : hyper_(hyper), m_(layout, allocation), v_(layout, allocation) {}
  // One update: grads are multiplied by grad_scale (clipping and/or 1/accumulation) first.
  void step(FlatBuffers<T>& params, const FlatBuffers<T>& grads, double lr, double grad_scale);

  std::int64_t steps_taken() const { return t_; }
  void set_steps_taken(std::int64_t t) { t_ = t; }
  FlatBuffers<T>& m() { return m_; }
  FlatBuffers<T>& v() { return v_; }
  const FlatBuffers<T>& m() const { return m_; }
  const FlatBuffers<T>& v() const { return v_; }
  const AdamWHyper& hyper() const { return hyper_; }

 private:
  AdamWHyper hyper_;
  FlatBuffers<T> m_, v_;
  std::int64_t t_ = 0;
};

}  // namespace core::train
