// Length-bucketed batch order (see length_batches.hpp).
#include "train/length_batches.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::train {

namespace {
// Fisher-Yates with the unbiased draws of core::Rng (std::shuffle's draws differ between standard libraries).
template <class T>
void shuffle_with(std::vector<T>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}
}  // namespace

LengthBatches::LengthBatches(std::vector<std::int32_t> lengths, int batch_size, std::uint64_t seed)
    : lengths_(std::move(lengths)), batch_size_(batch_size), seed_(seed) {
  if (lengths_.empty()) throw UsageError("length-bucketed batches: no examples");
  if (batch_size_ < 1) throw UsageError("length-bucketed batches: batch size " + std::to_string(batch_size_) + " < 1");
  const std::int64_t n = static_cast<std::int64_t>(lengths_.size());
  starts_.resize(static_cast<std::size_t>((n + batch_size_ - 1) / batch_size_) + 1);
}

void LengthBatches::build_epoch(std::int64_t epoch) {
  Rng rng = Rng(seed_).split(static_cast<std::uint64_t>(epoch));
  std::vector<int> shuffled(lengths_.size());
  std::iota(shuffled.begin(), shuffled.end(), 0);
  shuffle_with(shuffled, rng);
  std::ranges::stable_sort(shuffled, {}, [&](int i) { return lengths_[i]; });
  const std::int64_t n = static_cast<std::int64_t>(shuffled.size()), batches = batches_per_epoch();
  std::vector<std::int64_t> batch_order(static_cast<std::size_t>(batches));
  std::iota(batch_order.begin(), batch_order.end(), 0);
  shuffle_with(batch_order, rng);
  order_.clear();
  order_.reserve(shuffled.size());
  starts_[0] = 0;
  for (std::int64_t b = 0; b < batches; ++b) {
    const std::int64_t from = batch_order[b] * batch_size_, to = std::min(n, from + batch_size_);
    order_.insert(order_.end(), shuffled.begin() + from, shuffled.begin() + to);
    starts_[b + 1] = static_cast<std::int64_t>(order_.size());
  }
  epoch_ = epoch;
}

std::span<const int> LengthBatches::batch(std::int64_t k) {
  const std::int64_t per_epoch = batches_per_epoch(), epoch = k / per_epoch, b = k % per_epoch;
  if (epoch != epoch_) build_epoch(epoch);
  return {order_.data() + starts_[b], static_cast<std::size_t>(starts_[b + 1] - starts_[b])};
}

}  // namespace core::train
