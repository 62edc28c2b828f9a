// MPI backend under mpirun (2 and 4 processes): rank discovery agrees with MPI, every collective
// and dtype matches the serial reference, split() into node-like groups, and a timeout when one
// rank does not join.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include "collective_checks.hpp"
#include "comm/mpi_comm.hpp"
#include "comm/world.hpp"
#include "test_support.hpp"

using namespace core::comm;
using namespace std::chrono_literals;

namespace {

// MPI is initialised before doctest's main runs and finalised after it returns.
const auto g_session = MpiSession::shared();

std::unique_ptr<Communicator> world() {
  auto comm = make_world_communicator(discover_ranks(std::nullopt, std::nullopt), 20s);
  return comm;
}

}  // namespace

TEST_CASE("discovered ranks agree with MPI and the world communicator is MPI") {
  const RankInfo info = discover_ranks(std::nullopt, std::nullopt);
  CHECK(info.source != "single");  // OMPI_COMM_WORLD under mpirun, SLURM under srun
  auto comm = world();
  CHECK(std::string(comm->backend()) == "mpi");
  CHECK(comm->rank() == info.rank);
  CHECK(comm->size() == info.world_size);
  CHECK_THROWS_AS(make_world_communicator(RankInfo{0, info.world_size + 1, 0, 1, "flags"}), core::UsageError);
}

TEST_CASE("MPI collectives match the serial reference") {
  auto comm = world();
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099}}) {
    CAPTURE(count);
    CHECK_NOTHROW(test::check_collectives(*comm, count));
  }
}

TEST_CASE("MPI split into pairs and opt-out") {
  auto comm = world();
  const int r = comm->rank();
  auto pair = comm->split(r / 2, -r);
  REQUIRE(pair);
  CHECK(pair->size() == 2);
  CHECK(pair->rank() == 1 - r % 2);
  CHECK(pair->timeout() == 20s);
  CHECK_NOTHROW(test::check_collectives(*pair, 3));
  auto rest = comm->split(r == 0 ? -1 : 0, 0);
  CHECK((r == 0) == (rest == nullptr));
  if (rest) CHECK(rest->size() == comm->size() - 1);
}

TEST_CASE("MPI collective times out when a rank is late, with a clear message") {
  auto comm = world();
  auto sub = comm->split(0, comm->rank());
  std::string message;
  if (comm->rank() == 0) {
    sub->set_timeout(0.2s);
    try {
      sub->barrier();
    } catch (const CommTimeoutError& e) {
      message = e.what();
    }
    CHECK(message.find("barrier timed out on rank 0 of") != std::string::npos);
    CHECK(message.find("NCCL_DEBUG=INFO") != std::string::npos);
    CHECK_THROWS_AS(sub->barrier(), CommError);  // unusable after the timeout
  } else {
    std::this_thread::sleep_for(600ms);  // arrive after rank 0 gave up
    sub->barrier();
  }
  comm->barrier();  // rank 0 keeps MPI progressing so the late ranks' barrier completes
}
