// Length-padded classification batches (see classify_batches.hpp).
#include "train/classify_batches.hpp"

#include <algorithm>
#include <numeric>

namespace core::train {

int padded_length(const EncodedSet& set, std::span<const int> idx) {
  constexpr int kLengthStep = 8;
  int longest = 1;
  for (const int i : idx) longest = std::max(longest, static_cast<int>(set.lengths[i]));
  return std::min(set.T, (longest + kLengthStep - 1) / kLengthStep * kLengthStep);
}

std::vector<int> length_order(const EncodedSet& set) {
  std::vector<int> order(set.size());
  std::iota(order.begin(), order.end(), 0);
  std::ranges::stable_sort(order, {}, [&](int i) { return set.lengths[i]; });
  return order;
}

Batch BatchRows::gather(const EncodedSet& set, std::span<const int> idx, int T) {
  const int B = static_cast<int>(idx.size());
  tokens_.resize(std::size_t(B) * T);
  mask_.resize(tokens_.size());
  labels_.resize(B);
  for (int b = 0; b < B; ++b) {
    const int i = idx[b];
    std::copy_n(set.tokens.begin() + std::size_t(i) * set.T, T, tokens_.begin() + std::size_t(b) * T);
    std::copy_n(set.mask.begin() + std::size_t(i) * set.T, T, mask_.begin() + std::size_t(b) * T);
    labels_[b] = set.labels[i];
  }
  Batch batch;
  batch.B = B;
  batch.T = T;
  batch.tokens = tokens_.data();
  batch.attention_mask = mask_.data();
  batch.labels = labels_.data();
  return batch;
}

void PaddingCount::add(const EncodedSet& set, std::span<const int> idx, int T) {
  for (const int i : idx) example_tokens += std::min(set.lengths[i], T);
  batch_tokens += std::int64_t(idx.size()) * T;
}

nlohmann::json PaddingCount::to_json() const {
  return {{"example_tokens", example_tokens},
          {"batch_tokens", batch_tokens},
          {"padding_share", batch_tokens > 0 ? 1.0 - double(example_tokens) / double(batch_tokens) : 0.0}};
}

PaddingCount PaddingCount::from_json(const nlohmann::json& j) {
  return {j.value("example_tokens", std::int64_t(0)), j.value("batch_tokens", std::int64_t(0))};
}

}  // namespace core::train
