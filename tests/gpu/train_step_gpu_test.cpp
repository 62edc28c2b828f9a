// One GPT training step on the device (GptCuda) against the host model (Model<float>, the reference)
// from the same initial weights, and a few AdamW steps on the device that make the loss fall.
// Tolerances (the device keeps activations in bf16, 8 significant bits, through ~10 rounded layers
// per block each way; parameter gradients are fp32 sums of bf16 products):
//   loss:            |gpu - cpu| <= 1e-2 * cpu
//   every gradient tensor, relative L2 error ||g_gpu - g_cpu|| <= tol * ||g_cpu|| + 1e-6 with
//     tol = 0.05 for weight matrices and embeddings (wte, wpe, c_attn, c_proj, c_fc weights),
//     tol = 0.10 for biases and LayerNorm gains/biases (column sums of signed terms: more cancellation);
//   and the cosine between the two gradient tensors >= 0.99.
// Exits 77 (skipped) when no CUDA device answers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/rng.hpp"
#include "kernels/runtime.hpp"
#include "test_support.hpp"
#include "train/gpt_cuda.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"

using namespace core::train;

namespace {

const bool kHaveDevice = [] {
  if (core::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device answers: GPU training-step tests skipped\n");
    std::exit(77);
  }
  return true;
}();

ModelConfig small_gpt() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.n_positions = 32;
  c.vocab_size = 100;
  c.vocab_pad_to = 8;  // padded vocabulary 104
  return c;
}

struct Data {
  int B = 4, T = 32;
  std::vector<std::int32_t> tok, tgt;
  explicit Data(int vocab) : tok(B * T), tgt(B * T) {
    core::Rng rng(11);
    for (auto& t : tok) t = static_cast<std::int32_t>(rng.below(vocab));
    for (int i = 0; i < B * T; ++i) tgt[i] = i % 7 == 3 ? -1 : tok[(i + 1) % (B * T)];  // some ignored
  }
  Batch batch() const {
    Batch b;
    b.B = B;
    b.T = T;
    b.tokens = tok.data();
    b.targets = tgt.data();
    return b;
  }
};

}  // namespace

TEST_CASE("one GPT step: device loss and every parameter gradient match the host model") {
  const ModelConfig cfg = small_gpt();
  Model<float> cpu(cfg);
  init_parameters(cpu.params(), 7);
  const Data data(cfg.vocab_size);
  cpu.grads().zero();
  const double cpu_loss = cpu.forward(data.batch(), Task::lm);
  cpu.backward();

  GptCuda gpu(cfg);
  gpu.upload(cpu.params());
  gpu.zero_grads();
  const double gpu_loss = gpu.step(data.batch(), true);
  CHECK(std::abs(gpu_loss - cpu_loss) <= 1e-2 * cpu_loss);
  FlatBuffers<float> grads(cpu.layout());
  gpu.download_grads(grads);

  const ParamLayout& layout = cpu.layout();
  for (int g = 0; g < layout.num_groups(); ++g)
    for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
      const TensorView& view = layout.groups()[g].tensors[t];
      const float* want = cpu.grads().tensor(g, t);
      const float* got = grads.tensor(g, t);
      double diff = 0, ref = 0, dotp = 0, got2 = 0;
      for (std::size_t i = 0; i < view.numel; ++i) {
        diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        ref += double(want[i]) * want[i];
        got2 += double(got[i]) * got[i];
        dotp += double(got[i]) * want[i];
      }
      const double tol = view.decay ? 0.05 : 0.10;
      const double rel = std::sqrt(diff) / (std::sqrt(ref) + 1e-30);
      const double cosine = dotp / (std::sqrt(ref * got2) + 1e-30);
      INFO(view.name << ": relative L2 error " << rel << " (tol " << tol << "), cosine " << cosine << ", |cpu| "
                     << std::sqrt(ref));
      CHECK(std::sqrt(diff) <= tol * std::sqrt(ref) + 1e-6);
      if (ref > 1e-12) CHECK(cosine >= 0.99);
    }
  CHECK(gpu.grad_norm() == doctest::Approx(global_grad_norm(cpu.grads())).epsilon(0.05));
}

TEST_CASE("device AdamW steps on one batch make the loss fall; weights come back to the host") {
  const ModelConfig cfg = small_gpt();
  Model<float> host(cfg);
  init_parameters(host.params(), 3);
  GptCuda gpu(cfg);
  gpu.upload(host.params());
  const Data data(cfg.vocab_size);
  AdamWHyper hyper;
  double first = 0, last = 0;
  for (int step = 0; step < 12; ++step) {
    gpu.zero_grads();
    last = gpu.step(data.batch(), true);
    if (step == 0) first = last;
    gpu.adamw(hyper, 3e-3, 1.0);
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < first - 0.5);
  CHECK(gpu.steps_taken() == 12);
  // The downloaded master weights give the device's loss on the host too (bf16 forward vs fp32).
  AdamW<float> opt(host.layout(), hyper);
  gpu.download(host.params(), &opt);
  CHECK(opt.steps_taken() == 12);
  const double host_loss = host.forward(data.batch(), Task::lm);
  const double device_loss = gpu.step(data.batch(), false);
  CHECK(std::abs(host_loss - device_loss) <= 2e-2 * host_loss);
}
