// The compiled back-end agrees with the interpreter (shared sets, closed-form pairs, the per-root
// wedge table, vertex-induced differences, labels), and a second kernel for the same plan comes from the cache,
// also when only its predicted cost changed.
// Decomposed counts with compiled quotient plans, and split over ranks, equal the single-rank interpreter; the
// ranks' 128-bit embedding shares give exact counts or an overflow error.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "common/errors.hpp"
#include "graph/decompose.hpp"
#include "graph/generators.hpp"
#include "graph/jit.hpp"
#include "graph/matcher.hpp"
#include "test_support.hpp"

using namespace core::graph;

namespace {

// The plan counts `expect` (> 0) in the interpreter and in its compiled kernel.
void check_back_ends(const Graph& g, const Plan& plan, std::uint64_t expect, const std::filesystem::path& cache) {
  CHECK(expect > 0);
  CHECK(count_matches(g, plan, {2, 0, 1}) == expect);
  CHECK(JitKernel(plan, cache).count(g, {2, 0, 1}) == expect);
}

}  // namespace

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

TEST_CASE("a kernel's source and cache entry do not depend on the predicted cost the plan race re-estimates") {
  core::test::TempDir cache("jit-cache");
  const GraphStats stats = graph_stats(relabel_by_degree(generate_rmat({8, 8}, 3)));
  Plan plan = choose_plan(named_pattern("house"), Induced::edge, stats);
  const std::string source = emit_cpp(plan);
  CHECK_FALSE(jit_kernel_cached(plan, cache.path()));
  const JitKernel kernel(plan, cache.path());
  plan.predicted_cost *= 1.37;
  CHECK(emit_cpp(plan) == source);
  CHECK(jit_kernel_cached(plan, cache.path()));
}

TEST_CASE("JIT kernels with the per-root wedge table (Plan::root_common) count what the interpreter counts") {
  core::test::TempDir cache("jit-cache-root");
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 6));
  const GraphStats stats = graph_stats(g);
  // The house's B lies in N(v_0); the tailed 4-cycle's (the tail 4 hangs off 1) is intersected with N(v_0) first.
  for (const char* name : {"house", "0-1,1-2,0-3,2-3,1-4"}) {
    const Pattern p = parse_pattern(name);
    const Plan plan = make_plan(p, Induced::edge, {0, 1, 2, 3, 4}, stats, RootCommon::where_applicable);
    CAPTURE(name);
    REQUIRE(plan.root_common);
    CHECK(root_common_filters_b(plan) == (std::string(name) != "house"));
    check_back_ends(g, plan, count_matches(g, make_plan(p, Induced::edge, {0, 1, 2, 3, 4}, stats, RootCommon::never)),
                    cache.path());
  }
}

TEST_CASE("a plan with marked pairs (Plan::marked_pairs) counts the same in a JIT kernel, which counts its pairs per vertex") {
  core::test::TempDir cache("jit-cache-marked");
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 8));
  const GraphStats stats = graph_stats(g);
  // q088, in the order its cost model takes on as-22july06: B = N(5) ∩ N(4) ∩ N(1), scanned in N(5) ∩ N(1).
  const Pattern p = parse_pattern("0-3,0-4,1-2,1-3,1-5,2-4,2-5,3-4,3-5,4-5");
  Plan plan = make_plan(p, Induced::edge, {5, 3, 4, 1, 0, 2}, stats, RootCommon::never);
  const std::uint64_t expect = count_matches(g, plan);
  REQUIRE(marked_pairs_applies(plan));
  CHECK(marked_pairs_list_level(plan) == 0);
  plan.marked_pairs = true;
  check_back_ends(g, plan, expect, cache.path());
}

TEST_CASE("a plan with tabled pairs (Plan::tabled_pairs) counts the same in a JIT kernel, which merges its pairs") {
  core::test::TempDir cache("jit-cache-tabled");
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 8));
  // The prism in the order its cost model takes on astro-ph: per path 0-1-4 and 5 in N(4), 2 in N(0) ∩ N(1) ∩ N(5)
  // and 3 in N(0) ∩ N(4) ∩ N(5).
  Plan plan = make_plan(parse_pattern("0-1,0-2,0-3,1-2,1-4,2-5,3-4,3-5,4-5"), Induced::edge, {0, 1, 4, 5, 2, 3},
                        graph_stats(g), RootCommon::never, Formula::always);
  const std::uint64_t expect = count_matches(g, plan);
  REQUIRE(tabled_pairs_applies(plan));
  plan.tabled_pairs = true;
  check_back_ends(g, plan, expect, cache.path());
}

