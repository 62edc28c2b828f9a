// Classification and language-model students (see student.hpp).
#include "nxm/student.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/errors.hpp"
#include "nxm/classifier.hpp"
#include "nxm/language_model.hpp"
#include "train/data.hpp"
#include "train/length_batches.hpp"

namespace core::nxm {

namespace {

class ClassifyStudent final : public Student {
 public:
  ClassifyStudent(const train::ModelConfig& config, const text::Tokenizer& tok, const TaskOptions& task, int batch,
                  std::uint64_t seed)
      : task_(task), data_(load_task(task, tok, config, seed)), clf_(config, batch) {}
  train::Model<float>& model() override { return clf_.model(); }
  double step(Rng& rng) override {
    if (!batches_) batches_.emplace(data_.train.lengths, clf_.batch(), rng());
    return clf_.step(data_.train, batches_->batch(steps_++), kd_.alpha > 0 ? teacher_logits_.data() : nullptr, kd_);
  }
  nlohmann::json evaluate() override { return {{"accuracy", clf_.accuracy(data_.test)}}; }
  void capture_teacher(const DistillOptions& kd) override {
    kd_ = kd;
    if (kd.alpha > 0) teacher_logits_ = clf_.logits(data_.train);
    if (kd.hidden_weight > 0) {
      teacher_ = std::make_unique<train::Model<float>>(clf_.model().config());
      const auto& p = clf_.model().params();
      for (int g = 0; g < p.num_groups(); ++g)
        std::copy_n(p.group(g), p.group_size(g), teacher_->params().group(g));
      clf_.set_teacher_model(teacher_.get());
    }
  }
  nlohmann::json task_record() const override {
    return {{"train", task_.train}, {"test", task_.test}, {"max_seq_len", task_.max_seq_len}};
  }
  nlohmann::json data_summary() const override {
    nlohmann::json out = {{"train_examples", data_.train.size()}, {"test_examples", data_.test.size()}};
    if (clf_.padding().batch_tokens > 0) out["train_padding"] = clf_.padding().to_json();
    return out;
  }

 private:
  TaskOptions task_;
  TaskData data_;
  Classifier clf_;
  std::optional<train::LengthBatches> batches_;  // seeded by the first step's draw
  std::int64_t steps_ = 0;
  DistillOptions kd_;
  std::vector<float> teacher_logits_;
  std::unique_ptr<train::Model<float>> teacher_;
};

train::TokenData load_lm_data(const TaskOptions& task, const text::Tokenizer& tok, const train::ModelConfig& config) {
  train::DataOptions d;
  d.input = task.train;
  d.tokenizer = tok.spec();
  d.val_fraction = task.val_fraction;
  d.seq_len = task.max_seq_len;
  try {
    train::TokenData data = train::load_token_data(d);
    train::check_model_vocabulary(data, config);
    return data;
  } catch (const InputMissingError& e) {  // its message names data.input, zpp-train's key
    throw InputMissingError("task.train (the GPT's text): " + std::string(e.what()));
  }
}

class LmStudent final : public Student {
 public:
  LmStudent(const train::ModelConfig& config, const text::Tokenizer& tok, const TaskOptions& task, int batch)
      : task_(task), data_(load_lm_data(task, tok, config)), lm_(config, batch, task.max_seq_len),
        windows_(validation_windows(data_.val, task.max_seq_len, task.max_test_examples)) {}
  train::Model<float>& model() override { return lm_.model(); }
  double step(Rng& rng) override { return lm_.step(data_.train, rng, kd_); }
  nlohmann::json evaluate() override {
    const double loss = lm_.validation_loss(data_.val, windows_);
    return {{"loss", loss}, {"perplexity", std::exp(loss)}};
  }
  void capture_teacher(const DistillOptions& kd) override {
    kd_ = kd;
    if (kd.alpha <= 0 && kd.hidden_weight <= 0) return;
    teacher_ = std::make_unique<train::Model<float>>(lm_.model().config());
    const auto& p = lm_.model().params();
    for (int g = 0; g < p.num_groups(); ++g) std::copy_n(p.group(g), p.group_size(g), teacher_->params().group(g));
    lm_.set_teacher_model(teacher_.get());
  }
  nlohmann::json task_record() const override {
    return {{"train", task_.train}, {"val_fraction", task_.val_fraction}, {"max_seq_len", task_.max_seq_len},
            {"max_test_examples", task_.max_test_examples}};
  }
  nlohmann::json data_summary() const override {
    return {{"train_tokens", data_.train.size()}, {"val_tokens", data_.val.size()}, {"val_windows", windows_.size()}};
  }

 private:
  TaskOptions task_;
  train::TokenData data_;
  LanguageModel lm_;
  std::vector<std::int64_t> windows_;
  DistillOptions kd_;
  std::unique_ptr<train::Model<float>> teacher_;
};

}  // namespace

std::unique_ptr<Student> make_student(const train::ModelConfig& config, const text::Tokenizer& tok,
                                      const TaskOptions& task, int batch, std::uint64_t seed) {
  if (config.architecture() == train::Arch::gpt) return std::make_unique<LmStudent>(config, tok, task, batch);
  return std::make_unique<ClassifyStudent>(config, tok, task, batch, seed);
}

std::vector<std::int32_t> lm_eval_windows(const TaskOptions& task, const text::Tokenizer& tok,
                                          const train::ModelConfig& config) {
  const train::TokenData data = load_lm_data(task, tok, config);
  std::vector<std::int32_t> out;
  const std::size_t W = std::size_t(task.max_seq_len) + 1;
  for (std::int64_t start : validation_windows(data.val, task.max_seq_len, task.max_test_examples)) {
    out.resize(out.size() + W);
    data.val.copy(start, W, out.data() + out.size() - W);
  }
  return out;
}

}  // namespace core::nxm
