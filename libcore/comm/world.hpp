// The communicator of a whole job, chosen from the discovered ranks: MPI when the build has it and
// world_size > 1, a single-rank (self) communicator when world_size == 1; NCCL's over device buffers.
#pragma once
#include <memory>

#include "comm/communicator.hpp"
#include "comm/rank.hpp"

namespace core::comm {

// Throws UsageError when world_size > 1 but the build has no MPI, or when MPI's view of the job
// (rank, size) disagrees with `info` (e.g. --world-size 4 without a launcher).
std::unique_ptr<Communicator> make_world_communicator(const RankInfo& info, Seconds timeout = kDefaultCommTimeout);

// Whether the build has the NCCL backend (CUDA and NCCL found).
bool have_nccl();

// The job's NCCL communicator (one process per GPU: cudaSetDevice(local rank), the unique id sent over
// `bootstrap`, the job's MPI communicator). UsageError when the build has no NCCL.
std::unique_ptr<Communicator> make_nccl_world_communicator(const RankInfo& info, Communicator& bootstrap,
                                                           Seconds timeout = kDefaultCommTimeout);

// Ends every process of the job with `exit_code`: MPI_Abort on MPI_COMM_WORLD (initialising MPI first when this
// rank failed before it did; mpirun and srun then stop the other ranks and exit with the code), or, in a build
// without MPI, this process alone. For App::use_ranks, so that one failing rank never leaves the others waiting.
[[noreturn]] void abort_job(int exit_code);

}  // namespace core::comm
