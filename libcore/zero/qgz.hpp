// qgZ's gradient reduce-scatter (ZeRO++ Sec. 4.3): a hierarchical two-hop all-to-all of int4
// blocks. Each rank holds N chunks of c elements (chunk q is destined for global rank q); the
// chunks are reordered (qgz_chunk_order) so that the intra-node all-to-all hands local rank d the
// chunks of global ranks {m alpha + d}; each rank dequantizes and sums (fp32, local-rank order) the
// alpha chunks per node, quantizes the sums to int4 again, the inter-node all-to-all (ranks of one
// local index) hands node m its partial sum, and the receiver dequantizes, sums over nodes and
// divides by N: the mean of everyone's chunk `rank`. Cross-node bytes per rank: (nodes - 1)(c/2 + 4
// ceil(c/block)), 1/alpha of a flat int4 reduce-scatter's and 1/(4 alpha) of a bf16 one's.
// The algorithm runs on host buffers (QgzScratch: quantize.hpp's quantizers) or device buffers (the
// device engine's workspace: quantize_cuda.hpp's kernels), which give the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zero/topology.hpp"

namespace core::zero {

// Where qgZ's buffers live and which quantizers run on them.
class QgzWorkspace {
 public:
  virtual ~QgzWorkspace() = default;
  struct Buffers {
    std::uint8_t *codes, *codes_in;  // int4 codes sent and received
    float *scales, *scales_in;       // their fp32 scales
    float* partial;                  // per-node partial sums
  };
  // Buffers of at least these sizes, kept between calls.
  virtual Buffers reserve(std::size_t code_bytes, std::size_t scale_count, std::size_t partial_count) = 0;
  // quantize.hpp's quantize_int4 and dequantize_sum_int4 on these buffers.
  virtual void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed,
                             float* scales) = 0;
  virtual void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                                   std::size_t scales_stride, int inputs, std::size_t n, std::size_t block,
                                   float multiplier, float* out) = 0;
  // The stream the collectives run on (device buffers: the quantizers' stream; null: the default).
  virtual void* stream() const { return nullptr; }
};

// Host buffers.
struct QgzScratch final : QgzWorkspace {
  std::vector<float> partial;
  std::vector<std::uint8_t> codes, codes_in;
  std::vector<float> scales, scales_in;
  Buffers reserve(std::size_t code_bytes, std::size_t scale_count, std::size_t partial_count) override;
  void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* scales) override;
  void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                           std::size_t scales_stride, int inputs, std::size_t n, std::size_t block, float multiplier,
                           float* out) override;
};

// chunks: N * c floats (chunk q for rank q), c even; mean_out: c floats, in the workspace's memory.
// Collective over the job's intra and inter communicators.
void qgz_reduce_scatter_mean(const float* chunks, std::size_t c, float* mean_out, const CommGroups& groups,
                             std::size_t block, QgzWorkspace& workspace);

}  // namespace core::zero
