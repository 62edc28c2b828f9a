// SDPA sparse format: round trip, header variants, errors naming file and line, and our solver
// against Debian's csdp on the same files.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "certify/sdp_solver.hpp"
#include "certify/sdpa.hpp"
#include "common/errors.hpp"
#include "csdp_runner.hpp"
#include "sdp_fixtures.hpp"
#include "test_support.hpp"

using namespace core::certify;
using namespace certify_test;

namespace {

// Dense copy of every matrix (C, A_1..m) for comparisons.
std::vector<BlockValues> dense_all(const SdpProblem& p) {
  std::vector<BlockValues> out;
  BlockValues c = p.zeros();
  p.accumulate(p.C, 1.0, c);
  out.push_back(c);
  for (const auto& A : p.A) {
    BlockValues a = p.zeros();
    p.accumulate(A, 1.0, a);
    out.push_back(a);
  }
  return out;
}

SdpProblem parse(const std::string& text) {
  std::istringstream in(text);
  return parse_sdpa(in, "t.dat-s");
}

}  // namespace

TEST_CASE("SDPA write then read gives back the same problem") {
  const KnownSdp k = random_known_sdp(5, 2, 4, 9, 3);
  core::test::TempDir dir("sdpa");
  write_sdpa(dir / "p.dat-s", k.problem, "planted");
  const SdpProblem back = read_sdpa(dir / "p.dat-s");
  REQUIRE(back.blocks.size() == 2);
  CHECK(back.blocks[0].size == 5);
  CHECK(!back.blocks[0].diagonal);
  CHECK(back.blocks[1].size == 4);
  CHECK(back.blocks[1].diagonal);
  CHECK((back.b - k.problem.b).norm() == 0.0);
  const auto a = dense_all(k.problem), b = dense_all(back);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t blk = 0; blk < 2; ++blk) CHECK((a[i][blk] - b[i][blk]).norm() == 0.0);
  CHECK(!std::filesystem::exists(dir / "p.dat-s.tmp"));
}

TEST_CASE("SDPA header variants: comments, punctuation, trailing text, entries in either triangle") {
  const SdpProblem p = parse(
      "\"a comment\n* another\n2 =mDIM\n2 =nBLOCK\n{2, -1}\n(1.0, 2.0)\n"
      "0 1 2 1 -3.5\n1 1 1 1 1\n2 2 1 1 1\n2 1 1 2 0.5\n");
  REQUIRE(p.num_constraints() == 2);
  CHECK(p.blocks[1].diagonal);
  CHECK(p.b(1) == 2.0);
  REQUIRE(p.C.entries.size() == 1);
  CHECK(p.C.entries[0].row == 0);
  CHECK(p.C.entries[0].col == 1);
  CHECK(p.C.entries[0].value == 3.5);  // C = -F_0
  CHECK(sdpa_objective(-2.0) == 2.0);
}

