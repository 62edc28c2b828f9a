// The single-rank training loop behind `zpp-train train` (GPT: next-token loss; BERT: masked-LM
// loss with [MASK] = the first id after the tokenizer's vocabulary): options (DeepSpeed / Megatron-style key
// names where they exist), data, model init (random, or the weights of a run, a checkpoint folder, HF
// GPT-2 safetensors or an llm.c checkpoint: model_source.hpp), gradient accumulation, global-norm clipping, AdamW with warmup + cosine,
// metrics per step, periodic validation, checkpoints, --resume, and a cooperative stop on
// SIGTERM/SIGUSR1 (checkpoint, then ExitCode::interrupted).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/rundir.hpp"
#include "train/data.hpp"
#include "train/model_config.hpp"

namespace core::train {

struct AdamWParams {
  double lr = 1e-3;
  std::vector<double> betas = {0.9, 0.95};
  double eps = 1e-8;
  double weight_decay = 0.1;
  template <class V>
  void visit(V& v) {
    v("lr", lr, "peak learning rate", core::positive<double>());
    v("betas", betas, "Adam beta1, beta2");
    v("eps", eps, "Adam epsilon", core::positive<double>());
    v("weight_decay", weight_decay, "decoupled weight decay (matrices and embeddings only)", core::at_least(0.0));
  }
};

struct OptimizerOptions {
  std::string type = "AdamW";
  AdamWParams params;
  template <class V>
  void visit(V& v) {
    v("type", type, "optimizer (AdamW)", core::one_of({"AdamW"}));
    v.section("params", params);
  }
};

struct SchedulerParams {
  std::int64_t warmup_num_steps = 20;
  std::int64_t total_num_steps = 0;  // 0: train_iters
  double cos_min_ratio = 0.1;
  template <class V>
  void visit(V& v) {
    v("warmup_num_steps", warmup_num_steps, "linear warmup steps", core::at_least<std::int64_t>(0));
    v("total_num_steps", total_num_steps, "end of the decay (0: train_iters)", core::at_least<std::int64_t>(0));
    v("cos_min_ratio", cos_min_ratio, "WarmupCosineLR: final lr as a fraction of the peak", core::in_range(0.0, 1.0));
  }
};

struct SchedulerOptions {
  std::string type = "WarmupCosineLR";
  SchedulerParams params;
  template <class V>
  void visit(V& v) {
    v("type", type, "after the linear warmup: WarmupLR (constant), WarmupDecayLR (linear to 0), WarmupCosineLR",
      core::one_of({"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"}));
    v.section("params", params);
  }
};

struct TrainOptions {
  ModelConfig model;
  DataOptions data;
  int train_micro_batch_size_per_gpu = 8;
  int gradient_accumulation_steps = 1;
  double gradient_clipping = 1.0;
  std::int64_t train_iters = 200;
  OptimizerOptions optimizer;
  SchedulerOptions scheduler;
  int eval_interval = 100;
  int eval_iters = 8;
  bool eval_at_start = false;  // a validation loss before the first step (llm.c's val loss at step 0)
  int save_interval = 0;  // steps between checkpoints (0: only at the end and on a stop signal)
  int keep_checkpoints = 2;  // newest complete checkpoints kept (0: all)
  std::string init_from;  // weights to start from: a run or checkpoint folder, llm.c *.bin, HF *.safetensors
  std::uint64_t seed = 1337;
  // Small models can train faster on one thread (threads=1): on the busy 2-core machine the default config
  // took 0.17 s/step on 1 thread and 0.97 s/step on 2 (thread wake-ups at every parallel region).
  int threads = 0;        // 0: OMP_NUM_THREADS when set, else all cores (common/threads.hpp)
  bool resume = false;
  double mlm_probability = 0.15;  // bert: share of positions masked
  std::string device = "cpu";     // cpu, or cuda (GPT and BERT; needs a CUDA build and a device)

