// A BERT sequence classifier over an encoded task (core::train::Model with task classify): batches,
// accuracy, logits, and the loss of one step with optional knowledge distillation (Hinton et al. 2015)
// from a teacher's logits:
//   L = (1 - alpha) CE(z, y) + alpha T^2 KL(softmax(t / T) || softmax(z / T)),
//   dL/dz = (1 - alpha) (softmax(z) - onehot(y)) + alpha T (softmax(z / T) - softmax(t / T)),
// averaged over the batch (the gradient enters the model through Model::backward_from_logits).
#pragma once
#include <cstdint>
#include <vector>

#include "nxm/task.hpp"
#include "train/model.hpp"

namespace core::nxm {

struct DistillOptions {
  double alpha = 0.0;        // weight of the distillation term (0: task loss only)
  double temperature = 2.0;  // T
};

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
  // examples `idx` (size batch()); teacher [set.size(), num_labels] logits or null. Returns the loss.
  double step(const EncodedSet& set, const std::vector<int>& idx, const float* teacher, const DistillOptions& kd);

 private:
  train::Batch make_batch(const EncodedSet& set, const std::vector<int>& idx);
  train::Model<float> model_;
  int batch_;
  std::vector<std::int32_t> tokens_, labels_;
  std::vector<std::uint8_t> mask_;
};

// Accuracy of the argmax of logits [n, labels] against the labels.
double accuracy_of(const std::vector<float>& logits, const std::vector<std::int32_t>& labels, int num_labels);

}  // namespace core::nxm
