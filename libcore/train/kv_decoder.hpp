// Incremental GPT decoding with a key/value cache, for sampling. Under causal attention the keys and
// values of earlier positions do not change when tokens are appended, so a new token needs only its
// own row through the blocks, attending to the cached keys and values; a forward over the whole
// window for every token (Model::forward) costs about the window's length times more. The arithmetic
// is Model<float>::forward's at those rows, through the same host layers (layers.hpp), with
// attention_decode as attention_forward restricted to the new rows.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "train/params.hpp"

namespace core::train {

class KvDecoder {
 public:
  // Decodes with a GPT's weights `params` (kept by reference: they must outlive the decoder).
  // UsageError for a BERT.
  explicit KvDecoder(const FlatBuffers<float>& params);

  int length() const { return length_; }  // positions held
  int capacity() const { return config().n_positions; }
  // Runs `tokens` at positions length() .. length() + size - 1 and returns the next-token logits
  // [vocab_size] after the last of them (valid until the next call). UsageError when tokens is empty
  // or would pass capacity(); DataError for an id outside the vocabulary.
  std::span<const float> append(std::span<const std::int32_t> tokens);
  void clear() { length_ = 0; }

 private:
  const ModelConfig& config() const { return params_.layout().config(); }
  // Keys (or values) of layer l at position p: rows of n_embd in [n_layer][n_positions].
  float* cache_row(std::vector<float>& cache, int l, int p);

  const FlatBuffers<float>& params_;
  int length_ = 0;
  std::vector<float> keys_, values_;
  // Activations of the rows being appended, and attention scores: resized per call.
  std::vector<float> x_, ln_, mean_, rstd_, qkv_, att_, xmid_, fc_, fc_gelu_, scores_, logits_;
};

}  // namespace core::train