TEST_CASE("JIT kernels sizing the counted set from the root's wedge table (Plan::common_count) count what merging counts") {
  core::test::TempDir cache("jit-cache-common");
  const Graph g = relabel_by_degree(generate_rmat({9, 8}, 7));
  const GraphStats stats = graph_stats(g);
  // The last level (K_{2,2} with a joined edge, as the planner orders it), and ordered pairs (K_{2,3} with a
  // pendant: 3 and 4 in N(0) ∩ N(2)).
  for (const auto& [pattern, order] : {std::pair{"0-1,0-2,1-3,1-4,2-3,2-4,3-4", std::vector<int>{1, 3, 4, 2, 0}},
                                       std::pair{"0-1,1-2,0-3,2-3,0-4,2-4,1-5", std::vector<int>{0, 1, 5, 2, 3, 4}}}) {
    const Pattern p = parse_pattern(pattern);
    const Plan plan = make_plan(p, Induced::edge, order, stats, RootCommon::where_applicable, Formula::always);
    CAPTURE(std::string(pattern));
    REQUIRE(plan.common_count);
    check_back_ends(g, plan, count_matches(g, make_plan(p, Induced::edge, order, stats, RootCommon::never, Formula::always)),
                    cache.path());
  }
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
    check_back_ends(g, plan, count_matches(g, choose_plan(p, Induced::edge, stats, Formula::never), {2, 0, 1}), cache.path());
  }
  // q089 (nested tail sets): every tail set sized alone, N(3) ∩ N(4) merged or from the root's table.
  const Pattern q089 = parse_pattern("0-3,0-4,1-3,1-4,1-5,2-3,2-4,2-5,3-5,4-5");
  const std::uint64_t expect = count_matches(g, choose_plan(q089, Induced::edge, stats, Formula::never), {2, 0, 1});
  for (RootCommon table : {RootCommon::never, RootCommon::where_applicable}) {
    const Plan plan = make_plan(q089, Induced::edge, {3, 5, 4, 0, 1, 2}, stats, table, Formula::always);
    CAPTURE(plan.to_text());
    REQUIRE(plan.iep == 3);
    CHECK(iep_sized(plan) == 7u);
    CHECK(plan.common_count == (table == RootCommon::where_applicable));
    check_back_ends(g, plan, expect, cache.path());
  }
}

TEST_CASE("decomposed counts with JIT quotient plans, split over ranks, equal the single-rank interpreter") {
  core::test::TempDir cache("jit-decomposed");
  const Graph g = relabel_by_degree(generate_rmat({8, 8}, 5));
  const GraphStats stats = graph_stats(g);
  const Pattern p = named_pattern("dumbbell");  // its quotients include plain plans (the 4-clique)
  const CountPlan cp = choose_count_plan(p, Induced::edge, stats, Formula::always);
  REQUIRE(cp.decomposition);
  const std::uint64_t expect = count_matches(g, choose_plan(p, Induced::edge, stats, Formula::never), {2, 0, 1});
  CHECK(expect > 0);
  std::map<std::string, std::unique_ptr<JitKernel>> kernels;
  const PlanCounter jit = [&](const Plan& plan, const ExecOptions& e) {
    auto& k = kernels[plan.hash()];
    if (!k) k = std::make_unique<JitKernel>(plan, cache.path());
    return k->count(g, e);
  };
  for (int ranks : {1, 3}) {
    CAPTURE(ranks);
    std::vector<__int128> interp, compiled;
    for (int r = 0; r < ranks; ++r) {
      interp.push_back(embedding_share(g, cp, {1, r, ranks}));
      compiled.push_back(embedding_share(g, cp, {2, r, ranks}, jit));
    }
    CHECK(count_from_shares(cp, interp) == expect);
    CHECK(count_from_shares(cp, compiled) == expect);
  }
  CHECK_FALSE(kernels.empty());
  CHECK(count_with(g, cp, {2, 0, 1}) == expect);
}

TEST_CASE("rank shares sum exactly in 128 bits: a count past 2^64 - 1 is an error, not a wrapped number") {
  const Graph g = relabel_by_degree(generate_rmat({6, 4}, 1));
  const CountPlan cp = choose_count_plan(named_pattern("5-cycle"), Induced::edge, graph_stats(g), Formula::always);
  const auto aut = static_cast<__int128>(cp.plan.automorphisms);
  const __int128 top = static_cast<__int128>(~std::uint64_t{0}) * aut;  // the largest count's embeddings
  CHECK(count_from_shares(cp, std::vector<__int128>{top - 7 * aut, 7 * aut}) == ~std::uint64_t{0});
  CHECK(count_from_shares(cp, std::vector<__int128>{-3 * aut, 5 * aut}) == 2);  // a rank's share may be negative
  CHECK_THROWS_AS(count_from_shares(cp, std::vector<__int128>{top, aut}), core::DataError);
  CHECK_THROWS_AS(count_from_shares(cp, std::vector<__int128>{aut + 1}), std::logic_error);
}
