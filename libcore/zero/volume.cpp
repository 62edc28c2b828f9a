// Per-step byte volumes of the ZeRO variants (see volume.hpp).
#include "zero/volume.hpp"

#include <functional>

#include "zero/engine.hpp"
#include "zero/quantize.hpp"

namespace core::zero {

using comm::Collective;
using comm::DType;

std::vector<std::vector<int>> backward_buckets(const std::vector<std::size_t>& sizes, std::size_t limit) {
  std::vector<std::vector<int>> out(1);
  std::size_t elems = 0;
  for (int g = int(sizes.size()) - 1; g >= 0; --g) {
    out.back().push_back(g);
    elems += sizes[g];
    if ((elems >= limit || g == 0)) {
      if (g > 0) out.emplace_back();
      elems = 0;
    }
  }
  return out;
}

namespace {

// Adds the bytes `rank` sends in one collective over the sub-communicator whose members (global
// ranks, in communicator order) `members` lists.
struct Costing {
  int rank, alpha;
  StepVolume v;
  void add(const std::vector<int>& members, Collective c, std::size_t count, DType dtype) {
    const int n = int(members.size());
    int me = 0;
    while (members[me] != rank) ++me;
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      const std::uint64_t b = bytes_to_peer(c, count, dtype, me, q, n);
      const bool intra = members[q] / alpha == rank / alpha;
      (intra ? v.bytes.intra : v.bytes.inter) += b;
      if (b > 0) ++(intra ? v.intra_messages : v.inter_messages);
    }
  }
};

}  // namespace

StepVolume step_volume(const VolumeModel& m, int rank) {
  const int N = m.world_size, alpha = m.ranks_per_node, nodes = N / alpha, h = m.zero.zero_hpz_partition_size;
  const int G = int(m.group_sizes.size()), stage = m.zero.stage;
  std::vector<int> world, intra, inter, hpz;
  for (int q = 0; q < N; ++q) {
    world.push_back(q);
    if (q / alpha == rank / alpha) intra.push_back(q);
    if (q % alpha == rank % alpha) inter.push_back(q);
    if (q / h == rank / h) hpz.push_back(q);
  }
  std::vector<std::size_t> shard, sec;
  for (const std::size_t S : m.group_sizes) {
    shard.push_back(shard_size(S, N));
    sec.push_back(shard_size(S, h));
  }
  const DType dtype = m.bf16 ? DType::bf16 : DType::f32;
  Costing cost{rank, alpha, {}};
  const auto reduce = [&](const std::vector<int>& bucket) {
    std::size_t total = 0, c = 0;
    for (const int g : bucket) {
      total += m.group_sizes[g];
      c += shard[g];
    }
    if (stage == 0) {
      cost.add(world, Collective::all_reduce, total, DType::f32);
    } else if (m.zero.zero_quantized_gradients) {
      const std::size_t cb = int4_bytes(c), nb = block_count(c, m.block);
      cost.add(intra, Collective::all_to_all, nodes * cb, DType::u8);
      cost.add(intra, Collective::all_to_all, nodes * nb, DType::f32);
      cost.add(inter, Collective::all_to_all, cb, DType::u8);
      cost.add(inter, Collective::all_to_all, nb, DType::f32);
    } else {
      cost.add(world, Collective::reduce_scatter, c, dtype);
    }
  };
  const auto buckets = backward_buckets(m.group_sizes, std::size_t(m.zero.reduce_bucket_size));
  if (stage == 3) {
    std::vector<bool> secondary(G, false);
    const auto gather = [&](int g, bool forward) {
      if (h > 1 && secondary[g]) {
        cost.add(hpz, Collective::all_gather, sec[g], dtype);
        return;
      }
      if (m.zero.zero_quantized_weights) {
        cost.add(world, Collective::all_gather, shard[g], DType::i8);
        cost.add(world, Collective::all_gather, block_count(shard[g], m.block), DType::f32);
      } else {
        cost.add(world, Collective::all_gather, shard[g], dtype);
      }
      if (forward && h > 1) secondary[g] = true;
    };
    for (int micro = 0; micro < m.micro_steps; ++micro) {
      for (int g = 0; g < G; ++g) gather(g, true);  // forward: embed, then the blocks
      gather(0, false);                             // backward: the head, then the blocks from the last
      for (int g = G - 1; g >= 1; --g) gather(g, false);
      for (const auto& b : buckets) reduce(b);
    }
  } else {
    for (int micro = 0; micro < (stage == 2 ? m.micro_steps : 1); ++micro)
      for (const auto& b : buckets) reduce(b);
  }
  cost.add(world, Collective::all_reduce, 3, DType::f32);  // squared norm, loss, stop
  if (stage == 1 || stage == 2) {  // the updated weights, in forward order
    std::size_t elems = 0, c = 0;
    for (int g = 0; g < G; ++g) {
      elems += m.group_sizes[g];
      c += shard[g];
      if (elems < std::size_t(m.zero.allgather_bucket_size) && g + 1 < G) continue;
      cost.add(world, Collective::all_gather, c, DType::f32);
      elems = c = 0;
    }
  }
  return cost.v;
}

MeanLinkBytes mean_step_bytes(const VolumeModel& m) {
  MeanLinkBytes out;
  for (int r = 0; r < m.world_size; ++r) {
    const LinkBytes b = step_bytes(m, r);
    out.intra += double(b.intra);
    out.inter += double(b.inter);
  }
  out.intra /= m.world_size;
  out.inter /= m.world_size;
  return out;
}

}  // namespace core::zero
