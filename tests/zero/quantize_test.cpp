// The block quantizers of qwZ (int8) and qgZ (int4) against hand-computed codes, the s/2 error
// bound on random data, zero and constant blocks, the nibble layout, and qgZ's chunk order.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "zero/quantize.hpp"

using namespace core::zero;

TEST_CASE("int8 codes and scales of a block are absmax/127 and round(x/s)") {
  const std::vector<float> x = {1.27f, -0.64f, 0.0f, 0.01f, /* block 2 */ -2.0f, 1.0f};
  std::vector<std::int8_t> q(x.size());
  std::vector<float> s(block_count(x.size(), 4));
  quantize_int8(x.data(), x.size(), 4, q.data(), s.data());
  REQUIRE(s.size() == 2);
  CHECK(s[0] == doctest::Approx(0.01f));
  CHECK(s[1] == doctest::Approx(2.0f / 127));
  CHECK(std::vector<int>(q.begin(), q.end()) == std::vector<int>{127, -64, 0, 1, -127, 64});
  std::vector<float> back(x.size());
  dequantize_int8(q.data(), s.data(), x.size(), 4, back.data());
  CHECK(back[4] == doctest::Approx(-2.0f));
  CHECK(back[1] == doctest::Approx(-0.64f));
}

TEST_CASE("int4 packs two signed nibbles a byte, low nibble first") {
  const std::vector<float> x = {7.0f, -7.0f, 1.0f, -1.0f, 3.0f};  // block 6: scale 1, codes as given
  std::vector<std::uint8_t> p(int4_bytes(x.size()));
  std::vector<float> s(1);
  quantize_int4(x.data(), x.size(), 6, p.data(), s.data());
  CHECK(s[0] == 1.0f);
  REQUIRE(p.size() == 3);
  CHECK(int(p[0]) == 0x97);  // 7 = 0x7 low, -7 = 0x9 high
  CHECK(int(p[1]) == 0xf1);  // 1 low, -1 = 0xf high
  CHECK(int(p[2]) == 0x03);  // odd tail: high nibble 0
  std::vector<float> back(x.size());
  dequantize_int4(p.data(), s.data(), x.size(), 6, back.data());
  CHECK(back == x);
  std::vector<float> acc(x.size(), 1.0f);
  dequantize_add_int4(p.data(), s.data(), x.size(), 6, acc.data());
  CHECK(acc[1] == -6.0f);
  CHECK_THROWS_AS(quantize_int4(x.data(), x.size(), 3, p.data(), s.data()), core::UsageError);
}

TEST_CASE("quantization error is at most half a step; zero and constant blocks are exact") {
  core::Rng rng(7);
  for (const std::size_t block : {std::size_t{2}, std::size_t{64}, std::size_t{2048}}) {
    const std::size_t n = 5000;
    std::vector<float> x(n);
    for (auto& v : x) v = float(rng.normal() * 3.0);
    for (std::size_t i = 0; i < 64 && i < n; ++i) x[i] = 0.0f;        // a zero block (block <= 64)
    for (std::size_t i = 4096; i < 4096 + 2 * block && i < n; ++i) x[i] = -0.25f;  // constant blocks
    std::vector<float> s8(block_count(n, block)), s4(block_count(n, block)), y8(n), y4(n);
    std::vector<std::int8_t> q8(n);
    std::vector<std::uint8_t> q4(int4_bytes(n));
    quantize_int8(x.data(), n, block, q8.data(), s8.data());
    dequantize_int8(q8.data(), s8.data(), n, block, y8.data());
    quantize_int4(x.data(), n, block, q4.data(), s4.data());
    dequantize_int4(q4.data(), s4.data(), n, block, y4.data());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t b = i / block;
      REQUIRE(std::fabs(x[i] - y8[i]) <= s8[b] * 0.5f * (1 + 1e-5f));
      REQUIRE(std::fabs(x[i] - y4[i]) <= s4[b] * 0.5f * (1 + 1e-5f));
    }
    if (block <= 64) {
      CHECK(s8[0] == 0.0f);
      CHECK(y8[0] == 0.0f);
      CHECK(y4[0] == 0.0f);
    }
    CHECK(int(q8[4097]) == -127);  // a constant block is its own absmax: the extreme code
    CHECK(int(static_cast<std::int8_t>(q4[4097 / 2]) >> 4) == -7);
    CHECK(y8[4097] == doctest::Approx(-0.25f).epsilon(1e-6));
    CHECK(y4[4097] == doctest::Approx(-0.25f).epsilon(1e-6));
  }
}

TEST_CASE("a block with a NaN or an infinity dequantizes to NaN, its neighbours unharmed") {
  std::vector<float> x = {1.0f, std::nanf(""), 2.0f, 3.0f, -INFINITY, 1.0f, 0.5f, 0.25f};
  std::vector<std::int8_t> q8(8);
  std::vector<std::uint8_t> q4(4);
  std::vector<float> s(4), y(8);
  quantize_int8(x.data(), 8, 2, q8.data(), s.data());
  dequantize_int8(q8.data(), s.data(), 8, 2, y.data());
  CHECK(std::isnan(y[0]));
  CHECK(std::isnan(y[4]));
  CHECK(y[2] == doctest::Approx(2.0f).epsilon(0.01));
  CHECK(y[7] == doctest::Approx(0.25f).epsilon(0.01));
  quantize_int4(x.data(), 8, 2, q4.data(), s.data());
  dequantize_int4(q4.data(), s.data(), 8, 2, y.data());
  CHECK(std::isnan(y[1]));
  CHECK(std::isnan(y[5]));
  CHECK(y[3] == doctest::Approx(3.0f));
}

TEST_CASE("qgZ's chunk order hands each local rank the chunks of its peers on every node") {
  CHECK(qgz_chunk_order(2, 4) == std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(qgz_chunk_order(1, 3) == std::vector<int>{0, 1, 2});
  CHECK(qgz_chunk_order(3, 1) == std::vector<int>{0, 1, 2});
  CHECK(qgz_chunk_order(3, 2) == std::vector<int>{0, 2, 4, 1, 3, 5});
}
