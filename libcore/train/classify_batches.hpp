// Batches of a classification set (classify_data.hpp) padded to their own longest example, not to the set's:
// SST-2's sentences are 12 GPT-2 tokens on average and 64 at most, so batches padded to the set's longest are
// mostly padding. The padded length is the longest example rounded up to 8 tokens (the model re-sizes its
// activations for a few shapes only), at most the set's T. Padding keys are masked out of attention (their
// weights are exactly zero) and every other operation is per row, so a batch's logits are those of the fully
// padded batch up to the order of float sums. With length_order (evaluation) or train::LengthBatches
// (training) the examples of a batch have about the same length.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "train/classify_data.hpp"
#include "train/model.hpp"

namespace core::train {

// The padded length of the examples `idx` of `set` (see above).
int padded_length(const EncodedSet& set, std::span<const int> idx);

// The examples of `set` sorted by length, stably (evaluation batches of similar lengths).
std::vector<int> length_order(const EncodedSet& set);

// The rows of a batch: the examples `idx` cut or padded to T tokens, with their mask and labels.
class BatchRows {
 public:
  // A batch of idx.size() sequences of T <= set.T tokens over this object's buffers (valid until the next call).
  Batch gather(const EncodedSet& set, std::span<const int> idx, int T);

 private:
  std::vector<std::int32_t> tokens_, labels_;
  std::vector<std::uint8_t> mask_;
};

// The example and padded-batch tokens of the batches a run trained on.
struct PaddingCount {
  std::int64_t example_tokens = 0, batch_tokens = 0;
  // The examples idx in a batch of T tokens each.
  void add(const EncodedSet& set, std::span<const int> idx, int T);
  // {example_tokens, batch_tokens, padding_share = 1 - example / batch}.
  nlohmann::json to_json() const;
  // The counts of to_json() (0 when absent).
  static PaddingCount from_json(const nlohmann::json& j);
};

}  // namespace core::train
