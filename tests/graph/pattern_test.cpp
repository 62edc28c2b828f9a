// Patterns: names, edge strings, files, automorphism group sizes, canonical forms, the counts of
// connected graphs (OEIS A001349) and the plans' restrictions.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "common/errors.hpp"
#include "graph/pattern.hpp"
#include "graph/plan.hpp"
#include "test_support.hpp"

using namespace core::graph;

TEST_CASE("named patterns and their automorphism groups") {
  CHECK(automorphisms(named_pattern("triangle")).size() == 6);
  CHECK(automorphisms(named_pattern("5-clique")).size() == 120);
  CHECK(automorphisms(named_pattern("6-cycle")).size() == 12);
  CHECK(automorphisms(named_pattern("5-path")).size() == 2);
  CHECK(automorphisms(named_pattern("5-star")).size() == 24);
  CHECK(automorphisms(named_pattern("diamond")).size() == 4);
  CHECK(automorphisms(named_pattern("tailed-triangle")).size() == 2);
  CHECK(automorphisms(named_pattern("house")).size() == 2);
  CHECK(automorphisms(named_pattern("bowtie")).size() == 8);
  Pattern labeled = named_pattern("4-cycle");
  labeled.set_labels({0, 1, 0, 1});
  CHECK(automorphisms(labeled).size() == 4);
  for (const Perm& s : automorphisms(named_pattern("house")))
    for (const auto& [u, v] : named_pattern("house").edges()) CHECK(named_pattern("house").has_edge(s[u], s[v]));
}

TEST_CASE("pattern specs: names, edge strings, files and errors") {
  CHECK(parse_pattern("0-1,1-2,2-0") == named_pattern("triangle"));
  CHECK(parse_pattern("4-path").edge_count() == 3);
  CHECK_THROWS_AS(parse_pattern("hexagon"), core::UsageError);
  CHECK_THROWS_AS(parse_pattern("0-1,2-3"), core::UsageError);  // not connected
  CHECK_THROWS_AS(parse_pattern("0-0"), core::UsageError);
  CHECK_THROWS_AS(parse_pattern("99-clique"), core::UsageError);
  CHECK_THROWS_AS(parse_pattern("no/such/file.pat"), core::InputMissingError);
  // Common names; K-star counts vertices (a hub and K-1 leaves).
  CHECK(parse_pattern("dumbbell") == parse_pattern("0-1,1-2,2-0,0-3,3-4,4-5,5-3"));
  CHECK(parse_pattern("rectangle") == named_pattern("4-cycle"));
  CHECK(parse_pattern("square") == named_pattern("4-cycle"));
  CHECK(parse_pattern("pentagon") == named_pattern("5-cycle"));
  CHECK(parse_pattern("4-star").size() == 4);
  CHECK(parse_pattern("4-star").degree(0) == 3);
  // Skipped vertex ids are named as such, not reported as a disconnected pattern.
  try {
    parse_pattern("0-1,1-2,2-5");
    FAIL("a pattern with unused vertex ids was accepted");
  } catch (const core::UsageError& e) {
    CHECK(std::string(e.what()).find("no edge uses 3, 4") != std::string::npos);
    CHECK(std::string(e.what()).find("not connected") == std::string::npos);
  }
  core::test::TempDir dir("pattern");
  core::test::write_text(dir / "p.txt", "# a labeled path\n0 1\n1-2\nlabels 3 4 3\n");
  const Pattern p = parse_pattern((dir / "p.txt").string());
  CHECK(p.size() == 3);
  CHECK(p.labels() == std::vector<int>{3, 4, 3});
  core::test::write_text(dir / "bad.txt", "0 1\n1 2 3\n");
  CHECK_THROWS_AS(parse_pattern((dir / "bad.txt").string()), core::DataError);
}

TEST_CASE("pattern files: a bad edge names its line; a huge label is a data error, not a crash") {
  core::test::TempDir dir("pattern-lines");
  const auto message = [&](const char* name, const char* text) {
    core::test::write_text(dir / name, text);
    try {
      parse_pattern((dir / name).string());
    } catch (const core::DataError& e) {
      return std::string(e.what());
    }
    return std::string("no DataError");
  };
  CHECK(message("x.txt", "# c\n0 1\n1 x\n2 0\n").find("x.txt:3:") != std::string::npos);
  CHECK(message("loop.txt", "0 1\n1 1\n").find("loop.txt:2:") != std::string::npos);
  CHECK(message("big.txt", "0 1\n1-2000\n").find("big.txt:2:") != std::string::npos);
  // stoi threw std::out_of_range (exit 1, "internal error: stoi").
  CHECK(message("label.txt", "0 1\n1 2\nlabels 99999999999 0 0\n").find("label.txt:3:") != std::string::npos);
}

TEST_CASE("canonical forms identify isomorphic patterns") {
  const Pattern a = parse_edge_string("0-1,1-2,2-3,3-0,0-4,1-4");  // house
  const Pattern b = parse_edge_string("4-3,3-2,2-1,1-4,4-0,3-0");  // house, renamed
  CHECK(canonical_form(a) == canonical_form(b));
  CHECK_FALSE(canonical_form(a) == canonical_form(named_pattern("5-cycle")));
  // Numbers of connected graphs on k vertices: 1, 1, 2, 6, 21, 112, 853.
  const std::vector<std::size_t> expect = {1, 1, 2, 6, 21, 112};
  for (int k = 1; k <= 6; ++k) CHECK(connected_patterns(k).size() == expect[k - 1]);
}

TEST_CASE("restrictions bound later levels by earlier ones and break all symmetry") {
  GraphStats stats;
  stats.n = 1000;
  stats.m = 5000;
  stats.degree_biased = 20;
  stats.out_degree_biased = 5;
  stats.closure = 0.1;
  for (const char* name : {"5-clique", "4-cycle", "house", "5-star", "bowtie"}) {
    const Plan plan = choose_plan(named_pattern(name), Induced::edge, stats);
    for (int l = 0; l < plan.size(); ++l)
      for (int u : plan.levels[l].upper) CHECK(u < l);
    // The restrictions admit |Aut| fewer orderings: count linear extensions by brute force.
    std::vector<int> ids(plan.pattern.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::uint64_t ok = 0, all = 0;
    do {
      bool fine = true;
      for (const auto& [a, b] : plan.restrictions) fine = fine && ids[b] < ids[a];
      ok += fine;
      ++all;
    } while (std::next_permutation(ids.begin(), ids.end()));
    CAPTURE(name);
    CHECK(ok * plan.automorphisms == all);
  }
}
