// The transformer on the host: GPT-2 style decoder (token + learned position embeddings, pre-LN
// blocks, causal multi-head attention, tanh-GELU MLP, final LayerNorm, LM head tied to wte) and
// BERT style encoder (adds segment embeddings; bidirectional attention with a key padding mask;
// MLM head dense-GELU-LN-decoder tied to wte with an output bias; sequence classification head
// tanh pooler on position 0 + linear). Blocks are pre-LN in both (BERT's original is post-LN).
// Hand-written forward and backward over the flat parameter groups of params.hpp; the step is
// split per layer (embed, block l, head) so a device path can replace the pieces one by one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "train/model_config.hpp"
#include "train/params.hpp"

namespace core::train {

enum class Task { lm, mlm, classify };

struct Batch {
  int B = 0, T = 0;
  const std::int32_t* tokens = nullptr;          // [B*T] in [0, vocab_size)
  const std::int32_t* targets = nullptr;         // [B*T] lm: next token; mlm: token or -1 (ignored)
  const std::int32_t* segments = nullptr;        // [B*T] bert segment ids (null: all 0, as in BERT)
  const std::uint8_t* attention_mask = nullptr;  // [B*T] bert: 1 real token, 0 padding (null: all real)
  const std::int32_t* labels = nullptr;          // [B] classify: class ids
};

// The positions one block runs on under random layerwise token dropping (random-LTD, Yao et al.
// 2022; the tool is ltd-pretrain): `kept` positions of each sequence, `positions` [B * kept] each
// sequence's own, strictly increasing, in [0, T). The block runs on the gathered rows (GPT: causal
// in kept order; BERT: the padding mask gathered), its output is scattered back, and the rows it did
// not keep pass through unchanged (backward: the identity for them).
struct TokenSubset {
  int kept = 0;
  std::vector<std::int32_t> positions;  // empty: the block runs on every position
};

template <class T>
class Model {
 public:
  // Allocation::deferred leaves the weight and gradient buffers to a data-parallel engine (attach_fresh).
  explicit Model(const ModelConfig& cfg, Allocation allocation = Allocation::eager);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return layout_->config(); }
  const ParamLayout& layout() const { return *layout_; }
  FlatBuffers<T>& params() { return params_; }
  const FlatBuffers<T>& params() const { return params_; }
  FlatBuffers<T>& grads() { return grads_; }

  // Forward pass. With targets (lm/mlm) or labels (classify): returns the mean loss over counted
  // positions and keeps what backward() needs. Without: returns 0 and logits() holds the logits.
  // Throws DataError for ids out of range, UsageError for T > n_positions or a task the
  // architecture lacks.
  T forward(const Batch& batch, Task task);
  // Per block (n_layer entries, or none: every block on every position) until set again; forward()
  // refuses subsets that do not fit its batch (UsageError).
  void set_token_subsets(std::vector<TokenSubset> subsets) { subsets_ = std::move(subsets); }
  // Adds dloss * d(loss)/d(params) of the last forward (which had targets) into grads().
  void backward(T dloss = T(1));
  // The same, plus the gradient of another loss of the block outputs (e.g. hidden-state distillation's):
  // block_output_grads[l] = d(other)/d(block_output(l)) [B*T, n_embd], null for none (n_layer entries,
  // or none at all: exactly backward(dloss)).
  void backward(T dloss, const std::vector<const T*>& block_output_grads);
  // Adds the gradient of another loss of the logits into grads(), given d(loss)/d(logits) (e.g.
  // knowledge distillation's): classify [B, num_labels], after a classify forward with labels;
  // lm/mlm [rows with a target (in order), vocab_size], after a forward with targets. Block output
  // gradients as in backward().
  void backward_from_logits(const T* dlogits, const std::vector<const T*>& block_output_grads = {});
  // The output of block l (0 <= l < n_layer) in the last forward, [B*T, n_embd]: the residual stream
  // after the block (what hidden-state distillation compares between a student and its teacher).
  const T* block_output(int l) const;
  // lm/mlm: [B*T, vocab_size]; classify: [B, num_labels]. Valid after a forward without targets (with
  // targets the head runs only on the rows that have one).
  const T* logits() const { return task_ == Task::classify ? acts_.cls_logits.data() : acts_.logits.data(); }

