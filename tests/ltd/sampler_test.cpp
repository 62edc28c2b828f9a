// The token sampler: each subset is strictly increasing, in range and of the requested size; the
// layers (and steps, ranks, sequences) draw different subsets; the draws are a pure function of the
// key; every position is kept with frequency r/n within 3 sigma over many draws; no length cap.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "ltd/sampler.hpp"

using namespace core::ltd;

namespace {
std::vector<std::int32_t> subset(const SubsetKey& key, int n, int r) {
  std::vector<std::int32_t> out(r, -1);
  sample_sorted_subset(key, n, r, out.data());
  return out;
}
bool valid(const std::vector<std::int32_t>& s, int n) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] < 0 || s[i] >= n || (i > 0 && s[i] <= s[i - 1])) return false;
  return true;
}
}  // namespace

TEST_CASE("subsets are unique, strictly increasing, in range, of size r; r = 0 and r = n") {
  for (int n : {1, 2, 7, 64, 1000}) {
    for (int r : {0, 1, n / 3, n - 1, n}) {
      if (r < 0) continue;
      CAPTURE(n);
      CAPTURE(r);
      for (int seq = 0; seq < 20; ++seq) {
        const auto s = subset({42, 3, 0, 1, seq}, n, r);
        CHECK(valid(s, n));  // strictly increasing: unique too; -1 left over would fail it
        if (r == n)
          for (int i = 0; i < n; ++i) CHECK(s[i] == i);
      }
    }
  }
}

TEST_CASE("subsets differ across layers, steps, ranks, sequences and seeds, and are reproducible") {
  const SubsetKey base{7, 100, 0, 1, 3};
  const auto s = subset(base, 512, 128);
  CHECK(s == subset(base, 512, 128));
  for (SubsetKey k : {SubsetKey{7, 100, 0, 2, 3}, SubsetKey{7, 101, 0, 1, 3}, SubsetKey{7, 100, 1, 1, 3},
                      SubsetKey{7, 100, 0, 1, 4}, SubsetKey{8, 100, 0, 1, 3}})
    CHECK(subset(k, 512, 128) != s);
  // draw_token_subsets: per layer, per sequence; other layers run on every token.
  RoutingPlan plan;
  plan.dropping = true;
  plan.n_layer = 4;
  plan.seq_len = 64;
  plan.layers = {1, 2};
  plan.seed = 9;
  const auto subsets = draw_token_subsets(plan, 16, 5, 0, 1, 3, 64);
  REQUIRE(subsets.size() == 4);
  CHECK(subsets[0].positions.empty());
  CHECK(subsets[3].positions.empty());
  CHECK(subsets[1].positions != subsets[2].positions);
  REQUIRE(subsets[1].positions.size() == 3 * 16);
  // Sequence b of micro step 1 is sequence 3 + b of the optimizer step.
  const std::vector<std::int32_t> second(subsets[2].positions.begin() + 16, subsets[2].positions.begin() + 32);
  CHECK(second == subset({9, 5, 0, 2, 4}, 64, 16));
  CHECK(draw_token_subsets(plan, 64, 5, 0, 0, 3, 64)[1].positions.empty());  // kept = n: the plain layer
  // A batch shorter than plan.seq_len (a length-padded finetuning batch of 24 tokens): subsets of its own
  // positions, and none at all once it is no longer than the kept count.
  const auto short_batch = draw_token_subsets(plan, 16, 5, 0, 1, 3, 24);
  REQUIRE(short_batch[1].positions.size() == 3 * 16);
  CHECK(std::vector<std::int32_t>(short_batch[1].positions.begin() + 16, short_batch[1].positions.begin() + 32) ==
        subset({9, 5, 0, 1, 4}, 24, 16));
  CHECK(valid(std::vector<std::int32_t>(short_batch[2].positions.begin(), short_batch[2].positions.begin() + 16), 24));
  CHECK(draw_token_subsets(plan, 16, 5, 0, 0, 3, 16)[1].positions.empty());
  CHECK(draw_token_subsets(plan, 16, 5, 0, 0, 3, 8)[2].positions.empty());
}

TEST_CASE("every position is kept with frequency r/n within 3 sigma") {
  const int n = 50, r = 13, draws = 20000;
  std::vector<int> count(n, 0);
  for (int d = 0; d < draws; ++d)
    for (std::int32_t p : subset({1, d, 0, 1, 0}, n, r)) ++count[p];
  const double p = double(r) / n, sigma = std::sqrt(draws * p * (1 - p));
  for (int i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(std::abs(count[i] - draws * p) < 3.5 * sigma);  // 50 positions: 3.5 sigma keeps the family at ~1%
  }
  // Pairs too (uniform subsets, not just uniform marginals): P(0 and 1 kept) = r (r-1) / (n (n-1)).
  int both = 0;
  for (int d = 0; d < draws; ++d) {
    const auto s = subset({2, d, 0, 1, 0}, n, r);
    both += (s[0] == 0 && s[1] == 1);
  }
  const double q = double(r) * (r - 1) / (double(n) * (n - 1));
  CHECK(std::abs(both - draws * q) < 3 * std::sqrt(draws * q * (1 - q)));
}

TEST_CASE("no length cap: subsets of 8192 and 65536 positions") {
  for (int n : {4096, 8192, 65536}) {
    const auto s = subset({3, 1, 0, 5, 0}, n, n / 2);
    CHECK(valid(s, n));
    CHECK(s.back() > 2048);
  }
}
