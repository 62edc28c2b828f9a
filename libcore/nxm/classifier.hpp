// A BERT sequence classifier over an encoded task (core::train::Model with task classify): batches,
// accuracy, logits, and the loss of one step with optional knowledge distillation (distill.hpp) from a
// teacher's logits, averaged over the batch (the gradient enters the model through
// Model::backward_from_logits), and from its hidden states (the teacher model runs the same batch; the
// padding rows are not compared).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "nxm/distill.hpp"
#include "nxm/task.hpp"
#include "train/classify_batches.hpp"
#include "train/model.hpp"

namespace core::nxm {

class Classifier {
 public:
  // batch: the fixed number of sequences per forward (evaluation pads its last batch).
  Classifier(const train::ModelConfig& config, int batch);
  train::Model<float>& model() { return model_; }
  int batch() const { return batch_; }

  // Logits [set.size(), num_labels] of the model's current parameters.
  std::vector<float> logits(const EncodedSet& set);
  // Share of examples whose argmax logit is the label.
  double accuracy(const EncodedSet& set);
  // Forward + backward (grads accumulated into model().grads(), which the caller zeroes) on the
  // examples `idx` (1 to batch() of them; the loss is their mean), padded to their longest
  // (train::padded_length); teacher [set.size(), num_labels] logits or null. Returns the loss. kd.hidden_weight > 0 needs the
  // teacher model (UsageError without).
  double step(const EncodedSet& set, std::span<const int> idx, const float* teacher, const DistillOptions& kd);
  // Tokens of the examples step() has trained on, and of their padded batches (B x T), since construction.
  const train::PaddingCount& padding() const { return padding_; }
  // The dense teacher whose block outputs hidden-state distillation matches (not owned; null: none).
  void set_teacher_model(train::Model<float>* teacher) { teacher_model_ = teacher; }

 private:
  train::Model<float> model_;
  int batch_;
  train::BatchRows rows_;
  train::Model<float>* teacher_model_ = nullptr;
  std::vector<std::vector<float>> hidden_grads_;
  train::PaddingCount padding_;
};

// Accuracy of the argmax of logits [n, labels] against the labels.
double accuracy_of(const std::vector<float>& logits, const std::vector<std::int32_t>& labels, int num_labels);

}  // namespace core::nxm
