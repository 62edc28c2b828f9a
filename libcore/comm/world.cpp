// Picks the job-wide communicator backend from the discovered ranks (see world.hpp).
#include "comm/world.hpp"

#include <cstdlib>

#include "comm/thread_comm.hpp"
#if TOOLKIT_HAVE_NCCL
#include "comm/nccl_comm.hpp"
#endif
#if TOOLKIT_HAVE_MPI
#include <mpi.h>

#include "comm/mpi_comm.hpp"
#endif

namespace core::comm {

std::unique_ptr<Communicator> make_world_communicator(const RankInfo& info, Seconds timeout) {
  std::unique_ptr<Communicator> comm;
  if (info.world_size == 1) {
    comm = std::move(make_thread_communicators(1).front());
  } else {
#if TOOLKIT_HAVE_MPI
    comm = MpiCommunicator::world();
    if (comm->rank() != info.rank || comm->size() != info.world_size)
      throw UsageError("comm: rank discovery (" + info.source + ") says rank " + std::to_string(info.rank) + " of " +
                       std::to_string(info.world_size) + " but MPI says rank " + std::to_string(comm->rank()) +
                       " of " + std::to_string(comm->size()) + "; start the job with mpirun/srun -n " +
                       std::to_string(info.world_size));
#else
    throw UsageError("comm: this is rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size) +
                     " (" + info.source + ") but the build has no MPI backend; reconfigure with -DTOOLKIT_MPI=ON "
                     "or run a single process");
#endif
  }
  comm->set_timeout(timeout);
  return comm;
}

bool have_nccl() {
#if TOOLKIT_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> make_nccl_world_communicator(const RankInfo& info, Communicator& bootstrap,
                                                           Seconds timeout) {
#if TOOLKIT_HAVE_NCCL
  return NcclCommunicator::world(info, bootstrap, timeout);
#else
  (void)info, (void)bootstrap, (void)timeout;
  throw UsageError("distributed.backend = nccl: this build has no NCCL (configure on a machine with CUDA and NCCL); "
                   "use distributed.backend = shared_gpu to run the ranks on one GPU");
#endif
}

void abort_job(int exit_code) {
#if TOOLKIT_HAVE_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!finalized) {
    if (!initialized) MPI_Init(nullptr, nullptr);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
#endif
  std::_Exit(exit_code);
}

}  // namespace core::comm
