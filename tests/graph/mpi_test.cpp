// Under mpirun (2 and 4 ranks): the outer loop split across ranks and summed through core::comm
// gives the single-process counts, with the graph replicated or mapped by every rank from rank 0's cache file.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "comm/world.hpp"
#include "graph/decompose.hpp"
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

TEST_CASE("decomposed counts (connected and pair cuts) split over MPI ranks equal the single-rank interpreter") {
  const core::comm::RankInfo info = core::comm::discover_ranks(std::nullopt, std::nullopt);
  auto* comm = world(info);
  const Graph g = relabel_by_degree(generate_rmat({8, 8}, 3));
  const GraphStats stats = graph_stats(g);
  const auto over_ranks = [&](const CountPlan& cp) {
    const __int128 share = embedding_share(g, cp, {1, info.rank, info.world_size});
    std::vector<__int128> all(info.world_size);
    comm->all_gather(&share, all.data(), sizeof share, core::comm::DType::u8);
    return count_from_shares(cp, all);
  };
  // The 4-cycle's wedge term, the 7-cycle's triangle table and the cycle tables' cycle counts (the
  // house, the pentagon with a pendant) are whole-graph terms: once over the ranks.
  for (const char* name : {"dumbbell", "5-cycle", "tailed-triangle", "4-cycle", "7-cycle", "house", "0-5,1-2,1-3,2-4,3-5,4-5"}) {
    CAPTURE(name);
    const Pattern p = parse_pattern(name);
    const CountPlan cp = choose_count_plan(p, Induced::edge, stats, Formula::always);
    REQUIRE(cp.decomposition);
    // The 7-cycle does not enumerate in test time; its one-process count equals brute force in test_graph_matcher.
    const std::uint64_t expect = std::string_view(name) == "7-cycle"
                                     ? count_with(g, cp, {1, 0, 1})
                                     : count_matches(g, choose_plan(p, Induced::edge, stats, Formula::never), {1, 0, 1});
    CHECK(over_ranks(cp) == expect);
  }
  // A pair cut with a capped joined edge (s018) and an edge-and-vertex cut (s023): per-root passes split by rank.
  for (const char* name : {"0-1,0-3,0-4,0-6,1-3,1-4,1-6,2-3,2-4,2-5,3-5,3-6,4-5",
                           "0-1,0-3,0-4,0-5,1-3,1-4,1-5,2-3,2-4,2-5,2-6,3-4,3-6,4-6,5-6"}) {
    CAPTURE(name);
    const auto cuts = decompositions(parse_pattern(name), stats);
    const auto cut = std::find_if(cuts.begin(), cuts.end(), [](const CountPlan& c) {
      return c.decomposition->capped_edge || c.decomposition->edge_vertex;
    });
    REQUIRE(cut != cuts.end());
    CHECK(over_ranks(*cut) == count_with(g, *cut, {1, 0, 1}));
  }
  // Through the job: every rank's result is the one-process count.
  jobs::CountOptions o;
  o.graph = "rmat:8:8";
  o.seed = 3;
  o.threads = 1;
  o.graph_cache = "off";
  o.pattern = "dumbbell";
  o.formula = "on";
  const auto r = jobs::count(o, nullptr);
  if (r) {
    CHECK((*r)["plan"]["formula"] == "decomposition");
    CHECK((*r)["count"] == count_with(g, choose_count_plan(named_pattern("dumbbell"), Induced::edge, stats, Formula::always), {1, 0, 1}));
  }
}
