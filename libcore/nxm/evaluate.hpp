// `nxm-compress eval`: accuracy (BERT) or validation loss and perplexity (GPT) of a packed model
// (through the packed kernels, batch 1) or of a run
// (its checkpoint's weights run the same batch-1 code as dense fp32), its size on disk, and batch-1
// latency. With baselines, the same weights unpacked are also run as dense fp32 and dense int8 in the
// same process, and the speed-ups are reported against them. With device=cuda the packed model's 8- and
// 4-bit linears, and those of the dense int8 baseline, run on the CUDA device (packed_model.hpp); the
// dense fp32 baseline stays on the CPU (Eigen); a build without CUDA or a machine without a device is
// refused (UsageError, exit 2) before anything is read.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "common/config.hpp"
#include "nxm/pipeline.hpp"

namespace core::nxm {

struct EvalOptions {
  std::string model;  // packed file, or a run / checkpoint folder
  TaskOptions task;
  bool task_from_model = true;
  int latency_examples = 100;
  int latency_repeats = 3;
  bool baselines = true;
  int threads = 0;
  std::string device = "cpu";
  template <class V>
  void visit(V& v) {
    v("model", model, "packed model (.safetensors from compress) or a run / checkpoint folder");
    v.section("task", task);
    v("task_from_model", task_from_model, "take task.test and task.max_seq_len (GPT: also task.train, val_fraction, max_test_examples) from the model's record when it has one");
    v("latency_examples", latency_examples, "examples timed one at a time (batch 1)", core::at_least(0));
    v("latency_repeats", latency_repeats, "timed passes over them (after one warm-up pass)", core::positive<int>());
    v("baselines", baselines, "also time the same weights as dense fp32 and dense int8");
    v("device", device, "cpu, or cuda: the packed 8/4-bit linears (and the dense int8 baseline's) on the CUDA device",
      core::one_of({"cpu", "cuda"}));
    v("threads", threads, "CPU threads (0: OMP_NUM_THREADS when set, else all cores); latency is timed on these", core::at_least(0));
  }
};

nlohmann::json run_eval(const EvalOptions& o);

}  // namespace core::nxm
