// The tiny GPT and the small text the ZeRO engine tests train on (host engine_test.cpp, device
// device_engine_test.cpp): 2 layers, width 32, 2 heads of 16 (a head size the device attention kernels take),
// byte vocabulary of 256, sequences of 16, micro batches of 2, clipping active in the first steps.
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "common/rundir.hpp"
#include "test_support.hpp"
#include "text/prepare.hpp"
#include "train/checkpoint.hpp"
#include "train/trainer.hpp"
#include "zero/sharded_checkpoint.hpp"

namespace zero_test {

inline core::train::TrainOptions tiny_options(const core::fs::path& text, int steps) {
  core::train::TrainOptions o;
  o.model.n_layer = 2;
  o.model.n_head = 2;
  o.model.n_embd = 32;
  o.model.n_positions = 32;
  o.model.vocab_size = 256;
  o.data.input = text.string();
  o.data.seq_len = 16;
  o.train_micro_batch_size_per_gpu = 2;
  o.train_iters = steps;
  o.eval_interval = 1000;
  o.eval_iters = 1;
  o.gradient_clipping = 0.5;  // active in the first steps: the clip factor takes the global norm
  o.scheduler.params.warmup_num_steps = 2;
  o.optimizer.params.lr = 3e-3;
  return o;
}

// Token shards of a small text (prepared once: a text input would be tokenized by every rank).
inline core::fs::path text_file(const core::test::TempDir& dir) {
  const auto path = dir.path() / "text.txt";
  {
    std::ofstream f(path);
    for (int i = 0; i < 200; ++i) f << "the quick brown fox " << i * 7 << " jumps over the lazy dog " << i << "\n";
  }
  core::text::PrepareOptions p;
  p.input = path.string();
  p.out = (dir.path() / "shards").string();
  p.chunk_bytes = 1 << 16;
  core::text::prepare(p);
  return dir.path() / "shards";
}

// What a training run left in its run directory: the per-step losses and gradient norms (metrics.jsonl) and
// the final sharded checkpoint's weights, flattened group after group, with each group's size.
struct RunOutputs {
  std::vector<double> losses, norms;
  std::vector<float> weights;
  std::vector<std::size_t> group_sizes;
};

inline RunOutputs read_run_outputs(const core::RunDir& rd) {
  RunOutputs out;
  std::ifstream metrics(rd.path() / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const auto rec = nlohmann::json::parse(line);
    out.losses.push_back(rec.at("loss"));
    out.norms.push_back(rec.at("grad_norm"));
  }
  core::zero::ShardReader shards(*core::train::latest_checkpoint(rd.checkpoints()));
  for (int g = 0; g < int(shards.manifest().sizes.size()); ++g) {
    const std::size_t size = shards.manifest().sizes[g];
    out.weights.resize(out.weights.size() + size);
    shards.read('w', g, 0, size, out.weights.data() + out.weights.size() - size);
    out.group_sizes.push_back(size);
  }
  return out;
}

}  // namespace zero_test
