// Transformer training step on a CUDA device (GPT-2 decoder or BERT encoder), built from
// core::kernels: the same flat per-layer parameter layout as the host (params.hpp), held on the device
// as fp32 master weights, their bf16 copy (what the forward pass reads), fp32 gradients and fp32 AdamW
// moments, one buffer of each per group. Activations are bf16; statistics, losses and parameter
// gradients fp32. The step follows Model<float> (model.cpp) layer by layer, so the host model is its
// reference (tests/gpu):
//   embeddings (token + position, + segment for BERT: the batch's ids, all 0 when it has none) ->
//   L x [LN, qkv GEMM (+bias), attention (GPT: causal; BERT: bidirectional, padding keys masked by the batch's
//   attention_mask), proj GEMM (+bias +residual), LN, fc GEMM (+bias, GELU epilogue), proj GEMM (+bias
//   +residual)] -> LN -> head -> fused softmax cross-entropy over the first vocab_size columns;
//   head, task lm (GPT): logits = h wte^T over the padded vocabulary;
//   head, task mlm (BERT): dense GEMM (+bias, GELU epilogue) -> LN -> logits = . wte^T + mlm.bias;
//   head, task classify (BERT): pooler GEMM (+bias) on each sequence's position 0 -> tanh ->
//   classifier GEMM (+bias) -> fused softmax cross-entropy over the num_labels classes;
//   backward in reverse, with the tied wte getting both the head's and the embedding's gradient.
// Random-LTD (Yao et al. 2022; ltd-pretrain): set_token_routing makes chosen blocks run on a random
// sorted subset of each sequence's positions, drawn on the device (kernels::sample_token_subsets, the
// sampler of core::ltd), gathered before the block and scattered back after it (kernels::gather_rows /
// scatter_rows), as Model::set_token_subsets does on the host.
// Requirements (checked, UsageError): task lm with arch gpt, mlm or classify with arch bert; head size n_embd / n_head of 16, 32, 64 or 128 (the fused
// attention kernels); n_embd and the padded vocabulary multiples of 8 (cuBLASLt alignment of the bf16
// operands and of the GELU epilogue's aux output).
// Only available when the build has CUDA (TOOLKIT_HAVE_CUDA); host code, no CUDA headers.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/bf16.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"
#include "train/params.hpp"

namespace core::train {

// TransformerCuda's members are defined only in CUDA builds; every use sits in an `if constexpr
// (kCudaBuild)` branch, which a build without CUDA discards (no definition needed). Hold one in a
// shared_ptr: an empty one needs no ~TransformerCuda.
#ifdef TOOLKIT_HAVE_CUDA
inline constexpr bool kCudaBuild = true;
#else
inline constexpr bool kCudaBuild = false;
#endif

// The blocks that run on a subset of the positions under random-LTD, and the stream their subsets come
// from: block layers[l] of sequence b keeps the `kept` positions drawn from the stream
// kernels::routing::subset_key(seed, step, rank, layers[l], sequence0 + b) (kernels/token_routing.hpp),
// the subsets core::ltd::draw_token_subsets draws on the host. No layers: every block on every position.
struct TokenRouting {
  std::vector<int> layers;  // strictly increasing, in [0, n_layer)
  int kept = 0;             // in [1, the batch's T]
  std::uint64_t seed = 0;
  std::int64_t step = 0;
  int rank = 0;
  std::int64_t sequence0 = 0;
};

class TransformerCuda {
 public:
  // Allocates the parameter-sized device buffers, but none of `held_parts` (GroupPart bits, below): a
  // data-parallel engine that partitions them holds those itself, so that no device ever holds the whole
  // state, at start-up either.
  explicit TransformerCuda(const ModelConfig& cfg, unsigned held_parts = 0);
  ~TransformerCuda();
  TransformerCuda(const TransformerCuda&) = delete;
  TransformerCuda& operator=(const TransformerCuda&) = delete;

  const ParamLayout& layout() const;

