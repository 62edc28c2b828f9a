// Hierarchical int4 reduce-scatter of qgZ (see qgz.hpp).
#include "zero/qgz.hpp"

#include "zero/quantize.hpp"

namespace core::zero {

QgzWorkspace::Buffers QgzScratch::reserve(std::size_t code_bytes, std::size_t scale_count, std::size_t partial_count) {
  codes.resize(code_bytes);
  codes_in.resize(code_bytes);
  scales.resize(scale_count);
  scales_in.resize(scale_count);
  partial.resize(partial_count);
  return {codes.data(), codes_in.data(), scales.data(), scales_in.data(), partial.data()};
}

void QgzScratch::quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* scales) {
  zero::quantize_int4(x, n, block, packed, scales);
}

void QgzScratch::dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* scales,
                                     std::size_t scales_stride, int inputs, std::size_t n, std::size_t block,
                                     float multiplier, float* out) {
  zero::dequantize_sum_int4(packed, packed_stride, scales, scales_stride, inputs, n, block, multiplier, out);
}

void qgz_reduce_scatter_mean(const float* chunks, std::size_t c, float* mean_out, const CommGroups& groups,
                             std::size_t block, QgzWorkspace& ws) {
  const Topology& topo = groups.topo;
  const int N = topo.world_size, alpha = topo.ranks_per_node, nodes = topo.nodes;
  const std::size_t cb = int4_bytes(c), nb = block_count(c, block);
  const QgzWorkspace::Buffers w = ws.reserve(N * cb, N * nb, nodes * c);
  // 1. Reorder and quantize: position p holds the chunk of global rank order[p].
  const std::vector<int> order = qgz_chunk_order(nodes, alpha);
  for (int p = 0; p < N; ++p)
    ws.quantize_int4(chunks + std::size_t(order[p]) * c, c, block, w.codes + p * cb, w.scales + p * nb);
  // 2. Intra-node all-to-all: local rank d receives, from each local peer, the chunks of {m alpha + d}.
  groups.intra->all_to_all(w.codes, w.codes_in, nodes * cb, comm::DType::u8, ws.stream());
  groups.intra->all_to_all(w.scales, w.scales_in, nodes * nb, comm::DType::f32, ws.stream());
  // 3. Dequantize and sum over the node's ranks: one partial sum per destination node m, from positions
  //    d * nodes + m (d = 0 .. alpha-1).
  for (int m = 0; m < nodes; ++m)
    ws.dequantize_sum_int4(w.codes_in + m * cb, nodes * cb, w.scales_in + m * nb, nodes * nb, alpha, c, block, 1.0f,
                           w.partial + m * c);
  // 4. Int4 again; inter-node all-to-all: node m receives the partial sums for its rank of this local index.
  for (int m = 0; m < nodes; ++m)
    ws.quantize_int4(w.partial + m * c, c, block, w.codes + m * cb, w.scales + m * nb);
  groups.inter->all_to_all(w.codes, w.codes_in, cb, comm::DType::u8, ws.stream());
  groups.inter->all_to_all(w.scales, w.scales_in, nb, comm::DType::f32, ws.stream());
  // 5. Dequantize, sum over nodes, divide by N.
  ws.dequantize_sum_int4(w.codes_in, cb, w.scales_in, nb, nodes, c, block, 1.0f / float(N), mean_out);
}

}  // namespace core::zero
