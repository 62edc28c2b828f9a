// A GPT causal language model over a token stream (core::train::Model with task lm) for nxm-compress:
// training batches of random windows of seq_len + 1 tokens of the train split (inputs and next-token
// targets), the loss of one step with optional distillation from a dense teacher model run on the same
// batch (distill.hpp: the logit term over the vocabulary at every position, averaged over the positions,
// and the hidden-state term), and the validation loss: the mean next-token loss over consecutive
// non-overlapping windows of the validation split (perplexity = exp of it).
#pragma once
#include <cstdint>
#include <vector>

#include "common/rng.hpp"
#include "nxm/distill.hpp"
#include "train/data.hpp"
#include "train/model.hpp"

namespace core::nxm {

// The windows [start, start + seq_len + 1) of the validation split that validation_loss scores: from 0 in
// steps of seq_len, the first max_windows of them (0: all).
std::vector<std::int64_t> validation_windows(const train::TokenSplit& val, int seq_len, int max_windows);

class LanguageModel {
 public:
  // batch x seq_len tokens per step; UsageError unless the model is a GPT with n_positions >= seq_len.
  LanguageModel(const train::ModelConfig& config, int batch, int seq_len);
  train::Model<float>& model() { return model_; }
  int seq_len() const { return T_; }

  // The dense teacher for distillation (not owned; null: none). kd.alpha > 0 or kd.hidden_weight > 0
  // in step() need it (UsageError without).
  void set_teacher_model(train::Model<float>* teacher) { teacher_ = teacher; }
  // Forward + backward on batch() random training windows drawn with rng (grads accumulated into
  // model().grads(), which the caller zeroes). Returns the loss (task + distillation terms).
  double step(const train::TokenSplit& train, Rng& rng, const DistillOptions& kd);
  // Mean next-token loss of the current parameters over `windows` of the validation split.
  double validation_loss(const train::TokenSplit& val, const std::vector<std::int64_t>& windows);

 private:
  train::Batch make_batch(const train::TokenSplit& split, const std::int64_t* starts, int count);
  train::Model<float> model_;
  int B_, T_;
  train::Model<float>* teacher_ = nullptr;
  std::vector<std::int32_t> tokens_, targets_, window_;
  std::vector<float> teacher_logits_, dz_;
  std::vector<std::vector<float>> hidden_grads_;
};

}  // namespace core::nxm