  // Host <-> device copies of the master weights (the bf16 copy follows) and of the AdamW state.
  void upload(const FlatBuffers<float>& params, const AdamW<float>* opt = nullptr);
  void download(FlatBuffers<float>& params, AdamW<float>* opt = nullptr) const;
  // upload of group g alone: its weights w and AdamW moments m, v (null: left as they are), so that a host
  // copy of the whole state is never needed (one rank's start-up reads and uploads one group at a time).
  void upload_group(int g, const float* w, const float* m, const float* v);
  // n floats at `offset` of group g's master weights ('w') or AdamW moments ('m', 'v') into host memory at
  // dst (a checkpoint written from the device one tensor at a time).
  void download_range(char kind, int g, std::size_t offset, std::size_t n, float* dst) const;
  void download_grads(FlatBuffers<float>& grads) const;

  void zero_grads();
  // Loss of a batch for `task` (as Model::forward: lm = next-token targets, mlm = masked-LM targets,
  // targets -1 ignored; classify = one label per sequence; BERT reads the batch's segments (null: all 0)
  // and attention_mask (null: none)), the mean over counted positions or sequences. With backward, adds
  // dloss * d(loss)/d(params) into the gradients. Throws UsageError for a task the architecture lacks
  // or a batch without its targets or labels, DataError for ids or labels out of range or a batch
  // without any target.
  double step(const Batch& batch, Task task, bool backward, float dloss = 1.0f);
  // Random-LTD for the steps that follow, until set again (as Model::set_token_subsets): each routed
  // block runs on its kept rows only (GPT: causal in kept order; BERT: the padding mask gathered), its
  // output is scattered back and the other rows pass through bit for bit; backward, the kept rows'
  // gradients go through the block and the others' through the identity. The subsets are drawn on the
  // device at each step(). Throws UsageError for layers out of order or range, or kept < 1 (and step()
  // for kept above the batch's T).
  void set_token_routing(TokenRouting routing);
  // Matmul FLOPs of every step() so far, counted as the host's GEMMs count them (core::train::
  // gemm_flops_counted): 2 M N K per GEMM, and the fused attention's products per block of B x T rows,
  // 4 B T^2 n_embd forward and 8 B T^2 n_embd backward (QK^T and PV; dP, dV, dQ, dK).
  std::uint64_t gemm_flops() const;
  // sqrt(sum of squares) of all gradients.
  double grad_norm();
  // One AdamW update of every tensor (decay only where the view says so), step counter + 1.
  void adamw(const AdamWHyper& hyper, double lr, double grad_scale);
  std::int64_t steps_taken() const;

  // For a data-parallel engine that keeps its state on the device (libcore/zero's DeviceEngine): the
  // device buffers of parameter group g (layout().groups()[g].size elements each), which it gathers
  // into, reduces and updates in place, and the group hook step() calls as Model<float>::forward and
  // backward call theirs (before and after each group's use: group 0 spans the whole pass).
  struct GroupBuffers {
    float *w32, *g32, *m32, *v32;
    kernels::bf16* w16;
  };
  GroupBuffers group_buffers(int g);
  void set_group_hook(Model<float>::GroupHook hook);
  void set_steps_taken(std::int64_t t);
  // An engine that partitions the state (ZeRO stages 1-3) has the model built without its buffers of what it
  // partitions (the constructor's held_parts: group_buffers gives null for them until bound) and lends its
  // own for the passes that use them: bind_group(g, b) points the held parts of group g at b's buffers (its
  // other members are ignored; null: unbound, which a pass must not use). zero_grads clears the model's own
  // gradients only; upload, download, download_grads, grad_norm and adamw need every part they touch owned
  // (Error otherwise).
  enum GroupPart : unsigned { kWeights32 = 1, kWeights16 = 2, kGrads = 4, kMoments = 8 };
  void bind_group(int g, const GroupBuffers& b);
  // Device bytes of the model's own buffers of `parts`, over every group.
  std::size_t owned_bytes(unsigned parts) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "NVIDIA H200 (sm_90, ...)" when a CUDA device answers; throws UsageError (exit 2) naming the reason
// otherwise, including a build without CUDA. Defined in both builds.
std::string require_cuda_device();
// The device's bf16 GEMM rate (kernels::measure_gemm_tflops: n^3 product, best of reps), in TFLOP/s;
// the same errors as require_cuda_device when there is no device. Defined in both builds.
double measure_cuda_gemm_tflops(int n, int reps);

}  // namespace core::train
