// Topology of a ZeRO++ job and its counted sub-communicators (see topology.hpp).
#include "zero/topology.hpp"

#include <string>

#include "common/errors.hpp"

namespace core::zero {

Topology Topology::make(int world_size, int rank, int ranks_per_node, const std::string& what) {
  if (ranks_per_node < 1 || world_size % ranks_per_node != 0)
    throw UsageError(what + " = " + std::to_string(ranks_per_node) + " ranks per node does not divide the " +
                     std::to_string(world_size) + " ranks of the job: every node must hold the same number of ranks");
  Topology t;
  t.world_size = world_size;
  t.rank = rank;
  t.ranks_per_node = ranks_per_node;
  t.nodes = world_size / ranks_per_node;
  t.node = rank / ranks_per_node;
  t.local_rank = rank % ranks_per_node;
  return t;
}

Topology discover_topology(const comm::RankInfo& info, int configured) {
  if (configured > 0) return Topology::make(info.world_size, info.rank, configured, "distributed.ranks_per_node");
  const std::string what = "the launcher's local size (" + info.source + ")";
  const Topology t = Topology::make(info.world_size, info.rank, info.local_size, what);
  if (info.local_rank != t.local_rank)
    throw UsageError("rank " + std::to_string(info.rank) + " has local rank " + std::to_string(info.local_rank) +
                     " (" + info.source + "), not rank mod " + std::to_string(info.local_size) +
                     ": the ranks are not placed on the nodes in blocks; launch with mpirun --map-by slot or "
                     "srun --distribution=block, or set distributed.ranks_per_node");
  return t;
}

void check_hpz_size(int h, const Topology& t) {
  if (h < 1 || t.ranks_per_node % h != 0)
    throw UsageError("zero_optimization.zero_hpz_partition_size = " + std::to_string(h) + " does not divide the " +
                     std::to_string(t.ranks_per_node) +
                     " ranks per node: a secondary partition group must lie inside one node (set "
                     "distributed.ranks_per_node or launch more ranks per node)");
}

CommGroups::CommGroups(std::unique_ptr<comm::Communicator> world_comm, const Topology& t, int h) : topo(t), hpz_size(h) {
  check_hpz_size(h, t);
  // Ranks sit in blocks (rank = node * alpha + local rank), so every group's nodes are known without
  // communicating: the world's by rank, intra's and hpz's all this node, inter's node m at position m.
  const int alpha = t.ranks_per_node;
  std::vector<int> world_nodes(t.world_size);
  for (int r = 0; r < t.world_size; ++r) world_nodes[r] = t.node_of(r);
  std::vector<int> inter_nodes(t.nodes);
  for (int m = 0; m < t.nodes; ++m) inter_nodes[m] = m;
  comm::Communicator& w = *world_comm;
  auto split = [&](int color, std::vector<int> nodes) {
    return std::make_unique<LinkCounter>(w.split(color, t.rank), std::move(nodes));
  };
  intra = split(t.node, std::vector<int>(alpha, t.node));
  inter = split(t.local_rank, inter_nodes);
  if (h > 1) hpz = split(t.rank / h, std::vector<int>(h, t.node));
  world = std::make_unique<LinkCounter>(std::move(world_comm), std::move(world_nodes));
}

LinkBytes CommGroups::bytes() const {
  LinkBytes b;
  for (const auto* c : {world.get(), intra.get(), inter.get(), hpz.get()})
    if (c) b += c->link_bytes();
  return b;
}

void CommGroups::reset_bytes() {
  for (auto* c : {world.get(), intra.get(), inter.get(), hpz.get()})
    if (c) c->reset_link_bytes();
}

}  // namespace core::zero
