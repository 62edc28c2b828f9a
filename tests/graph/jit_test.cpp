// The compiled back-end agrees with the interpreter (shared sets, closed-form pairs, the per-root
// wedge table, vertex-induced differences, labels), and a second kernel for the same plan comes from the cache.
#include <doctest/doctest.h>

#include "graph/generators.hpp"
#include "graph/jit.hpp"
#include "graph/matcher.hpp"
#include "test_support.hpp"

using namespace core::graph;

TEST_CASE("JIT kernels count what the interpreter counts") {
  core::test::TempDir cache("jit-cache");
  Graph g = relabel_by_degree(generate_rmat({9, 8}, 5));
  g.labels.resize(g.n());
  for (Vertex v = 0; v < g.n(); ++v) g.labels[v] = static_cast<int>(g.original_ids[v] % 2);
  const GraphStats stats = graph_stats(g);
  struct Case {
    const char* pattern;
    Induced mode;
    std::vector<int> labels;
  };
  // 0-4,1-4,2-3,2-4,3-4: ordered pairs whose set excludes distinct earlier vertices.
  for (const Case& c : {Case{"diamond", Induced::edge, {}}, Case{"house", Induced::edge, {}},
                        Case{"0-4,1-4,2-3,2-4,3-4", Induced::edge, {}}, Case{"4-cycle", Induced::vertex, {0, 1, 0, 1}}}) {
    Pattern p = parse_pattern(c.pattern);
    p.set_labels(c.labels);
    const Plan plan = choose_plan(p, c.mode, stats);
    const std::uint64_t expect = count_matches(g, plan, {2, 0, 1});
    CAPTURE(c.pattern);
    CHECK(expect > 0);
    const JitKernel kernel(plan, cache.path());
    CHECK_FALSE(kernel.from_cache());
    CHECK(kernel.compile_seconds() > 0);
    CHECK(kernel.count(g, {2, 0, 1}) == expect);
    CHECK(kernel.count(g, {1, 1, 2}) + kernel.count(g, {1, 0, 2}) == expect);
    const JitKernel again(plan, cache.path());
    CHECK(again.from_cache());
    CHECK(again.count(g, {1, 0, 1}) == expect);
  }
  CHECK(emit_cpp(choose_plan(named_pattern("house"), Induced::edge, stats)).find("gz_count_range") != std::string::npos);
}

TEST_CASE("JIT kernels with the per-root wedge table (Plan::root_common) count what the interpreter counts") {
  core::test::TempDir cache("jit-cache-root");
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 6));
  const GraphStats stats = graph_stats(g);
  const Plan plan = make_plan(named_pattern("house"), Induced::edge, {0, 1, 2, 3, 4}, stats, RootCommon::where_applicable);
  REQUIRE(plan.root_common);
  const std::uint64_t expect = count_matches(g, make_plan(named_pattern("house"), Induced::edge, {0, 1, 2, 3, 4}, stats,
                                                          RootCommon::never));
  CHECK(expect > 0);
  CHECK(count_matches(g, plan, {2, 0, 1}) == expect);
  CHECK(JitKernel(plan, cache.path()).count(g, {2, 0, 1}) == expect);
}

TEST_CASE("JIT kernels with an inclusion-exclusion tail (Plan::iep) count what enumeration counts") {
  core::test::TempDir cache("jit-cache-iep");
  Graph g = relabel_by_degree(generate_rmat({8, 8}, 7));
  g.labels.resize(g.n());
  for (Vertex v = 0; v < g.n(); ++v) g.labels[v] = static_cast<int>(g.original_ids[v] % 2);
  const GraphStats stats = graph_stats(g);
  // A triangle with a pendant at each corner (three different tail sets, earlier vertices removed
  // from them) and a labeled 5-star (equal sets, one label filtered, divided by 2 for the leaves alike).
  Pattern star = named_pattern("5-star");
  star.set_labels({0, 1, 1, 0, 0});
  for (const Pattern& p : {parse_pattern("0-1,1-2,2-0,0-3,1-4,2-5"), star}) {
    const Plan plan = choose_plan(p, Induced::edge, stats, Formula::always);
    CAPTURE(plan.to_text());
    REQUIRE(plan.iep >= 3);
    const std::uint64_t expect = count_matches(g, choose_plan(p, Induced::edge, stats, Formula::never), {2, 0, 1});
    CHECK(expect > 0);
    CHECK(count_matches(g, plan, {2, 0, 1}) == expect);
    CHECK(JitKernel(plan, cache.path()).count(g, {2, 0, 1}) == expect);
  }
}
