// Transformer model configuration (GPT-2 style decoder or BERT style encoder) and the sizes derived
// from it. Key names follow Hugging Face's GPT-2 config (n_layer, n_head, n_embd, n_positions,
// vocab_size). Requires n_embd % n_head == 0 and every size > 0; validate() throws UsageError naming
// the key otherwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.hpp"

namespace core::train {

enum class Arch { gpt, bert };

struct ModelConfig {
  std::string arch = "gpt";    // gpt: causal decoder, tied LM head; bert: bidirectional encoder
  int n_layer = 4;             // transformer blocks
  int n_head = 4;              // attention heads; must divide n_embd
  int n_embd = 128;            // width C
  int n_positions = 256;       // rows of the learned position table (max context)
  int vocab_size = 256;        // V: real vocabulary (logits are computed over V)
  int vocab_pad_to = 64;       // wte has Vp = round_up(V, vocab_pad_to) rows (llm.c pads to 128)
  int type_vocab_size = 2;     // bert: segment embedding rows
  int num_labels = 2;          // bert: classes of the sequence-classification head
  double layer_norm_eps = 1e-5;
  double init_std = 0.02;      // N(0, init_std) weights; residual projections scaled by 1/sqrt(2L)

  template <class V>
  void visit(V& v) {
    v("arch", arch, "gpt (causal decoder) or bert (bidirectional encoder)", core::one_of({"gpt", "bert"}));
    v("n_layer", n_layer, "number of transformer blocks", core::positive<int>());
    v("n_head", n_head, "attention heads (must divide n_embd)", core::positive<int>());
    v("n_embd", n_embd, "model width", core::positive<int>());
    v("n_positions", n_positions, "position table size (max context)", core::positive<int>());
    v("vocab_size", vocab_size, "vocabulary size", core::positive<int>());
    v("vocab_pad_to", vocab_pad_to, "pad the token table to a multiple of this", core::positive<int>());
    v("type_vocab_size", type_vocab_size, "bert: segment types", core::positive<int>());
    v("num_labels", num_labels, "bert: classes of the classification head", core::positive<int>());
    v("layer_norm_eps", layer_norm_eps, "LayerNorm epsilon", core::positive<double>());
    v("init_std", init_std, "std of the normal weight init", core::positive<double>());
  }
  // Cross-field checks (heads divide width); throws UsageError naming the keys.
  void validate() const;

  Arch architecture() const { return arch == "bert" ? Arch::bert : Arch::gpt; }
  // Parameters of the model (ParamLayout's count) in closed form, without building a layout: what a header
  // or state.json describes is checked against the bytes that follow it before anything is allocated.
  std::int64_t parameter_count() const;
  int head_dim() const { return n_embd / n_head; }
  // Computed in 64 bits; validate() has checked that it fits an int.
  int padded_vocab() const {
    const std::int64_t pad = vocab_pad_to;
    return static_cast<int>((vocab_size + pad - 1) / pad * pad);
  }
};

}  // namespace core::train
