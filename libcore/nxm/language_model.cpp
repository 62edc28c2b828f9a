// GPT language-model batches, validation loss and distillation (see language_model.hpp).
#include "nxm/language_model.hpp"

#include <algorithm>
#include <string>

#include "common/errors.hpp"

namespace core::nxm {

std::vector<std::int64_t> validation_windows(const train::TokenSplit& val, int seq_len, int max_windows) {
  std::vector<std::int64_t> w;
  for (std::int64_t s = 0; s + seq_len + 1 <= val.size(); s += seq_len) {
    if (max_windows > 0 && static_cast<int>(w.size()) == max_windows) break;
    w.push_back(s);
  }
  if (w.empty())
    throw DataError("the validation split has " + std::to_string(val.size()) + " tokens, fewer than one window of " +
                    std::to_string(seq_len + 1));
  return w;
}

LanguageModel::LanguageModel(const train::ModelConfig& config, int batch, int seq_len)
    : model_(config), B_(batch), T_(seq_len) {
  if (config.architecture() != train::Arch::gpt) throw UsageError("a language model needs model.arch = gpt");
  if (seq_len > config.n_positions)
    throw UsageError("task.max_seq_len = " + std::to_string(seq_len) + " exceeds the model's n_positions = " +
                     std::to_string(config.n_positions));
}

train::Batch LanguageModel::make_batch(const train::TokenSplit& split, const std::int64_t* starts, int count) {
  tokens_.resize(std::size_t(count) * T_);
  targets_.resize(tokens_.size());
  window_.resize(T_ + 1);
  for (int b = 0; b < count; ++b) {
    split.copy(starts[b], window_.size(), window_.data());
    std::copy_n(window_.begin(), T_, tokens_.begin() + std::size_t(b) * T_);
    std::copy_n(window_.begin() + 1, T_, targets_.begin() + std::size_t(b) * T_);
  }
  train::Batch batch;
  batch.B = count;
  batch.T = T_;
  batch.tokens = tokens_.data();
  batch.targets = targets_.data();
  return batch;
}

double LanguageModel::step(const train::TokenSplit& train, Rng& rng, const DistillOptions& kd) {
  if (train.size() < T_ + 1)
    throw DataError("the training split has " + std::to_string(train.size()) + " tokens, fewer than one window of " +
                    std::to_string(T_ + 1));
  std::vector<std::int64_t> starts(B_);
  for (auto& s : starts) s = static_cast<std::int64_t>(rng.below(std::uint64_t(train.size() - T_)));
  train::Batch batch = make_batch(train, starts.data(), B_);
  const double ce = model_.forward(batch, train::Task::lm);
  const bool logit_kd = kd.alpha > 0, hidden_kd = kd.hidden_weight > 0;
  if (!logit_kd && !hidden_kd) {
    model_.backward(1.0f);
    return ce;
  }
  if (!teacher_) throw UsageError("distillation needs the teacher model");
  const int N = B_ * T_, V = model_.config().vocab_size;
  // The student's probabilities stay in its logits() (every row has a target); the teacher's logits
  // are copied out before anything else runs.
  train::Batch plain = batch;
  plain.targets = nullptr;
  teacher_->forward(plain, train::Task::lm);
  double hidden = 0;
  std::vector<const float*> block_grads;
  if (hidden_kd) {
    hidden = hidden_state_mse(model_, *teacher_, N, nullptr, kd.hidden_weight, hidden_grads_);
    block_grads = block_grad_pointers(hidden_grads_);
  }
  if (!logit_kd) {
    model_.backward(1.0f, block_grads);
    return ce + hidden;
  }
  teacher_logits_.assign(teacher_->logits(), teacher_->logits() + std::size_t(N) * V);
  dz_.resize(std::size_t(N) * V);
  double kl_sum = 0;
  std::vector<double> ps, pt;
  for (int r = 0; r < N; ++r)
    distill_logits_row(model_.logits() + std::size_t(r) * V, teacher_logits_.data() + std::size_t(r) * V,
                       targets_[r], V, kd, N, dz_.data() + std::size_t(r) * V, kl_sum, ps, pt);
  model_.backward_from_logits(dz_.data(), block_grads);
  const double T = kd.temperature, a = kd.alpha;
  return (1 - a) * ce + a * T * T * kl_sum / N + hidden;
}

double LanguageModel::validation_loss(const train::TokenSplit& val, const std::vector<std::int64_t>& windows) {
  double sum = 0;
  for (std::size_t start = 0; start < windows.size(); start += B_) {
    const int count = static_cast<int>(std::min<std::size_t>(B_, windows.size() - start));
    const train::Batch batch = make_batch(val, windows.data() + start, count);
    sum += double(model_.forward(batch, train::Task::lm)) * count;  // every window has T_ targets
  }
  return sum / double(windows.size());
}

}  // namespace core::nxm
