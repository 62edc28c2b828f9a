// Length-bucketed batches of variable-length examples (sequence classification, fine-tuning): per epoch every
// example once, in batches of examples of about the same length, so that a batch padded to its own longest
// example carries little padding (SST-2: sentences of 12 GPT-2 tokens on average, 64 at most; uniformly drawn
// batches of 32 pad to ~40). Epoch e's order:
//   1. shuffle all examples; 2. sort them by length, stably (within a length the shuffled order stays: the
//   length buckets are shuffled); 3. cut into consecutive batches of `batch_size` (the last one shorter when
//   batch_size does not divide the number of examples); 4. shuffle the order of the batches.
// Both shuffles draw from Rng(seed).split(e), so batch k of a run depends only on (seed, k): a resumed run or
// another process gets the same batches.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace core::train {

class LengthBatches {
 public:
  // lengths: the tokens of each example (the batch's padded length is its largest); UsageError for no
  // examples or batch_size < 1.
  LengthBatches(std::vector<std::int32_t> lengths, int batch_size, std::uint64_t seed);
  std::int64_t batches_per_epoch() const { return static_cast<std::int64_t>(starts_.size()) - 1; }
  // The example indices of batch k (0-based over the whole run; epoch k / batches_per_epoch()). Valid until
  // the next call.
  std::span<const int> batch(std::int64_t k);

 private:
  void build_epoch(std::int64_t epoch);
  std::vector<std::int32_t> lengths_;
  int batch_size_;
  std::uint64_t seed_;
  std::int64_t epoch_ = -1;        // the epoch order_ holds
  std::vector<int> order_;         // examples by length, batch after batch in the batches' own order
  std::vector<std::int64_t> starts_;  // batch b of the epoch: order_[starts_[b], starts_[b + 1])
};

}  // namespace core::train
