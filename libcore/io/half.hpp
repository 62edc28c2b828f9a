// 16-bit floating point conversions: IEEE 754 binary16 ("f16", numpy '<f2', safetensors F16) and
// bfloat16 ("bf16", the top half of a binary32, safetensors BF16). float -> 16 bit rounds to
// nearest, ties to even (IEEE 754 default rounding); overflow gives +-inf, NaN stays NaN (quiet,
// sign kept). 16 bit -> float is exact. Inputs: any float, any 16-bit pattern.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace core::io {

// Tag types holding the raw bits, so typed writers (npy, safetensors) can tell them from uint16_t.
struct Float16 {
  std::uint16_t bits = 0;
};
struct BFloat16 {
  std::uint16_t bits = 0;
};

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // NaN
  const std::uint32_t bias = 0x7FFFu + ((x >> 16) & 1u);  // ties to even; carries into the exponent
  return static_cast<std::uint16_t>((x + bias) >> 16);
}

inline float bf16_to_float(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t{h} << 16); }

inline std::uint16_t float_to_f16(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x >= 0x7F800000u) {  // inf, or NaN (keep the top payload bits, force quiet)
    return sign | (x == 0x7F800000u ? 0x7C00u : (0x7E00u | ((x >> 13) & 0x3FFu)));
  }
  if (x >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 (half-way past 65504) rounds to inf
  if (x < 0x38800000u) {                         // below 2^-14: f16 subnormal or zero
    if (x < 0x33000000u) return sign;            // below 2^-25: rounds to zero
    const std::uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - static_cast<int>(x >> 23);  // 14..24: units of 2^-24
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = (((x >> 23) - 112u) << 10) | ((x >> 13) & 0x3FFu);  // rebias 127 -> 15
  const std::uint32_t rem = x & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // may carry into the exponent
  return static_cast<std::uint16_t>(sign | r);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    const float v = std::ldexp(static_cast<float>(m), -24);  // exact: m < 2^10
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace core::io
