// The training pipelines of nxm-compress on a sequence-classification task (BERT) or on causal language
// modelling of a text (GPT; student.hpp):
//  - train_teacher (`finetune`): a dense BERT classifier fine-tuned from an MLM-pretrained one, or a GPT
//    fine-tuned on the task's text, from a zpp-train run or checkpoint (without one, a small model is
//    pretrained here first with zpp-train's trainer);
//  - compress: from the dense teacher, one of
//      admm       NxMTransformer: ADMM W-steps (AdamW on task + distillation loss + rho (W - Z + U)),
//                 Z = Pi(W + U), U += W - Z, rho grown per round (NxMiFormer when qat = joint: the
//                 W-steps see Q(W) through the straight-through estimator and Pi includes Q);
//      magnitude  ASP's recipe: N:M by magnitude at once, then masked fine-tuning;
//      srste      SR-STE (Zhou et al. 2021): the forward sees Pi(W) (mask recomputed every step), the
//                 gradient goes straight through to W plus lambda (1 - mask) W;
//    then hard pruning and masked fine-tuning (qat != none: through Q with the STE), the final weights
//    Q(Pi(W)), their accuracy (BERT) or validation loss (GPT), and the packed artifact. Every method gets
//    the same number of steps. Every training step distills from the dense teacher (distill.*).
// Metrics per step (stage, loss, lr) and per ADMM round (rho, primal and dual residuals, flip rate) go
// to metrics.jsonl.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/config.hpp"
#include "common/rundir.hpp"
#include "nxm/classifier.hpp"

