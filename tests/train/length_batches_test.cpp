// Length-bucketed batches: every example exactly once per epoch, batch k a function of (seed, k) only, and far
// less padding than batches drawn uniformly at random on lengths shaped like SST-2's (GPT-2 tokens + [CLS]: 12 on
// average, a long tail to 64).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "train/length_batches.hpp"

using core::train::LengthBatches;

namespace {

// 2 + an exponential of mean 10, at most 64 tokens.
std::vector<std::int32_t> sentence_like_lengths(int n, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<std::int32_t> out(n);
  for (auto& l : out) l = std::min(64, 2 + static_cast<int>(-10.0 * std::log(1.0 - rng.uniform())));
  return out;
}

std::vector<std::vector<int>> first_batches(LengthBatches& lb, std::int64_t count) {
  std::vector<std::vector<int>> out;
  for (std::int64_t k = 0; k < count; ++k) {
    const auto b = lb.batch(k);
    out.emplace_back(b.begin(), b.end());
  }
  return out;
}

}  // namespace

TEST_CASE("length-bucketed batches: every example once per epoch, the same order from the same seed") {
  const int n = 1003, B = 32;  // 31 full batches and one of 11
  const auto lengths = sentence_like_lengths(n, 7);
  LengthBatches lb(lengths, B, 42);
  REQUIRE(lb.batches_per_epoch() == 32);
  const auto batches = first_batches(lb, 3 * 32);
  for (int epoch = 0; epoch < 3; ++epoch) {
    CAPTURE(epoch);
    std::vector<int> seen(n, 0);
    int short_batches = 0;
    for (int b = 0; b < 32; ++b) {
      const auto& batch = batches[epoch * 32 + b];
      short_batches += batch.size() != std::size_t(B);
      CHECK((batch.size() == std::size_t(B) || batch.size() == std::size_t(n % B)));
      for (const int i : batch) ++seen[i];
    }
    CHECK(short_batches == 1);
    CHECK(std::ranges::all_of(seen, [](int s) { return s == 1; }));
  }
  // Epochs differ, the batch order is shuffled (not by length), and batch k depends on (seed, k) only: a fresh
  // instance asked out of order, and one going through the epochs again, give the same batches.
  CHECK(batches[0] != batches[32]);
  int descents = 0;
  for (int b = 1; b < 32; ++b) descents += lengths[batches[b][0]] < lengths[batches[b - 1][0]];
  CHECK(descents > 0);
  LengthBatches again(lengths, B, 42);
  for (const std::int64_t k : {70, 3, 95, 3, 40}) {
    const auto b = again.batch(k);
    CHECK(std::vector<int>(b.begin(), b.end()) == batches[k]);
  }
  LengthBatches other(lengths, B, 43);
  CHECK(first_batches(other, 32) != std::vector<std::vector<int>>(batches.begin(), batches.begin() + 32));
  CHECK_THROWS_AS(LengthBatches({}, B, 1), core::UsageError);
  CHECK_THROWS_AS(LengthBatches(lengths, 0, 1), core::UsageError);
}

TEST_CASE("length-bucketed batches pad far less than uniformly drawn ones on sentence-like lengths") {
  const int n = 20000, B = 32;
  const auto lengths = sentence_like_lengths(n, 11);
  double mean_length = 0;
  for (const int l : lengths) mean_length += l;
  mean_length /= n;
  // Tokens of a batch padded to its longest example, per example: bucketed over one epoch, and B uniform draws
  // with replacement (the old order) over as many batches.
  LengthBatches lb(lengths, B, 5);
  double bucketed = 0, uniform = 0;
  core::Rng rng(5);
  for (std::int64_t k = 0; k < lb.batches_per_epoch(); ++k) {
    const auto b = lb.batch(k);
    int longest = 0;
    for (const int i : b) longest = std::max(longest, lengths[i]);
    bucketed += double(longest) * b.size();
    longest = 0;
    for (int j = 0; j < B; ++j) longest = std::max(longest, lengths[rng.below(n)]);
    uniform += double(longest) * B;
  }
  bucketed /= n;
  uniform /= double(lb.batches_per_epoch()) * B;
  MESSAGE("padded length per example: bucketed " << bucketed << ", uniform " << uniform << ", mean length "
                                                 << mean_length);
  CHECK(uniform > 3 * mean_length);           // ~40 of ~12: what the old order padded to
  CHECK(bucketed < 1.05 * mean_length);       // each batch within a token or so of its examples
}
