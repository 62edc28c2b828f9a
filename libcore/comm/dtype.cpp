// Element-type metadata and the elementwise reduction kernel of the CPU backends: reduce K input
// buffers in input order into one output, accumulating bf16 in float (one final rounding to
// nearest even) and integers in 32-bit (cast back wraps modulo 2^8, matching NCCL's int8 sums).
#include "comm/dtype.hpp"

#include <algorithm>
#include <array>

#include "common/errors.hpp"

namespace core::comm {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::i8:
    case DType::u8: return 1;
  }
  throw UsageError("comm: unknown dtype " + std::to_string(static_cast<int>(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::bf16; }

namespace {

// How one element type is widened for accumulation and narrowed back.
template <class T, class Acc>
struct Plain {
  using Elem = T;
  using Accum = Acc;
  static Acc load(T v) { return static_cast<Acc>(v); }
  static T store(Acc v) { return static_cast<T>(v); }
};
struct Bf16 {
  using Elem = std::uint16_t;
  using Accum = float;
  static float load(std::uint16_t v) { return bf16_to_float(v); }
  static std::uint16_t store(float v) { return float_to_bf16(v); }
};

template <class Codec>
void reduce_typed(std::span<const void* const> inputs, void* out, std::size_t count, ReduceOp op,
                  int divisor) {
  using T = typename Codec::Elem;
  using Acc = typename Codec::Accum;
  constexpr std::size_t kBlock = 2048;
  std::array<Acc, kBlock> acc;
  T* dst = static_cast<T*>(out);
  for (std::size_t base = 0; base < count; base += kBlock) {
    const std::size_t len = std::min(kBlock, count - base);
    const T* first = static_cast<const T*>(inputs[0]) + base;
    for (std::size_t i = 0; i < len; ++i) acc[i] = Codec::load(first[i]);
    for (std::size_t k = 1; k < inputs.size(); ++k) {
      const T* src = static_cast<const T*>(inputs[k]) + base;
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::avg:
          for (std::size_t i = 0; i < len; ++i) acc[i] += Codec::load(src[i]);
          break;
        case ReduceOp::max:
          for (std::size_t i = 0; i < len; ++i) acc[i] = std::max(acc[i], Codec::load(src[i]));
          break;
        case ReduceOp::min:
          for (std::size_t i = 0; i < len; ++i) acc[i] = std::min(acc[i], Codec::load(src[i]));
          break;
      }
    }
    if (op == ReduceOp::avg)
      for (std::size_t i = 0; i < len; ++i) acc[i] /= static_cast<Acc>(divisor);
    for (std::size_t i = 0; i < len; ++i) dst[base + i] = Codec::store(acc[i]);
  }
}

}  // namespace

void reduce_buffers(std::span<const void* const> inputs, void* out, std::size_t count, DType dtype,
                    ReduceOp op, int divisor) {
  if (inputs.empty() || count == 0) return;
  if (op == ReduceOp::avg && !is_floating(dtype))
    throw UsageError(std::string("comm: avg reduction needs f32 or bf16, got ") + dtype_name(dtype));
  switch (dtype) {
    case DType::f32: return reduce_typed<Plain<float, float>>(inputs, out, count, op, divisor);
    case DType::bf16: return reduce_typed<Bf16>(inputs, out, count, op, divisor);
    case DType::i8: return reduce_typed<Plain<std::int8_t, std::int32_t>>(inputs, out, count, op, divisor);
    case DType::u8: return reduce_typed<Plain<std::uint8_t, std::uint32_t>>(inputs, out, count, op, divisor);
  }
}

}  // namespace core::comm
