// qgZ's gradient reduce-scatter (ZeRO++ Sec. 4.3): a hierarchical two-hop all-to-all of int4
// blocks. Each rank holds N chunks of c elements (chunk q is destined for global rank q); the
// chunks are reordered (qgz_chunk_order) so that the intra-node all-to-all hands local rank d the
// chunks of global ranks {m alpha + d}; each rank dequantizes and sums (fp32, local-rank order) the
// alpha chunks per node, quantizes the sums to int4 again, the inter-node all-to-all (ranks of one
// local index) hands node m its partial sum, and the receiver dequantizes, sums over nodes and
// divides by N: the mean of everyone's chunk `rank`. Cross-node bytes per rank: (nodes - 1)(c/2 + 4
// ceil(c/block)), 1/alpha of a flat int4 reduce-scatter's and 1/(4 alpha) of a bf16 one's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zero/topology.hpp"

namespace core::zero {

struct QgzScratch {
  std::vector<float> reordered, partial;
  std::vector<std::uint8_t> codes, codes_in;
  std::vector<float> scales, scales_in;
};

// chunks: N * c floats (chunk q for rank q), c even; mean_out: c floats. Collective over the
// job's intra and inter communicators.
void qgz_reduce_scatter_mean(const float* chunks, std::size_t c, float* mean_out, const CommGroups& groups,
                             std::size_t block, QgzScratch& scratch);

}  // namespace core::zero