TEST_CASE("SDPA reader errors name the file and line") {
  CHECK_THROWS_WITH_AS(parse("1\n1\n2\n1.0\n0 1 1 x 1.0\n"), "t.dat-s:5: column index 'x' is not an integer",
                       core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n-2\n1.0\n1 1 1 2 1.0\n"),
                       "t.dat-s:5: off-diagonal entry (1, 2) in diagonal block 1", core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n2\n1.0\n1 1 3 3 1.0\n"),
                       "t.dat-s:5: index (3, 3) outside block 1 of size 2", core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n2\n1.0\n4 1 1 1 1.0\n"), "t.dat-s:5: matrix number 4 outside 0..1",
                       core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n2\n1.0\n1 1 1 1\n"),
                       "t.dat-s:5: expected 'matno block i j value' (5 fields), got 4", core::DataError);
  CHECK_THROWS_WITH_AS(parse("2\n1\n2\n1.0\n"), doctest::Contains("t.dat-s:4: expected 2 objective values"),
                       core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n0\n1.0\n"), "t.dat-s:3: block size 0", core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n2\nnan\n"), "t.dat-s:4: value c_1 'nan' is not finite", core::DataError);
  CHECK_THROWS_WITH_AS(parse(""), "t.dat-s (empty file): missing the number of constraints", core::DataError);
  // Declared counts do not size allocations: a corrupt count is an error about the values that are missing.
  CHECK_THROWS_WITH_AS(parse("99999999999\n1\n2\n1.0\n"), doctest::Contains("expected 99999999999 objective values c_i, got 1"),
                       core::DataError);
  CHECK_THROWS_WITH_AS(parse("1\n1\n99999999999\n1.0\n"), "t.dat-s:3: block size 99999999999 is too large",
                       core::DataError);
  CHECK_THROWS_AS(read_sdpa("/nonexistent/x.dat-s"), core::InputMissingError);
  // A repeated entry (in either triangle) was summed silently; CSDP rejects it, SDPA answers differently.
  CHECK_THROWS_WITH_AS(parse("1\n1\n2\n1.0\n1 1 1 2 1.0\n0 1 1 1 1.0\n1 1 2 1 0.5\n"),
                       "t.dat-s:7: entry (2, 1) of block 1 of matrix 1 repeats line 5 (an SDPA file lists each entry "
                       "of the upper triangle once)",
                       core::DataError);
  CHECK_NOTHROW(parse("2\n1\n2\n1.0 1.0\n1 1 1 2 1.0\n2 1 1 2 1.0\n0 1 1 2 1.0\n"));  // same place, other matrices
  // Each block size fits an int, their sum does not: an error, not a wrapped negative order.
  const SdpProblem huge = parse("1\n2\n2147483647 2147483647\n1.0\n");
  CHECK_THROWS_WITH_AS(huge.total_size(), doctest::Contains("total order of 4294967294"), core::DataError);
}

TEST_CASE("our solver agrees with csdp on the same SDPA files") {
  if (!have_csdp()) {
    MESSAGE("skipped: " << kCsdp << " not found (apt-get install coinor-csdp)");
    return;
  }
  core::test::TempDir dir("csdp");
  struct Case {
    std::string name;
    SdpProblem p;
  };
  std::vector<Case> cases = {{"theta_c5", lovasz_theta(5, cycle(5))},
                             {"theta_petersen", lovasz_theta(10, petersen())},
                             {"theta_c9", lovasz_theta(9, cycle(9))}};
  for (std::uint64_t seed = 11; seed <= 14; ++seed)
    cases.push_back({"planted_" + std::to_string(seed), random_known_sdp(8, 2, 6, 20, seed).problem});
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto path = dir / (c.name + ".dat-s");
    write_sdpa(path, c.p);
    const SdpProblem p = read_sdpa(path);
    const SdpResult ours = solve_sdp(p);
    const CsdpRun theirs = run_csdp(path, p.b);
    REQUIRE(ours.status == SdpStatus::optimal);
    REQUIRE(theirs.exit_code == 0);
    REQUIRE(theirs.dual_objective);
    CHECK(sdpa_objective(ours.primal_objective) == doctest::Approx(*theirs.dual_objective).epsilon(1e-6));
  }
}

TEST_CASE("csdp and our solver agree on infeasible and unbounded files") {
  if (!have_csdp()) {
    MESSAGE("skipped: " << kCsdp << " not found (apt-get install coinor-csdp)");
    return;
  }
  core::test::TempDir dir("csdp_inf");
  // Primal infeasible: tr X = -1. Dual infeasible: min -X11 s.t. X22 = 1.
  const auto infeasible = parse("1\n1\n3\n-1\n0 1 1 2 -1\n1 1 1 1 1\n1 1 2 2 1\n1 1 3 3 1\n");
  const auto unbounded = parse("1\n1\n2\n1\n0 1 1 1 1\n1 1 2 2 1\n");
  write_sdpa(dir / "inf.dat-s", infeasible);
  write_sdpa(dir / "unb.dat-s", unbounded);
  CHECK(solve_sdp(infeasible).status == SdpStatus::primal_infeasible);
  CHECK(run_csdp(dir / "inf.dat-s", infeasible.b).exit_code == 1);
  CHECK(solve_sdp(unbounded).status == SdpStatus::dual_infeasible);
  CHECK(run_csdp(dir / "unb.dat-s", unbounded.b).exit_code == 2);
}
