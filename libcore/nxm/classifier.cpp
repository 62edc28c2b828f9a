// BERT classification batches, accuracy and distillation (see classifier.hpp).
#include "nxm/classifier.hpp"

#include <algorithm>
#include <cmath>

namespace core::nxm {

Classifier::Classifier(const train::ModelConfig& config, int batch) : model_(config), batch_(batch) {}

train::Batch Classifier::make_batch(const EncodedSet& set, const std::vector<int>& idx) {
  const int T = set.T;
  tokens_.resize(std::size_t(batch_) * T);
  mask_.resize(tokens_.size());
  labels_.resize(batch_);
  for (int b = 0; b < batch_; ++b) {
    const int i = idx[b];
    std::copy_n(set.tokens.begin() + std::size_t(i) * T, T, tokens_.begin() + std::size_t(b) * T);
    std::copy_n(set.mask.begin() + std::size_t(i) * T, T, mask_.begin() + std::size_t(b) * T);
    labels_[b] = set.labels[i];
  }
  train::Batch batch;
  batch.B = batch_;
  batch.T = T;
  batch.tokens = tokens_.data();
  batch.attention_mask = mask_.data();
  batch.labels = labels_.data();
  return batch;
}

std::vector<float> Classifier::logits(const EncodedSet& set) {
  const int L = model_.config().num_labels;
  std::vector<float> out(std::size_t(set.size()) * L);
  std::vector<int> idx(batch_);
  for (int start = 0; start < set.size(); start += batch_) {
    for (int b = 0; b < batch_; ++b) idx[b] = std::min(start + b, set.size() - 1);  // the last batch repeats
    train::Batch batch = make_batch(set, idx);
    batch.labels = nullptr;
    model_.forward(batch, train::Task::classify);
    const float* z = model_.logits();
    for (int b = 0; b < batch_ && start + b < set.size(); ++b)
      std::copy_n(z + std::size_t(b) * L, L, out.begin() + std::size_t(start + b) * L);
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

double Classifier::step(const EncodedSet& set, const std::vector<int>& idx, const float* teacher,
                        const DistillOptions& kd) {
  const train::Batch batch = make_batch(set, idx);
  const double ce = model_.forward(batch, train::Task::classify);
  if (!teacher || kd.alpha == 0.0) {
    model_.backward(1.0f);
    return ce;
  }
  // After a forward with labels logits() holds softmax(z); log p = z - logsumexp(z).
  const int L = model_.config().num_labels;
  const double T = kd.temperature, a = kd.alpha;
  std::vector<float> dz(std::size_t(batch_) * L);
  double kl_sum = 0;
  std::vector<double> ps(L), pt(L);
  for (int b = 0; b < batch_; ++b) {
    const float* p = model_.logits() + std::size_t(b) * L;
    const float* t = teacher + std::size_t(idx[b]) * L;
    double ms = -1e300, mt = -1e300;
    for (int c = 0; c < L; ++c) {
      ps[c] = std::log(std::max(double(p[c]), 1e-30)) / T;
      pt[c] = double(t[c]) / T;
      ms = std::max(ms, ps[c]);
      mt = std::max(mt, pt[c]);
    }
    double zs = 0, zt = 0;
    for (int c = 0; c < L; ++c) {
      ps[c] = std::exp(ps[c] - ms);
      pt[c] = std::exp(pt[c] - mt);
      zs += ps[c];
      zt += pt[c];
    }
    for (int c = 0; c < L; ++c) {
      ps[c] /= zs;
      pt[c] /= zt;
      if (pt[c] > 0) kl_sum += pt[c] * (std::log(pt[c]) - std::log(std::max(ps[c], 1e-300)));
      const double hard = double(p[c]) - (c == batch.labels[b] ? 1.0 : 0.0);
      dz[std::size_t(b) * L + c] = static_cast<float>(((1 - a) * hard + a * T * (ps[c] - pt[c])) / batch_);
    }
  }
  model_.backward_from_logits(dz.data());
  return (1 - a) * ce + a * T * T * kl_sum / batch_;
}

}  // namespace core::nxm
