// The task side of nxm-compress's training (finetune, compress): a model with its data, one training
// step (task loss and distillation from the dense teacher) and its evaluation on the held-out split.
//  - BERT: sequence classification (task.hpp examples, Classifier); evaluation: accuracy on task.test.
//  - GPT: causal language modelling of a text (LanguageModel): task.train is the text (or token shards,
//    as zpp-train reads them), its last task.val_fraction the validation split; evaluation: the mean
//    next-token loss over up to task.max_test_examples validation windows of task.max_seq_len, and its
//    perplexity.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>

#include "common/rng.hpp"
#include "nxm/distill.hpp"
#include "nxm/pipeline.hpp"
#include "text/tokenizer.hpp"
#include "train/model.hpp"

namespace core::nxm {

class Student {
 public:
  virtual ~Student() = default;
  virtual train::Model<float>& model() = 0;
  // Loss and gradient (added into model().grads(), which the caller zeroes) of the next training batch.
  // BERT: batch after batch of a length-bucketed epoch order (train::LengthBatches: every example once per
  // epoch, batches of similar lengths in random order) seeded by rng's draw at the first step; GPT: windows
  // at offsets drawn from rng.
  virtual double step(Rng& rng) = 0;
  // The current parameters on the held-out split: {"accuracy"} (BERT) or {"loss", "perplexity"} (GPT).
  virtual nlohmann::json evaluate() = 0;
  // From here on, step() distills from the current parameters (the dense teacher) as kd says: their
  // logits of the training examples (BERT) or a frozen copy of the model run on every batch.
  virtual void capture_teacher(const DistillOptions& kd) = 0;
  // The task as recorded in checkpoints and packed models (what eval reads back).
  virtual nlohmann::json task_record() const = 0;
  // Sizes of the data: train_examples / test_examples and, once it has trained, train_padding (the example
  // and padded-batch tokens of its steps, the padding share) (BERT); train_tokens / val_tokens / val_windows (GPT).
  virtual nlohmann::json data_summary() const = 0;
};

// The student for the model's architecture, its weights not loaded (the caller loads them).
std::unique_ptr<Student> make_student(const train::ModelConfig& config, const text::Tokenizer& tok,
                                      const TaskOptions& task, int batch, std::uint64_t seed);

// The test-split windows of a GPT task as eval runs them: [windows * (max_seq_len + 1)] tokens.
std::vector<std::int32_t> lm_eval_windows(const TaskOptions& task, const text::Tokenizer& tok,
                                          const train::ModelConfig& config);

}  // namespace core::nxm
