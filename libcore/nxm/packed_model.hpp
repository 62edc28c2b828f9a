// Inference of a packed BERT classifier or GPT language model (batch 1, one unpadded sequence) with the
// packed kernels: embeddings, pre-LN blocks (BERT bidirectional, GPT causal) whose four component linears
// run through PackedLinear (dense:32 components through the trainer's fp32 GEMM), final LayerNorm, then
// BERT's tanh pooler on position 0 and classifier, or GPT's LM head tied to the token table. The same code path with a dense:32 plan is the fp32 baseline and with dense:8 the
// dense int8 baseline, so latency ratios compare only the linears. dense:32 linears run the trainer's
// Eigen GEMM split over the threads by output features exactly as the packed kernels split their rows
// (the trainer's own split starts at 2^24 multiply-adds, which would leave short sequences on one thread).
// On LinearDevice::cuda the 8- and 4-bit component linears run on the CUDA device (packed_cuda.hpp: the
// packed bytes copied there once, here; activations in and outputs out per call); fp16/fp32 components
// and everything between the linears (embeddings, LayerNorm, attention, GELU, pooler, LM head) stay on the CPU.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "nxm/kernel.hpp"
#include "nxm/packed.hpp"
#include "nxm/packed_cuda.hpp"
#include "nxm/task.hpp"

namespace core::nxm {

enum class LinearDevice { cpu, cuda };

class PackedTransformer {
 public:
  // UsageError for cuda in a build without CUDA. On cuda a device must answer
  // (callers check with train::require_cuda_device, which names the reason when none does).
  explicit PackedTransformer(const PackedModel& model, LinearDevice device = LinearDevice::cpu);
  // BERT: logits [num_labels] of one sequence of token ids (length <= n_positions).
  std::vector<float> classify(std::span<const std::int32_t> tokens);
  // GPT: next-token logits [length, vocab_size] of one sequence.
  std::vector<float> lm_logits(std::span<const std::int32_t> tokens);
  // The forward of the model's own head (classify or lm_logits).
  std::vector<float> run(std::span<const std::int32_t> tokens);
  const train::ModelConfig& config() const { return config_; }
  // y[N, out] = x[N, in] W^T + b of one component linear of block `layer` (its shape: component_shape).
  void linear_forward(int layer, Component c, const float* x, int N, float* y) const;
  // Component linears that run on the CUDA device (0 on the CPU).
  int device_linears() const;

 private:
  struct Linear {
    std::shared_ptr<CudaPackedLinear> device;  // set: runs on the CUDA device (empty in builds without CUDA)
    std::unique_ptr<PackedLinear> packed;      // null (and no device): fp32 dense weights in `dense`
    std::vector<float> dense;
    std::vector<float> bias;
    int in = 0, out = 0;
    void forward(const float* x, int N, float* y) const;
  };
  const std::vector<float>& tensor(const std::string& name) const;
  void blocks_forward(std::span<const std::int32_t> tokens);  // embeddings and blocks into x_
  train::ModelConfig config_;
  std::map<std::string, std::vector<float>> dense_;
  std::vector<std::array<Linear, 4>> blocks_;  // qkv, ao, ffn1, ffn2 per layer
  std::vector<float> x_, ln_, qkv_, att_, atty_, tmp_, fc_, fcg_, mean_, rstd_;
};

// Accuracy of the packed model on an encoded set (every example run alone, batch 1).
double packed_accuracy(PackedTransformer& model, const EncodedSet& set);
// GPT: mean next-token loss over windows of seq_len + 1 tokens (inputs, then targets shifted by one;
// windows [size * (seq_len + 1)]), each run alone.
double packed_lm_loss(PackedTransformer& model, const std::vector<std::int32_t>& windows, int seq_len);
// Mean and median batch-1 latency (seconds) of each model (its run()) over the first `count` sequences,
// `repeats` passes after one warm-up pass; the models run interleaved (example by example, in turn), so a change
// of the machine's load during the measurement affects them alike.
struct Latency {
  double mean_s = 0, median_s = 0;
};
std::vector<Latency> packed_latency(const std::vector<PackedTransformer*>& models,
                                    const std::vector<std::span<const std::int32_t>>& sequences, int count, int repeats);
// The sequences of an encoded set (each example's tokens without padding).
std::vector<std::span<const std::int32_t>> sequences_of(const EncodedSet& set);

}  // namespace core::nxm
