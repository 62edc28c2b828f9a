// Host bf16 type of core::kernels: round-to-nearest-even conversion against hand-made bit patterns,
// NaN/Inf, and the half-ulp bound on random values.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/bf16.hpp"
#include "test_support.hpp"

using namespace core::kernels;

namespace {

std::vector<double> random_vec(std::size_t n, std::uint64_t seed, double scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace

TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN") {
  CHECK(to_bf16(1.0f).bits == 0x3F80);
  CHECK(to_float(bf16{0x3F80}) == 1.0f);
  auto from_bits = [](std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  CHECK(to_bf16(from_bits(0x3F808000u)).bits == 0x3F80);  // tie, even below
  CHECK(to_bf16(from_bits(0x3F818000u)).bits == 0x3F82);  // tie, even above
  CHECK(to_bf16(from_bits(0x3F808001u)).bits == 0x3F81);  // just above the tie
  CHECK(std::isnan(to_float(to_bf16(std::nanf("")))));
  CHECK(std::isinf(to_float(to_bf16(INFINITY))));
  for (double x : random_vec(1000, 1, 100.0)) {
    const float f = static_cast<float>(x);
    CHECK(std::abs(to_float(to_bf16(f)) - f) <= std::ldexp(std::abs(f), -8)  /* half an ulp: 8 significant bits */);
  }
}

TEST_CASE("vector conversions round element-wise") {
  const std::vector<float> x = {1.0f, -2.5f, 3.14159f, 1e-3f};
  const auto b = to_bf16(x);
  const auto back = to_float(b);
  REQUIRE(b.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CHECK(b[i].bits == to_bf16(x[i]).bits);
    CHECK(back[i] == to_float(b[i]));
  }
}
