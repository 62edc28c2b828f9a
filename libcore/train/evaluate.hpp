// `zpp-train eval`: the loss of a model on a whole data split, every target token scored exactly once
// (what a run's periodic validation estimates from a few batches, and what perplexity tables report).
// GPT: the split is cut into windows of seq_len tokens; with stride < seq_len each window after the
// first starts stride tokens after the previous one and scores only the targets the previous one did
// not, so every prediction but the first window's sees at least seq_len - stride tokens of context
// (Hugging Face's "perplexity of fixed-length models"); the last window stops at the split's end.
// BERT: consecutive windows, each masked for the MLM objective with masks drawn from seed (as
// training does), scoring the masked positions.
// Reports the mean loss per scored token (nats), perplexity = exp(loss), and bits per byte =
// loss * tokens / ln 2 / bytes, where bytes are those the scored tokens decode to (end-of-text none),
// comparable across tokenizers.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "common/config.hpp"
#include "train/data.hpp"

namespace core::train {

struct EvalData : DataSource {
  std::string split = "val";
  EvalData() { tokenizer.clear(); }  // empty: the model's

  template <class V>
  void visit(V& v) {
    visit_source(v, "tokenizer (empty: the checkpoint's, else the shards' prepare.json; gpt2:DIR for llm.c or Hugging Face weights)");
    v("split", split, "which tokens to score: val, train or all (both, one after the other)",
      core::one_of({"val", "train", "all"}));
  }
};

struct EvalOptions {
  std::string checkpoint;  // run directory, checkpoint folder, llm.c .bin or HF .safetensors (model_source.hpp)
  EvalData data;
  int seq_len = 0;               // 0: the run's data.seq_len (recorded in its checkpoint), else model.n_positions
  int stride = 0;                // 0: seq_len (windows do not overlap)
  int batch = 8;                 // windows per forward pass
  std::int64_t max_tokens = 0;   // 0: the whole split
  std::string device = "cpu";
  int threads = 0;               // 0: all cores
  std::uint64_t seed = 1337;     // bert: the masks
  double mlm_probability = 0.15;
  double max_loss = 0;           // > 0: the result says whether loss <= max_loss (the CLI exits 3 when not)

  template <class V>
  void visit(V& v) {
    v("checkpoint", checkpoint, "run directory, checkpoints/step_N folder, llm.c .bin, or HF .safetensors + config.json");
    v.section("data", data);
    v("seq_len", seq_len, "tokens per window (0: the checkpoint run's data.seq_len, else the model's n_positions)",
      core::at_least(0));
    v("stride", stride, "gpt: tokens between window starts (0: seq_len, no overlap)", core::at_least(0));
    v("batch", batch, "windows per forward pass", core::positive<int>());
    v("max_tokens", max_tokens, "score at most this many tokens from the split's start (0: all)",
      core::at_least<std::int64_t>(0));
    v("device", device, "cpu, or cuda (bf16 GEMMs; the training step's forward)", core::one_of({"cpu", "cuda"}));
    v("threads", threads, "CPU threads (0: all cores)", core::at_least(0));
    v("seed", seed, "bert: seed of the MLM masks");
    v("mlm_probability", mlm_probability, "bert: share of positions masked", core::in_range(0.01, 1.0));
    v("max_loss", max_loss, "regression check: exit 3 when the loss exceeds this (0: none)", core::at_least(0.0));
  }
};

// Returns {"loss", "perplexity", "bits_per_byte", "tokens", "bytes", "windows", "split", "seq_len",
// "stride", "checkpoint", "data", "tokenizer", "device", "threads", "tokens_per_s", "gflops_per_s" (matmul
// FLOPs of the forward passes per second), "seconds"}, and with max_loss > 0 "max_loss" and "passed"
// (loss <= max_loss; false for a non-finite loss). Throws UsageError
// (seq_len beyond the position table, stride > seq_len or set for bert, cuda unavailable),
// InputMissingError / DataError for the model or the data as find_model and load_token_data do.
nlohmann::json evaluate(const EvalOptions& options);

}  // namespace core::train
