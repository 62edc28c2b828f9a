// Element types and reduction operators of the collectives, bf16 <-> float conversion, and the
// elementwise reduction kernel shared by the CPU backends. bf16 is stored as std::uint16_t (the
// upper half of an IEEE float32); bf16 reductions accumulate in float and round once to nearest
// even. Integer sums wrap modulo 2^8 like NCCL's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

// The bf16 conversions are also device functions in CUDA sources (the shared-GPU backend's reduction).
#if defined(__CUDACC__)
#define COMM_HOST_DEVICE __host__ __device__
#else
#define COMM_HOST_DEVICE
#endif

namespace core::comm {

enum class DType : int { f32, bf16, i8, u8 };
enum class ReduceOp : int { sum, max, min, avg };  // avg only for f32 and bf16

std::size_t dtype_size(DType t);
const char* dtype_name(DType t);
const char* reduce_op_name(ReduceOp op);
bool is_floating(DType t);

// The DType of a C++ element type; bf16 buffers are std::uint16_t.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return DType::bf16;
  else if constexpr (std::is_same_v<T, std::int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return DType::u8;
  else static_assert(sizeof(T) == 0, "collectives support float, bf16 (uint16_t), int8_t, uint8_t");
}

COMM_HOST_DEVICE inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest, ties to even; NaN stays a (quiet) NaN, infinities and overflow give inf.
COMM_HOST_DEVICE inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
  const std::uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

// out[i] = op over k of inputs[k][i], for i < count, combined in input order (so results are
// reproducible). `divisor` is used by avg (the number of ranks). `out` may alias one of the
// inputs exactly (in-place); partial overlaps are not allowed.
void reduce_buffers(std::span<const void* const> inputs, void* out, std::size_t count, DType dtype,
                    ReduceOp op, int divisor);

}  // namespace core::comm
