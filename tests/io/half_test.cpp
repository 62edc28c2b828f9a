// f16/bf16 conversions against independent references: the IEEE 754 value formula for every f16
// bit pattern, a brute-force nearest-value search (ties to even) for float -> f16/bf16, and the
// compiler's own _Float16 conversion where available.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "io/half.hpp"
#include "test_support.hpp"

using namespace core::io;

namespace {

// Value of an f16 pattern from the IEEE 754 binary16 definition, in double.
double f16_value(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0x1F) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0) v = std::ldexp(m, -24);
  else v = std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -v : v;
}

// Nearest of two candidate patterns lo < hi (by magnitude) to |x|, ties to the even pattern.
std::uint16_t nearest(double ax, std::uint16_t lo, double vlo, std::uint16_t hi, double vhi) {
  const double dlo = ax - vlo, dhi = vhi - ax;
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1) ? hi : lo;
}

// float -> f16 by search over the magnitudes of all finite f16 values (65536 stands for overflow).
std::uint16_t f16_reference(float x) {
  static const std::vector<double> mags = [] {
    std::vector<double> v;
    for (std::uint32_t k = 0; k <= 0x7C00; ++k) v.push_back(k == 0x7C00 ? 65536.0 : f16_value(static_cast<std::uint16_t>(k)));
    return v;
  }();
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(static_cast<double>(x));
  if (ax >= 65536.0) return sign | 0x7C00;
  const auto it = std::upper_bound(mags.begin(), mags.end(), ax);  // first magnitude > ax
  const auto hi = static_cast<std::uint16_t>(it - mags.begin()), lo = static_cast<std::uint16_t>(hi - 1);
  return sign | nearest(ax, lo, mags[lo], hi, mags[hi]);
}

// float -> bf16: the two bf16 neighbours of x are its truncation and the next pattern up.
std::uint16_t bf16_reference(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::uint16_t sign = (bits >> 16) & 0x8000;
  const auto lo = static_cast<std::uint16_t>((bits >> 16) & 0x7FFF), hi = static_cast<std::uint16_t>(lo + 1);
  const double vlo = std::fabs(static_cast<double>(bf16_to_float(lo)));
  const double vhi = hi == 0x7F80 ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(bf16_to_float(hi)));
  return sign | nearest(std::fabs(static_cast<double>(x)), lo, vlo, hi, vhi);
}

// Random finite floats spread over every exponent (uniform bit patterns), plus edge values.
std::vector<float> sample_floats() {
  std::mt19937 gen(12345);
  std::vector<float> xs;
  while (xs.size() < 200000) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(gen()));
    if (std::isfinite(x)) xs.push_back(x);
  }
  std::uniform_real_distribution<float> in_range(-70000.0f, 70000.0f);
  for (int i = 0; i < 100000; ++i) xs.push_back(in_range(gen));
  for (float x : {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f,
                  2.9802326e-08f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()})
    xs.push_back(x);
  return xs;
}

}  // namespace

TEST_CASE("f16 -> float is exact for every bit pattern and float -> f16 gives it back") {
  for (std::uint32_t k = 0; k <= 0xFFFF; ++k) {
    const auto h = static_cast<std::uint16_t>(k);
    const float f = f16_to_float(h);
    const double expected = f16_value(h);
    if (std::isnan(expected)) {
      CHECK(std::isnan(f));
      CHECK(std::isnan(f16_to_float(float_to_f16(f))));
      CHECK(std::signbit(f) == bool(h & 0x8000));
    } else {
      REQUIRE(static_cast<double>(f) == expected);
      REQUIRE(std::signbit(f) == bool(h & 0x8000));
      REQUIRE(float_to_f16(f) == h);
    }
  }
}

TEST_CASE("float -> f16 rounds to nearest, ties to even, as a brute-force search") {
  for (float x : sample_floats()) {
    INFO("x = ", x);
    REQUIRE(float_to_f16(x) == f16_reference(x));
  }
  // Exact midpoints between consecutive f16 values (representable in float): ties go to even.
  for (std::uint16_t h = 0; h < 0x7BFF; ++h) {
    const float mid = static_cast<float>((f16_value(h) + f16_value(static_cast<std::uint16_t>(h + 1))) / 2);
    REQUIRE(float_to_f16(mid) == ((h & 1) ? h + 1 : h));
  }
  CHECK(float_to_f16(1.0f) == 0x3C00);
  CHECK(float_to_f16(-2.0f) == 0xC000);
  CHECK(float_to_f16(0.1f) == 0x2E66);
  CHECK(float_to_f16(65504.0f) == 0x7BFF);
  CHECK(float_to_f16(65520.0f) == 0x7C00);  // midpoint to the next (infinite) step: even is inf
  CHECK(float_to_f16(1e10f) == 0x7C00);
  CHECK(float_to_f16(-std::numeric_limits<float>::infinity()) == 0xFC00);
  CHECK(float_to_f16(5.9604645e-08f) == 0x0001);  // 2^-24, smallest subnormal
  CHECK(float_to_f16(-0.0f) == 0x8000);
  CHECK(std::isnan(f16_to_float(float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

#ifdef __FLT16_MAX__
TEST_CASE("float -> f16 agrees with the compiler's _Float16 conversion") {
  for (float x : sample_floats()) {
    const auto compiler = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    INFO("x = ", x);
    REQUIRE(float_to_f16(x) == compiler);
  }
}
#endif

TEST_CASE("float -> bf16 rounds to nearest, ties to even; bf16 -> float is exact") {
  for (float x : sample_floats()) {
    INFO("x = ", x);
    const std::uint16_t b = float_to_bf16(x);
    REQUIRE(b == bf16_reference(x));
    REQUIRE(std::bit_cast<std::uint32_t>(bf16_to_float(b)) == std::uint32_t{b} << 16);
  }
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(float_to_bf16(3.14159265f) == 0x4049);
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3F80);               // tie, 0x3F80 even: down
  CHECK(float_to_bf16(1.0f + 0x1p-7f + 0x1p-8f) == 0x3F82);     // tie, 0x3F81 odd: up
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds past the largest bf16
  CHECK(float_to_bf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
  const std::uint16_t nan = float_to_bf16(-std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(bf16_to_float(nan)));
  CHECK((nan & 0x8000) != 0);
  // A signalling NaN whose payload sits only in the low 16 bits must not turn into infinity.
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::bit_cast<float>(0x7F800001u)))));
}
