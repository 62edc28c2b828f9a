// Under mpirun (2 and 4 ranks): the outer loop split across ranks and summed through core::comm
// gives the single-process counts.
#include <doctest/doctest.h>

#include <optional>

#include "comm/world.hpp"
#include "graph/generators.hpp"
#include "graph/matcher.hpp"
#include "test_support.hpp"

using namespace core::graph;

TEST_CASE("rank-split counts sum to the single-process count") {
  const core::comm::RankInfo info = core::comm::discover_ranks(std::nullopt, std::nullopt);
  auto comm = core::comm::make_world_communicator(info);
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
