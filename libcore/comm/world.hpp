// The communicator of a whole job, chosen from the discovered ranks: MPI when the build has it and
// world_size > 1, a single-rank (self) communicator when world_size == 1.
#pragma once
#include <memory>

#include "comm/communicator.hpp"
#include "comm/rank.hpp"

namespace core::comm {

// Throws UsageError when world_size > 1 but the build has no MPI, or when MPI's view of the job
// (rank, size) disagrees with `info` (e.g. --world-size 4 without a launcher).
std::unique_ptr<Communicator> make_world_communicator(const RankInfo& info, Seconds timeout = kDefaultCommTimeout);

}  // namespace core::comm
