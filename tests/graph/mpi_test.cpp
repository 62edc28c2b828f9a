// Under mpirun (2 and 4 ranks): the outer loop split across ranks and summed through core::comm
// gives the single-process counts, with the graph replicated or mapped by every rank from rank 0's cache file.
#include <doctest/doctest.h>

#include <optional>

#include "comm/world.hpp"
#include "graph/generators.hpp"
#include "graph/jobs.hpp"
#include "graph/matcher.hpp"
#include "test_support.hpp"

using namespace core::graph;

namespace {
// One communicator for the whole binary: MPI is finalized with the last one, and the jobs open their own.
core::comm::Communicator* world(const core::comm::RankInfo& info) {
  static const auto comm = core::comm::make_world_communicator(info);
  return comm.get();
}
}  // namespace

TEST_CASE("rank-split counts sum to the single-process count") {
  const core::comm::RankInfo info = core::comm::discover_ranks(std::nullopt, std::nullopt);
  auto* comm = world(info);
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 3));
  const GraphStats stats = graph_stats(g);
  for (const char* name : {"triangle", "house", "4-cycle"}) {
    for (Induced mode : {Induced::edge, Induced::vertex}) {
      const Plan plan = choose_plan(named_pattern(name), mode, stats);
      const std::uint64_t local = count_matches(g, plan, {1, info.rank, info.world_size});
      std::vector<std::uint64_t> all(info.world_size);
      comm->all_gather(&local, all.data(), sizeof local, core::comm::DType::u8);
      std::uint64_t total = 0;
      for (auto c : all) total += c;
      CAPTURE(name);
      CHECK(total == count_matches(g, plan, {1, 0, 1}));
    }
  }
}

TEST_CASE("graph_sharing one_file: every rank maps rank 0's cache; the counts of replicated ranks") {
  const core::comm::RankInfo info = core::comm::discover_ranks(std::nullopt, std::nullopt);
  world(info);
  core::test::TempDir dir("graph-mpi-share");  // only rank 0's folder is written
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 5));
  const std::uint64_t expect = count_matches(g, choose_plan(named_pattern("4-clique"), Induced::edge, graph_stats(g)), {1, 0, 1});
  for (const char* sharing : {"one_file", "replicate", "one_file"}) {  // the second one_file maps the cache it finds
    jobs::CountOptions o;
    o.graph = "rmat:9:8";
    o.seed = 5;
    o.threads = 1;
    o.graph_cache = (dir / "cache").string();
    o.graph_sharing = sharing;
    const auto r = jobs::count(o, nullptr);
    CHECK(r.has_value() == (info.rank == 0));
    if (!r) continue;
    CAPTURE(sharing);
    CHECK((*r)["count"] == expect);
    CHECK((*r)["graph"]["sharing"] == sharing);
    CHECK((*r)["graph"]["edges"] == g.m());
  }
  jobs::CountOptions off;
  off.graph = "rmat:9:8";
  off.graph_cache = "off";
  off.graph_sharing = "one_file";
  CHECK_THROWS_AS(jobs::count(off, nullptr), core::UsageError);
}
