// One failing rank ends the whole job quickly with its own exit code (mpirun's MPMD form gives rank 1 a graph
// file that does not exist): the others must not wait out the 300 s communicator timeout.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "test_support.hpp"

using namespace core::test;

TEST_CASE("a rank with a missing input ends every rank with exit 66 within seconds") {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  TempDir dir("gz-mpi-fail");
  write_text(dir / "g.el", "0 1\n1 2\n2 0\n2 3\n");
  const std::string tool = (bin_dir() / "graphzero-mine").string();
  const auto rank_args = [&](const fs::path& graph) {
    return std::vector<std::string>{"-np", "1", "--oversubscribe", tool, "count", "--graph", graph.string(),
                                    "--pattern", "triangle", "--graph-cache", "off", "--out", (dir / "run").string()};
  };
  std::vector<std::string> args = rank_args(dir / "g.el");
  args.push_back(":");
  for (const auto& a : rank_args(dir / "absent.el")) args.push_back(a);
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = run_tool(TOOLKIT_MPIEXEC, args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CAPTURE(r.err);
  CHECK(r.exit_code == 66);
  CHECK(r.err.find("absent.el") != std::string::npos);
  CHECK(seconds < 60.0);
}
