// TokenSampler against the distributions it defines: frequencies of 40000 draws within 0.01 of the
// softmax probabilities restricted to the top-k and to the top-p nucleus, temperature scaling,
// greedy with ties to the lowest id, ids beyond the tokenizer's vocabulary never drawn, and the
// same draws for the same seed.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "train/sample.hpp"

using core::train::TokenSampler;

namespace {

// Frequencies of n draws from logits.
std::vector<double> frequencies(TokenSampler& s, const std::vector<float>& logits, int n) {
  std::vector<double> f(logits.size(), 0.0);
  for (int i = 0; i < n; ++i) f[static_cast<std::size_t>(s.draw(logits))] += 1.0 / n;
  return f;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= 0.01);
  }
}

const std::vector<float> kLogits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};

}  // namespace

TEST_CASE("TokenSampler draws from softmax(logits / temperature) restricted to the top-k and the top-p nucleus") {
  const int n = 40000;
  TokenSampler all(4, 1.0, 0, 1.0, 1);
  check_close(frequencies(all, kLogits, n), {0.5, 0.3, 0.15, 0.05});
  TokenSampler top2(4, 1.0, 2, 1.0, 2);
  check_close(frequencies(top2, kLogits, n), {0.625, 0.375, 0, 0});
  TokenSampler nucleus(4, 1.0, 0, 0.7, 3);  // 0.5 < 0.7 <= 0.8: the two likeliest
  check_close(frequencies(nucleus, kLogits, n), {0.625, 0.375, 0, 0});
  TokenSampler first(4, 1.0, 0, 0.45, 4);  // the likeliest alone reaches 0.45
  check_close(frequencies(first, kLogits, n), {1, 0, 0, 0});
  TokenSampler wider(4, 1.0, 0, 0.81, 5);
  check_close(frequencies(wider, kLogits, n), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0});
  TokenSampler both(4, 1.0, 3, 0.9, 6);  // top-3 mass 0.95; 0.9 of it = 0.855 needs all three
  check_close(frequencies(both, kLogits, n), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0});
  TokenSampler hot(4, 2.0, 0, 1.0, 7);  // p^(1/2), normalised
  const double z = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.15) + std::sqrt(0.05);
  check_close(frequencies(hot, kLogits, n), {std::sqrt(0.5) / z, std::sqrt(0.3) / z, std::sqrt(0.15) / z, std::sqrt(0.05) / z});
}

TEST_CASE("TokenSampler: greedy at temperature 0 (ties to the lowest id), only ids below vocab, repeatable") {
  TokenSampler greedy(4, 0.0, 40, 0.9, 1);
  CHECK(greedy.draw(kLogits) == 0);
  CHECK(greedy.draw(std::vector<float>{1, 3, 3, 2}) == 1);
  // Logits beyond the tokenizer's vocabulary (padding, [MASK]) are never drawn, however large.
  TokenSampler narrow(3, 1.0, 0, 1.0, 2);
  const std::vector<float> padded = {0, 0, 0, 100};
  for (int i = 0; i < 1000; ++i) CHECK(narrow.draw(padded) < 3);
  TokenSampler a(4, 1.0, 0, 0.9, 9), b(4, 1.0, 0, 0.9, 9);
  for (int i = 0; i < 100; ++i) CHECK(a.draw(kLogits) == b.draw(kLogits));
}
