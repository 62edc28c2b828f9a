// NCCL backend under mpirun, one GPU per rank (labels mpi, gpu): every collective and dtype on device
// buffers against the serial reference (collective_checks.hpp through device copies), the byte
// accounting, split() into pairs and opt-out, and the device chosen from the local rank. Exits 77
// (skipped) when this node shows fewer CUDA devices than MPI ranks on it.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collective_checks.hpp"
#include "comm/mpi_comm.hpp"
#include "comm/nccl_comm.hpp"
#include "comm/world.hpp"
#include "device_staging.hpp"
#include "kernels/runtime.hpp"

using namespace core::comm;
using namespace std::chrono_literals;

namespace {

// Checked before MPI starts, so that a node without GPUs skips at once.
const RankInfo g_ranks = [] {
  const RankInfo r = discover_ranks(std::nullopt, std::nullopt);
  if (core::kernels::cuda_device_count() < r.local_size) {
    std::fprintf(stderr, "rank %d: %d CUDA devices for %d local ranks: NCCL tests skipped\n", r.rank,
                 core::kernels::cuda_device_count(), r.local_size);
    std::exit(77);
  }
  return r;
}();
const auto g_session = MpiSession::shared();

const RankInfo& ranks() { return g_ranks; }

test::DeviceStaged nccl_world() {
  auto bootstrap = make_world_communicator(ranks(), 60s);
  return test::DeviceStaged(NcclCommunicator::world(ranks(), *bootstrap, 60s));
}

}  // namespace

TEST_CASE("NCCL collectives on device buffers match the serial reference") {
  auto comm = nccl_world();
  CHECK(std::string(comm.backend()) == "nccl");
  CHECK(static_cast<NcclCommunicator&>(comm.inner()).device() == ranks().local_rank);
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099}}) {
    CAPTURE(count);
    CHECK_NOTHROW(test::check_collectives(comm, count));
  }
  // The device communicator counted the same bytes as the staging wrapper (the formula of communicator.hpp).
  CHECK(comm.inner().stats().bytes == comm.stats().bytes);
}

TEST_CASE("NCCL split into pairs and opt-out") {
  auto comm = nccl_world();
  const int r = comm.rank();
  auto pair = comm.split(r / 2, -r);
  REQUIRE(pair);
  CHECK(pair->size() == 2);
  CHECK(pair->rank() == 1 - r % 2);
  CHECK_NOTHROW(test::check_collectives(*pair, 3));
  auto rest = comm.split(r == 0 ? -1 : 0, 0);
  CHECK((r == 0) == (rest == nullptr));
  if (rest) CHECK(rest->size() == comm.size() - 1);
}
