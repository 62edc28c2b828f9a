// bfloat16 on the host: a 16-bit storage type layout-compatible with CUDA's __nv_bfloat16 (the top
// half of an IEEE float32), with round-to-nearest-even conversion from float. Host headers use it
// so that they need no CUDA headers.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace core::kernels {

struct bf16 {
  std::uint16_t bits = 0;
};
static_assert(sizeof(bf16) == 2);

inline float to_float(bf16 x) {
  const std::uint32_t u = static_cast<std::uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
inline bf16 to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x40)};
  u += 0x7FFFu + ((u >> 16) & 1u);
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}

// Element-wise conversions of host vectors (bf16.cpp).
std::vector<bf16> to_bf16(const std::vector<float>& v);
std::vector<float> to_float(const std::vector<bf16>& v);

}  // namespace core::kernels