  template <class V>
  void visit(V& v) {
    v.section("model", model);
    v.section("data", data);
    v("train_micro_batch_size_per_gpu", train_micro_batch_size_per_gpu, "sequences per micro step",
      core::positive<int>());
    v("gradient_accumulation_steps", gradient_accumulation_steps, "micro steps per optimizer step",
      core::positive<int>());
    v("gradient_clipping", gradient_clipping, "max global gradient norm (0: off)", core::at_least(0.0));
    v("train_iters", train_iters, "optimizer steps", core::positive<std::int64_t>());
    v.section("optimizer", optimizer);
    v.section("scheduler", scheduler);
    v("eval_interval", eval_interval, "steps between validation losses", core::positive<int>());
    v("eval_iters", eval_iters, "validation batches per evaluation", core::positive<int>());
    v("eval_at_start", eval_at_start, "also a validation loss before the first step (metrics record of step 0)");
    v("save_interval", save_interval, "steps between checkpoints (0: end and signal only)", core::at_least(0));
    v("keep_checkpoints", keep_checkpoints, "newest checkpoints kept, older ones removed (0: keep all, e.g. to eval each)",
      core::at_least(0));
    v("init_from", init_from,
      "weights to start from (fresh optimizer): a run or checkpoint folder, llm.c .bin, or HF .safetensors + config.json");
    v("seed", seed, "seed of the init and of batch sampling");
    v("threads", threads, "CPU threads (0: OMP_NUM_THREADS when set, else all cores)", core::at_least(0));
    v("resume", resume, "continue from the newest checkpoint in the run directory");
    v("device", device, "cpu, or cuda (GPT or BERT; bf16 GEMMs, fp32 master weights)", core::one_of({"cpu", "cuda"}));
    v("mlm_probability", mlm_probability, "bert: share of positions the MLM objective masks",
      core::in_range(0.01, 1.0));
  }
  // Throws UsageError naming the keys (heads vs width, seq_len vs n_positions, betas, arch).
  void validate() const;
};

// Called after every optimizer step with the step's metrics record (tests use it to request a stop).
using StepHook = std::function<void(const nlohmann::json& record)>;

template <class T>
class Model;
class TransformerCuda;

// What a tool built over this loop adds to it (ltd-pretrain: random-LTD and the LayerToken learning-rate
// schedule). Every member is optional; an empty one leaves the loop as zpp-train runs it. device=cuda runs
// an extension with before_micro only when it has before_device_micro too. Each rank of a data-parallel run
// has its own (zero::ExtensionFactory).
struct TrainExtension {
  // Before the forward of micro step `micro` of optimizer step `step` (0-based), e.g. to set the model's
  // token subsets (Model::set_token_subsets); the loop clears them after the micro step's backward, so
  // validation runs on every token.
  std::function<void(Model<float>& model, std::int64_t step, int micro)> before_micro;
  // The same on device=cuda, with the device's model (TransformerCuda::set_token_routing, cleared
  // after the micro step's backward).
  std::function<void(TransformerCuda& gpu, std::int64_t step, int micro)> before_device_micro;
  // The learning rate of optimizer step `step`, in place of scheduler.*.
  std::function<double(std::int64_t step)> lr;
  // Adds fields to step `step`'s metrics record (before validation and the record's writing).
  std::function<void(std::int64_t step, nlohmann::json& record)> on_step;
  // Adds fields to the summary.
  std::function<void(nlohmann::json& summary)> on_summary;
  // Fields state.json of a checkpoint after `step` steps keeps (under "extension"; rank 0's), and what --resume
  // does with them (called on every rank with the state of the checkpoint it continues and its step).
  std::function<nlohmann::json(std::int64_t step)> checkpoint_state;
  std::function<void(const nlohmann::json& state, std::int64_t step)> on_resume;
};

struct TrainOutcome {
  nlohmann::json summary;    // final_loss, val_loss, tokens_per_s, ...
  bool interrupted = false;  // stopped by a signal after checkpointing
};

// Runs training into `rundir` (metrics.jsonl, checkpoints/). Library errors are thrown.
TrainOutcome run_training(const TrainOptions& options, RunDir& rundir, const StepHook& hook = {});
TrainOutcome run_training(const TrainOptions& options, RunDir& rundir, const StepHook& hook,
                          const TrainExtension& extension);

class DataParallel;
// The same loop on one rank of a data-parallel run (data_parallel.hpp): rank r of N trains on micro
// batches r, N + r, ... of the one-rank run with N times the micro steps, so N ranks see the batches
// of one rank with gradient_accumulation_steps * N. `rundir` is rank 0's (null on the other ranks:
// only rank 0 reads and writes checkpoints and metrics; the engine hands the state to the others).
TrainOutcome run_training(const TrainOptions& options, RunDir* rundir, DataParallel* dp, const StepHook& hook = {},
                          const TrainExtension& extension = {});

// Dense bf16 peak the CUDA path's MFU is measured against (H200, TFLOP/s): MFU = model FLOPs per
// step (Model::flops_per_step: 6 N per token for the matmuls plus attention) / step time / this.
inline constexpr double kCudaPeakTflops = 790.0;

}  // namespace core::train
