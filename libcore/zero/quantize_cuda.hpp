// The block quantizers of ZeRO++ (qwZ int8, qgZ int4), qgZ's fused dequantize-and-sum and the gradient
// mean's scale-and-add as CUDA kernels on device buffers. The quantizers write the same bytes as the CPU
// reference in quantize.hpp (codes, nibble layout, fp32 scales, rounding: absmax from the bit patterns,
// s = absmax / qmax and 1 / s = qmax / absmax each correctly rounded, codes = round-half-even(x * (qmax /
// absmax)), every product and sum rounded on its own with __fmul_rn / __fadd_rn), so that a device rank
// and a CPU rank dequantize identical bytes to identical floats. Blocks of a multiple of 8 elements with
// 16-byte aligned floats move 8 elements a thread in vector accesses; any other block size or alignment
// takes the scalar path (same results). Pointers are device memory; launches go on `stream` and return
// at once. measure_device_quantize_throughput times them against a device-to-device copy.
// Needs a CUDA build (TOOLKIT_HAVE_CUDA).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/runtime.hpp"

namespace core::zero::device {

using kernels::Stream;

void quantize_int8(const float* x, std::size_t n, std::size_t block, std::int8_t* codes, float* scales,
                   Stream stream = nullptr);
void dequantize_int8(const std::int8_t* codes, const float* scales, std::size_t n, std::size_t block, float* out,
                     Stream stream = nullptr);
// block must be even (UsageError), as for the CPU quantizer.
void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* scales,
                   Stream stream = nullptr);
void dequantize_int4(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block, float* out,
                     Stream stream = nullptr);
// out[i] = (0 + y_0[i] + ... + y_{inputs-1}[i]) * multiplier with y_j the int4 span at packed + j * packed_stride
// (bytes) and its scales at scales + j * scales_stride (floats): core::zero::dequantize_sum_int4 on the device.
void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                         std::size_t scales_stride, int inputs, std::size_t n, std::size_t block, float multiplier,
                         float* out, Stream stream = nullptr);
// out[i] = in[i] * multiplier, or out[i] += in[i] * multiplier when accumulate (each product and sum rounded
// on its own, as the CPU engine's loops compiled without contraction): the gradient mean of the device engine.
void add_scaled(float* out, const float* in, std::size_t n, float multiplier, bool accumulate,
                Stream stream = nullptr);

// Bandwidth of each kernel on n floats in blocks of `block` (bytes it reads and writes per second, best of
// `reps` rounds) against cudaMemcpyAsync of the n floats device to device (2 * 4n bytes moved), measured
// interleaved in one run (wall time of back-to-back launches between synchronisations). dequantize_sum
// reads `sum_inputs` int4 spans.
struct DeviceQuantizeThroughput {
  double copy_gbs = 0;
  double quantize_int8_gbs = 0, dequantize_int8_gbs = 0, quantize_int4_gbs = 0, dequantize_int4_gbs = 0;
  double dequantize_sum_int4_gbs = 0;
  int sum_inputs = 0;
};
DeviceQuantizeThroughput measure_device_quantize_throughput(std::size_t n, std::size_t block, int reps,
                                                            int sum_inputs = 4);

}  // namespace core::zero::device
