// Where the ranks of a ZeRO++ job sit (Wang et al. 2023, "ZeRO++", Sec. 4): N ranks in nodes of
// alpha ranks each, placed in blocks (rank = node * alpha + local rank, as mpirun --map-by slot and
// srun's block distribution place them). alpha comes from the launcher's local-rank variables or is
// set in the config so that one machine emulates several nodes. The sub-communicators come from
// Communicator::split: intra (the alpha ranks of a node), inter (the ranks of one local index, one
// per node) and the hpZ groups (h consecutive ranks inside a node). Every one of them counts the
// bytes this rank sends to peers on its own node (intra) and on other nodes (inter).
#pragma once
#include <memory>

#include "comm/communicator.hpp"
#include "comm/rank.hpp"
#include "zero/link_counter.hpp"

namespace core::zero {

struct Topology {
  int world_size = 1, rank = 0;
  int ranks_per_node = 1;  // alpha
  int nodes = 1, node = 0, local_rank = 0;
  int node_of(int r) const { return r / ranks_per_node; }

  // UsageError naming `what` (the key or launcher variable alpha came from) when N is not a
  // multiple of alpha.
  static Topology make(int world_size, int rank, int ranks_per_node, const std::string& what);
};

// alpha for a job: `configured` (> 0) or the launcher's local size. Launcher values must describe a
// block placement (local rank = rank mod local size, equal node sizes): UsageError otherwise.
Topology discover_topology(const comm::RankInfo& info, int configured);

// UsageError unless h divides the ranks per node (an hpZ group lies inside one node).
void check_hpz_size(int h, const Topology& topo);

// The counted communicators of a job. hpz is null when h == 1.
struct CommGroups {
  Topology topo;
  std::unique_ptr<LinkCounter> world, intra, inter, hpz;
  int hpz_size = 1;
  // Collective over `world`: splits it. UsageError (before any split) when h does not divide alpha.
  CommGroups(std::unique_ptr<comm::Communicator> world, const Topology& topo, int hpz_size);
  LinkBytes bytes() const;  // sum over the groups since the last reset
  void reset_bytes();
};

}  // namespace core::zero
