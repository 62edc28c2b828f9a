// The tiny GPT and the small text the ZeRO engine tests train on (host engine_test.cpp, device
// device_engine_test.cpp): 2 layers, width 32, 2 heads of 16 (a head size the device attention kernels take),
// byte vocabulary of 256, sequences of 16, micro batches of 2, clipping active in the first steps.
#pragma once
#include <fstream>

#include "test_support.hpp"
#include "text/prepare.hpp"
#include "train/trainer.hpp"

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

}  // namespace zero_test
