// The bytes one rank sends in one optimizer step of each ZeRO / ZeRO++ variant, split into intra-
// and inter-node bytes: the engine's collectives (engine.hpp) listed in order, each costed with the
// per-peer volumes of the communicator's accounting (link_counter.hpp). Tests check that the engine
// sends exactly this; the simulator prices it. In the paper's terms (M = model size in the gathered
// dtype), stage 3 sends 3 M (N - 1) / N per rank and step: a forward and a backward all-gather and a
// gradient reduce-scatter; qwZ makes the forward gather int8 (+ a scale per block), hpZ keeps the
// backward gather inside a node, and qgZ sends int4 gradients across nodes once per node.
#pragma once
#include <cstddef>
#include <vector>

#include "zero/link_counter.hpp"
#include "zero/options.hpp"

namespace core::zero {

struct VolumeModel {
  std::vector<std::size_t> group_sizes;  // elements of each parameter group (params.hpp), in layout order
  int world_size = 1, ranks_per_node = 1;
  ZeroOptions zero;
  bool bf16 = false;
  std::size_t block = 2048;
  int micro_steps = 1;  // gradient_accumulation_steps
};

// Bytes, and messages (a collective's transfer to one peer), that `rank` sends per step.
struct StepVolume {
  LinkBytes bytes;
  std::uint64_t intra_messages = 0, inter_messages = 0;
};
StepVolume step_volume(const VolumeModel& m, int rank);
inline LinkBytes step_bytes(const VolumeModel& m, int rank) { return step_volume(m, rank).bytes; }
// step_bytes averaged over the ranks.
struct MeanLinkBytes {
  double intra = 0, inter = 0;
};
MeanLinkBytes mean_step_bytes(const VolumeModel& m);

// Groups of a reduce in backward order (last group first), fused up to `limit` elements.
std::vector<std::vector<int>> backward_buckets(const std::vector<std::size_t>& sizes, std::size_t limit);

}  // namespace core::zero