namespace core::nxm {

namespace fs = std::filesystem;

struct PretrainOptions {
  std::string arch = "bert";
  std::string text = "/usr/share/common-licenses/GPL-3";
  int n_layer = 2;
  int n_head = 2;
  int n_embd = 64;
  int seq_len = 64;
  int batch_size = 16;
  std::int64_t steps = 300;
  double lr = 3e-3;
  template <class V>
  void visit(V& v) {
    v("arch", arch, "bert (masked LM; a classification task) or gpt (causal LM; a text task)",
      core::one_of({"bert", "gpt"}));
    v("text", text, "text the model is pretrained on (byte tokenizer)");
    v("n_layer", n_layer, "blocks", core::positive<int>());
    v("n_head", n_head, "attention heads", core::positive<int>());
    v("n_embd", n_embd, "width", core::positive<int>());
    v("seq_len", seq_len, "tokens per sequence (also the model's n_positions)", core::positive<int>());
    v("batch_size", batch_size, "sequences per step", core::positive<int>());
    v("steps", steps, "optimizer steps", core::positive<std::int64_t>());
    v("lr", lr, "peak learning rate", core::positive<double>());
  }
};

struct TaskOptions {
  std::string train = "synthetic:2000";
  std::string test = "synthetic:400";
  int max_seq_len = 64;
  int max_train_examples = 0;
  int max_test_examples = 0;
  double val_fraction = 0.1;
  template <class V>
  void visit(V& v) {
    v("train", train, "BERT: training examples, a TSV file (sentence<TAB>label, GLUE's SST-2) or synthetic:N; "
                      "GPT: the text (or token shards) of the language-modelling task");
    v("test", test, "BERT: evaluation examples (SST-2: test.tsv, GLUE's labelled dev set, the split papers report); "
                    "GPT: unused (validation is the tail of task.train)");
    v("max_seq_len", max_seq_len, "tokens per example including [CLS] (longer ones are truncated); GPT: window length",
      core::at_least(2));
    v("max_train_examples", max_train_examples, "BERT: use the first N training examples (0: all)", core::at_least(0));
    v("max_test_examples", max_test_examples, "use the first N evaluation examples (GPT: validation windows; 0: all)",
      core::at_least(0));
    v("val_fraction", val_fraction, "GPT: tail fraction of a text task.train kept for validation",
      core::in_range(0.0, 0.5));
  }
};

struct Schedule {
  std::int64_t steps = 300;
  int batch_size = 32;
  double lr = 2e-3;
  double weight_decay = 0.01;
  std::int64_t warmup_steps = 20;
  template <class V>
  void visit(V& v) {
    v("steps", steps, "optimizer steps", core::at_least<std::int64_t>(0));
    v("batch_size", batch_size, "sequences per step", core::positive<int>());
    v("lr", lr, "peak learning rate (linear warmup, then linear decay)", core::positive<double>());
    v("weight_decay", weight_decay, "AdamW decoupled weight decay", core::at_least(0.0));
    v("warmup_steps", warmup_steps, "linear warmup steps", core::at_least<std::int64_t>(0));
  }
};

struct TeacherOptions {
  std::string init_from;  // a pretrained BERT: zpp-train run or checkpoint folder; empty: pretrain here
  PretrainOptions pretrain;
  Schedule train;
  template <class V>
  void visit(V& v) {
    v("init_from", init_from, "pretrained BERT (masked LM) or GPT: zpp-train run directory or checkpoint; empty: pretrain one (pretrain.*)");
    v.section("pretrain", pretrain);
    v.section("train", train);
  }
};

struct FinetuneOptions {
  TeacherOptions teacher;
  TaskOptions task;
  std::uint64_t seed = 1;
  template <class V>
  void visit(V& v) {
    v.section("teacher", teacher);
    v.section("task", task);
    v("seed", seed, "seed of pretraining, initialisation and batch order");
  }
};

struct AdmmOptions {
  int rounds = 6;
  std::int64_t steps_per_round = 30;
  // Large enough that the proximal term outweighs the task gradient of the pruned weights by the last
  // rounds (SST-2, 6 x 50 W-steps: relative primal residual 0.007 at hard pruning; 1e-3 x 1.5 left 0.11).
  double rho = 0.01;
  double rho_growth = 2.0;
  double rho_max = 1.0;
  template <class V>
  void visit(V& v) {
    v("rounds", rounds, "ADMM rounds (Z- and U-updates)", core::positive<int>());
    v("steps_per_round", steps_per_round, "W-steps (AdamW) per round", core::positive<std::int64_t>());
    v("rho", rho, "initial penalty rho", core::positive<double>());
    v("rho_growth", rho_growth, "rho is multiplied by this after every round", core::at_least(1.0));
    v("rho_max", rho_max, "upper bound of rho", core::positive<double>());
  }
};

struct DistillConfig {
  double alpha = 0.5;
  double temperature = 2.0;
  double hidden_weight = 0.0;
  template <class V>
  void visit(V& v) {
    v("alpha", alpha, "weight of the distillation loss from the dense teacher (0: off)", core::in_range(0.0, 1.0));
    v("temperature", temperature, "softmax temperature T", core::positive<double>());
    v("hidden_weight", hidden_weight,
      "weight of the hidden-state MSE between the student's and the teacher's block outputs, layer l to layer l (0: off)",
      core::at_least(0.0));
  }
};

struct CompressOptions {
  std::string teacher;  // run of `finetune`, or empty: fine-tune one first (teacher_training.*)
  TeacherOptions teacher_training;
  TaskOptions task;
  std::string plan = "qkv=2:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8";
  std::string method = "admm";
  std::string qat = "joint";
  AdmmOptions admm;
  double srste_decay = 2e-4;
  Schedule finetune;
  DistillConfig distill;
  std::uint64_t seed = 1;
  template <class V>
  void visit(V& v) {
    v("teacher", teacher, "dense fine-tuned teacher (an nxm-compress finetune run, or a zpp-train GPT run); empty: train one (teacher_training.*)");
    v.section("teacher_training", teacher_training);
    v.section("task", task);
    v("plan", plan, "qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B (S dense or keep:group, B 32/16/8/4)");
    v("method", method, "admm (NxMTransformer), magnitude (prune, then fine-tune) or srste (SR-STE)",
      core::one_of({"admm", "magnitude", "srste"}));
    v("qat", qat, "quantization-aware training: joint (also during ADMM/SR-STE: NxMiFormer), finetune (masked fine-tuning only) or none (post-training)",
      core::one_of({"joint", "finetune", "none"}));
    v.section("admm", admm);
    v("srste_decay", srste_decay, "SR-STE: lambda of the decay of the pruned weights", core::at_least(0.0));
    v.section("finetune", finetune);
    v.section("distill", distill);
    v("seed", seed, "seed of the batch order (and of the teacher when trained here)");
  }
};

// Trains the dense teacher into `dir` (checkpoints/, pretrain/ when pretraining); returns its summary.
nlohmann::json train_teacher(const TeacherOptions& o, const TaskOptions& task, std::uint64_t seed, const fs::path& dir,
                             MetricsWriter& metrics);
// Compresses into the run directory: artifacts/model.nxm.safetensors (packed), checkpoints/ (the
// compressed weights as dense fp32, for eval and further training); returns the summary.
nlohmann::json run_compress(const CompressOptions& o, RunDir& rundir);

// A task encoded for a model: tokenizer of the source, [CLS] = the tokenizer's vocabulary size.
struct TaskData {
  EncodedSet train, test;
};
TaskData load_task(const TaskOptions& task, const text::Tokenizer& tok, const train::ModelConfig& config,
                   std::uint64_t seed);

}  // namespace core::nxm
