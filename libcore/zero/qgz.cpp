// Hierarchical int4 reduce-scatter of qgZ (see qgz.hpp).
#include "zero/qgz.hpp"

#include "zero/quantize.hpp"

namespace core::zero {

void qgz_reduce_scatter_mean(const float* chunks, std::size_t c, float* mean_out, const CommGroups& groups,
                             std::size_t block, QgzScratch& w) {
  const Topology& topo = groups.topo;
  const int N = topo.world_size, alpha = topo.ranks_per_node, nodes = topo.nodes;
  const std::size_t cb = int4_bytes(c), nb = block_count(c, block);
  w.codes.resize(N * cb);
  w.codes_in.resize(N * cb);
  w.scales.resize(N * nb);
  w.scales_in.resize(N * nb);
  w.partial.resize(nodes * c);
  // 1. Reorder and quantize: position p holds the chunk of global rank order[p].
  const std::vector<int> order = qgz_chunk_order(nodes, alpha);
  for (int p = 0; p < N; ++p)
    quantize_int4(chunks + std::size_t(order[p]) * c, c, block, w.codes.data() + p * cb, w.scales.data() + p * nb);
  // 2. Intra-node all-to-all: local rank d receives, from each local peer, the chunks of {m alpha + d}.
  groups.intra->all_to_all(w.codes.data(), w.codes_in.data(), nodes * cb, comm::DType::u8);
  groups.intra->all_to_all(w.scales.data(), w.scales_in.data(), nodes * nb, comm::DType::f32);
  // 3. Dequantize and sum over the node's ranks: one partial sum per destination node m, from positions
  //    d * nodes + m (d = 0 .. alpha-1).
  for (int m = 0; m < nodes; ++m)
    dequantize_sum_int4(w.codes_in.data() + m * cb, nodes * cb, w.scales_in.data() + m * nb, nodes * nb, alpha, c,
                        block, 1.0f, w.partial.data() + m * c);
  // 4. Int4 again; inter-node all-to-all: node m receives the partial sums for its rank of this local index.
  for (int m = 0; m < nodes; ++m)
    quantize_int4(w.partial.data() + m * c, c, block, w.codes.data() + m * cb, w.scales.data() + m * nb);
  groups.inter->all_to_all(w.codes.data(), w.codes_in.data(), cb, comm::DType::u8);
  groups.inter->all_to_all(w.scales.data(), w.scales_in.data(), nb, comm::DType::f32);
  // 5. Dequantize, sum over nodes, divide by N.
  dequantize_sum_int4(w.codes_in.data(), cb, w.scales_in.data(), nb, nodes, c, block, 1.0f / float(N), mean_out);
}

}  // namespace core::zero
