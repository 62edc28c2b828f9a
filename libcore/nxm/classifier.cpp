// BERT classification batches, accuracy and distillation (see classifier.hpp).
#include "nxm/classifier.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"

namespace core::nxm {

Classifier::Classifier(const train::ModelConfig& config, int batch) : model_(config), batch_(batch) {}

// The examples go through in order of length, so that most batches are much shorter than the set's T.
std::vector<float> Classifier::logits(const EncodedSet& set) {
  const int L = model_.config().num_labels, n = set.size();
  std::vector<float> out(std::size_t(n) * L);
  const std::vector<int> order = train::length_order(set);
  std::vector<int> idx(batch_);
  for (int start = 0; start < n; start += batch_) {
    for (int b = 0; b < batch_; ++b) idx[b] = order[std::min(start + b, n - 1)];  // the last batch repeats
    train::Batch batch = rows_.gather(set, idx, train::padded_length(set, idx));
    batch.labels = nullptr;
    model_.forward(batch, train::Task::classify);
    const float* z = model_.logits();
    for (int b = 0; b < batch_ && start + b < n; ++b)
      std::copy_n(z + std::size_t(b) * L, L, out.begin() + std::size_t(idx[b]) * L);
  }
  return out;
}

double accuracy_of(const std::vector<float>& logits, const std::vector<std::int32_t>& labels, int num_labels) {
  int right = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const float* z = logits.data() + i * num_labels;
    right += static_cast<int>(std::max_element(z, z + num_labels) - z) == labels[i];
  }
  return labels.empty() ? 0.0 : double(right) / double(labels.size());
}

double Classifier::accuracy(const EncodedSet& set) {
  return accuracy_of(logits(set), set.labels, model_.config().num_labels);
}

double Classifier::step(const EncodedSet& set, std::span<const int> idx, const float* teacher,
                        const DistillOptions& kd) {
  if (idx.empty() || static_cast<int>(idx.size()) > batch_)
    throw UsageError("classifier step: " + std::to_string(idx.size()) + " examples for a batch of " +
                     std::to_string(batch_));
  const int B = static_cast<int>(idx.size());
  train::Batch batch = rows_.gather(set, idx, train::padded_length(set, idx));
  const std::int32_t* labels = batch.labels;
  padding_.add(set, idx, batch.T);
  const double ce = model_.forward(batch, train::Task::classify);
  double hidden = 0;
  std::vector<const float*> block_grads;  // empty: no hidden-state term
  if (kd.hidden_weight > 0) {
    if (!teacher_model_) throw UsageError("hidden-state distillation needs the teacher model");
    batch.labels = nullptr;
    teacher_model_->forward(batch, train::Task::classify);
    hidden = hidden_state_mse(model_, *teacher_model_, batch.B * batch.T, batch.attention_mask, kd.hidden_weight,
                              hidden_grads_);
    block_grads = block_grad_pointers(hidden_grads_);
  }
  if (!teacher || kd.alpha == 0.0) {
    model_.backward(1.0f, block_grads);
    return ce + hidden;
  }
  // After a forward with labels logits() holds softmax(z).
  const int L = model_.config().num_labels;
  const double T = kd.temperature, a = kd.alpha;
  std::vector<float> dz(std::size_t(B) * L);
  double kl_sum = 0;
  std::vector<double> ps, pt;
  for (int b = 0; b < B; ++b)
    distill_logits_row(model_.logits() + std::size_t(b) * L, teacher + std::size_t(idx[b]) * L, labels[b], L, kd,
                       B, dz.data() + std::size_t(b) * L, kl_sum, ps, pt);
  model_.backward_from_logits(dz.data(), block_grads);
  return (1 - a) * ce + a * T * T * kl_sum / B + hidden;
}

}  // namespace core::nxm