  // Called around each parameter group's use, in the order of use: forward embed (0, held until the
  // head is done), block l (1 + l), then backward in reverse (head and embed under group 0). A data-
  // parallel engine gathers a group's weights before and releases them after (ZeRO-3), and reduces
  // a group's gradients once its backward is done (ZeRO-2). Empty: no calls.
  enum class Pass { forward, backward };
  using GroupHook = std::function<void(int group, Pass pass, bool before)>;
  void set_group_hook(GroupHook hook) { group_hook_ = std::move(hook); }

  // Bytes of the activation buffers a forward + backward over a B x Tn batch allocates.
  static std::size_t activation_bytes(const ModelConfig& cfg, int B, int Tn);

  // Matmul FLOPs of one forward + backward over a B x T batch (3x the forward's), the LM / MLM head
  // on head_rows rows (< 0: all B T; forward() runs it on the rows that have a target).
  double flops_per_step(int B, int Tn, Task task, double head_rows = -1) const;

 private:
  struct Acts {
    int B = -1, Tn = -1;
    bool vocab_logits = true;  // `logits` holds B Tn V (lm / mlm); a classify forward leaves it empty
    using Buf = AlignedVector<T>;
    Buf resid, ln1, ln1_mean, ln1_rstd, qkv, att, atty, xmid, ln2, ln2_mean, ln2_rstd, fch, fch_gelu;
    Buf lnf, lnf_mean, lnf_rstd, logits, losses;
    Buf mlm_h, mlm_g, mlm_ln, mlm_mean, mlm_rstd;
    Buf cls_in, pooled, cls_logits, cls_losses;
    Buf dres, dln, dqkv, datty, dfch, dfch_gelu, datt, dlnf, dmlm, dcls;
    Buf head_in, head_d;  // the head's gathered input rows and their gradients
  };
  // Calls f(buffer, element count) for every activation buffer of a B x Tn batch: the one list
  // that ensure_acts allocates and activation_bytes sizes.
  template <class F>
  static void for_each_act(Acts& a, const ModelConfig& c, int B, int Tn, F&& f);
  void ensure_acts(int B, int Tn, Task task);
  void check_batch(const Batch& b, Task task) const;
  T* resid(int l);  // residual stream entering block l (l = n_layer: the last block's output)
  const T* resid(int l) const;
  void check_block_output_grads(const std::vector<const T*>& g) const;
  void embed_forward();
  void block_forward(int l);
  T head_forward();
  void head_backward(T dloss);
  void block_backward(int l);
  // Block l over B sequences of Tn rows: x [B*Tn, C] -> xout; backward turns dres (dL/dxout) into
  // dL/dx in place. Its activations take the first B*Tn rows of block l's slices.
  void block_rows_forward(int l, const T* x, T* xout, int Tn, const std::uint8_t* key_mask);
  void block_rows_backward(int l, const T* x, T* dres, int Tn);
  bool routed(int l) const { return !subsets_.empty() && !subsets_[l].positions.empty(); }
  void check_subsets() const;
  void embed_backward();

  std::unique_ptr<ParamLayout> layout_;
  FlatBuffers<T> params_, grads_;
  Acts acts_;
  Batch batch_;
  std::vector<TokenSubset> subsets_;
  AlignedVector<T> routed_in_, routed_out_;  // a routed block's gathered rows (and their gradients)
  std::vector<std::uint8_t> routed_mask_;    // its gathered key padding mask
  std::vector<std::int32_t> default_segments_;  // zeros for a bert batch given without segment ids
  Task task_ = Task::lm;
  int count_ = 0;  // positions (or sequences) the last loss averaged over
  bool logits_grad_given_ = false;  // backward_from_logits: cls_logits / logits hold d(loss)/d(logits)
  const std::vector<const T*>* block_output_grads_ = nullptr;  // of the backward in progress (null: none)
  // Rows of the last lm/mlm forward that have a target; gathered_: fewer than all, so the head ran
  // on head_in (their lnf rows) with head_targets_.
  std::vector<int> head_rows_;
  std::vector<std::int32_t> head_targets_;
  bool gathered_ = false;
  GroupHook group_hook_;
  void hook(int group, Pass pass, bool before) {
    if (group_hook_) group_hook_(group, pass, before);
  }
  const std::int32_t* head_targets() const { return gathered_ ? head_targets_.data() : batch_.targets; }
  int head_row_count() const { return gathered_ ? static_cast<int>(head_rows_.size()) : batch_.B * batch_.T; }
};

}  // namespace core::train
