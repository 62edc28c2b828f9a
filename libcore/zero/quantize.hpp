// Block quantizers of ZeRO++ (Wang et al. 2023): qwZ sends weights as int8 and qgZ sends gradients
// as int4, both symmetric per block of `block` consecutive elements (the last block of a span may
// be shorter) with one fp32 scale per block:
//   int8: s = absmax / 127, code = round(x / s) in [-127, 127]
//   int4: s = absmax / 7,   code = round(x / s) in [-7, 7], two codes a byte: element 2i in the low
//         nibble, 2i + 1 in the high one, each a 4-bit two's complement; an odd tail leaves the last
//         high nibble 0.
// int4 needs an even block size (UsageError), so that blocks start on a byte. A block of zeros has
// s = 0 and codes 0; a block holding a NaN or an infinity dequantizes to NaN (a diverged gradient
// stays visible). Dequantization is code * s, so |x - x^| <= s / 2. Every product and sum is rounded to
// fp32 on its own (quantize.cpp is built with -ffp-contract=off), so that the CUDA kernels
// (quantize_cuda.hpp) give the same bits.
// Also the chunk order of qgZ's hierarchical all-to-all (Sec. 4.3 of the paper).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace core::zero {

inline std::size_t block_count(std::size_t n, std::size_t block) { return (n + block - 1) / block; }
inline std::size_t int4_bytes(std::size_t n) { return (n + 1) / 2; }

// scales: block_count(n, block) floats; codes: n bytes (int8) or int4_bytes(n) bytes (int4).
void quantize_int8(const float* x, std::size_t n, std::size_t block, std::int8_t* codes, float* scales);
void dequantize_int8(const std::int8_t* codes, const float* scales, std::size_t n, std::size_t block, float* out);
void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* scales);
void dequantize_int4(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block, float* out);
// out[i] += dequantized value i (the sum step of qgZ).
void dequantize_add_int4(const std::uint8_t* packed, const float* scales, std::size_t n, std::size_t block, float* out);
// qgZ's fused reduction: out[i] = (0 + y_0[i] + y_1[i] + ... + y_{inputs-1}[i]) * multiplier, summed in input
// order, where y_j is the dequantization of the int4 span at packed + j * packed_stride (bytes) with the
// scales at scales + j * scales_stride (floats).
void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                         std::size_t scales_stride, int inputs, std::size_t n, std::size_t block, float multiplier,
                         float* out);

// qgZ's reorder for `nodes` nodes of `ranks_per_node` ranks: position p of the reordered buffer
// holds the chunk of global rank order[p], so that the intra-node all-to-all hands local rank d the
// contiguous chunks of global ranks {m * ranks_per_node + d : m}. 2 x 4: 0 4 1 5 2 6 3 7.
std::vector<int> qgz_chunk_order(int nodes, int ranks_per_node);

// Round-trip throughput on this machine (GB/s of fp32 input, best of `reps`): quantize + dequantize
// of n floats in blocks of `block`, int8 and int4, against memcpy of the same n floats.
struct QuantizeThroughput {
  double int8_gbs = 0, int4_gbs = 0, memcpy_gbs = 0;
};
QuantizeThroughput measure_quantize_throughput(std::size_t n, std::size_t block, int reps);

}  // namespace core::zero
