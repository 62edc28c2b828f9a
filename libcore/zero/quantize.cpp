// Symmetric block quantizers and qgZ's chunk order (see quantize.hpp). The loops are plain
// element-wise code the compiler vectorises: absmax of a block, then a scaled round of each value.
#include "zero/quantize.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>
#include <cmath>
#include <string>

#include "common/errors.hpp"

namespace core::zero {

namespace {

// max |x| through the bit patterns: for floats without the sign bit the integer order is the float
// order (a NaN's pattern is above infinity's, so a NaN shows), and an integer max reduction
// vectorizes where a float one may not (its NaN rules are not associative).
float block_absmax(const float* x, std::size_t n) {
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    m = std::max(m, bits & 0x7fffffffu);
  }
  float out;
  std::memcpy(&out, &m, sizeof out);
  return out;
}

// The codes of one block for a largest code `qmax`: returns the scale, writes round(x / s) to q.
template <class Code>
float quantize_block(const float* x, std::size_t n, float qmax, Code* q) {
  const float absmax = block_absmax(x, n);
  if (absmax == 0.0f) {
    std::fill(q, q + n, Code(0));
    return 0.0f;
  }
  // |x| <= absmax, so |x inv| <= qmax up to one rounding and its nearest integer is at most qmax:
  // no clamp needed.
  const float scale = absmax / qmax, inv = qmax / absmax;
  for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<Code>(static_cast<int>(std::nearbyint(x[i] * inv)));
  return scale;
}

}  // namespace

void quantize_int8(const float* x, std::size_t n, std::size_t block, std::int8_t* codes, float* scales) {
  for (std::size_t b = 0, i = 0; i < n; ++b, i += block)
    scales[b] = quantize_block(x + i, std::min(block, n - i), 127.0f, codes + i);
}

void dequantize_int8(const std::int8_t* codes, const float* scales, std::size_t n, std::size_t block, float* out) {
  for (std::size_t b = 0, i = 0; i < n; ++b, i += block) {
    const std::size_t len = std::min(block, n - i);
    const float s = scales[b];
    for (std::size_t k = 0; k < len; ++k) out[i + k] = float(codes[i + k]) * s;
  }
}

void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* scales) {
  if (block % 2 != 0) throw UsageError("int4 quantization needs an even block size, got " + std::to_string(block));
  for (std::size_t b = 0, i = 0; i < n; ++b, i += block) {
    const std::size_t len = std::min(block, n - i);
    const float absmax = block_absmax(x + i, len);
    const float inv = absmax == 0.0f ? 0.0f : 7.0f / absmax;
    scales[b] = absmax == 0.0f ? 0.0f : absmax / 7.0f;
    const auto code = [&](float v) {  // |v inv| <= 7 as in quantize_block
      return static_cast<std::uint8_t>(static_cast<int>(std::nearbyint(v * inv)) & 0x0f);
    };
    const float* xb = x + i;
    std::uint8_t* out = packed + i / 2;  // i is even: blocks start on a byte
    const std::size_t pairs = len / 2;
    for (std::size_t k = 0; k < pairs; ++k)
      out[k] = static_cast<std::uint8_t>(code(xb[2 * k]) | (code(xb[2 * k + 1]) << 4));
    if (len % 2 != 0) out[pairs] = code(xb[len - 1]);  // the odd tail of the whole span
  }
}

namespace {

// The signed values of a byte's low and high nibbles.
inline float low_nibble(std::uint8_t byte) { return float(static_cast<std::int8_t>(byte << 4) >> 4); }
inline float high_nibble(std::uint8_t byte) { return float(static_cast<std::int8_t>(byte) >> 4); }

template <bool Add>
void dequantize_int4_as(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block, float* out) {
  if (block % 2 != 0) throw UsageError("int4 quantization needs an even block size, got " + std::to_string(block));
  for (std::size_t b = 0, i = 0; i < n; ++b, i += block) {
    const std::size_t len = std::min(block, n - i), pairs = len / 2;
    const float s = scales[b];
    const std::uint8_t* in = packed + i / 2;
    float* o = out + i;
    for (std::size_t k = 0; k < pairs; ++k) {
      const float lo = low_nibble(in[k]) * s, hi = high_nibble(in[k]) * s;
      if constexpr (Add) {
        o[2 * k] += lo;
        o[2 * k + 1] += hi;
      } else {
        o[2 * k] = lo;
        o[2 * k + 1] = hi;
      }
    }
    if (len % 2 != 0) {
      const float v = low_nibble(in[pairs]) * s;
      if constexpr (Add) o[len - 1] += v;
      else o[len - 1] = v;
    }
  }
}

}  // namespace

void dequantize_int4(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block, float* out) {
  dequantize_int4_as<false>(packed, scales, n, block, out);
}

void dequantize_add_int4(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block,
                         float* out) {
  dequantize_int4_as<true>(packed, scales, n, block, out);
}

void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                         std::size_t scales_stride, int inputs, std::size_t n, std::size_t block, float multiplier,
                         float* out) {
  std::fill_n(out, n, 0.0f);
  for (int j = 0; j < inputs; ++j)
    dequantize_add_int4(packed + j * packed_stride, scales + j * scales_stride, n, block, out);
  for (std::size_t i = 0; i < n; ++i) out[i] *= multiplier;
}

QuantizeThroughput measure_quantize_throughput(std::size_t n, std::size_t block, int reps) {
  std::vector<float> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = float(std::sin(double(i) * 0.001)) * float(1 + i % 7);
  std::vector<std::int8_t> q8(n);
  std::vector<std::uint8_t> q4(int4_bytes(n));
  std::vector<float> scales(block_count(n, block));
  const auto seconds = [](auto&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // Interleaved, so that a busy machine slows the three alike; the best time of each counts.
  double t_copy = 1e30, t8 = 1e30, t4 = 1e30;
  for (int r = 0; r < reps; ++r) {
    t_copy = std::min(t_copy, seconds([&] { std::memcpy(y.data(), x.data(), n * sizeof(float)); }));
    t8 = std::min(t8, seconds([&] {
      quantize_int8(x.data(), n, block, q8.data(), scales.data());
      dequantize_int8(q8.data(), scales.data(), n, block, y.data());
    }));
    t4 = std::min(t4, seconds([&] {
      quantize_int4(x.data(), n, block, q4.data(), scales.data());
      dequantize_int4(q4.data(), scales.data(), n, block, y.data());
    }));
  }
  const double bytes = double(n) * sizeof(float);
  return {bytes / t8 / 1e9, bytes / t4 / 1e9, bytes / t_copy / 1e9};
}

std::vector<int> qgz_chunk_order(int nodes, int ranks_per_node) {
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(nodes) * ranks_per_node);
  for (int d = 0; d < ranks_per_node; ++d)
    for (int m = 0; m < nodes; ++m) order.push_back(m * ranks_per_node + d);
  return order;
}

}  // namespace core::zero
