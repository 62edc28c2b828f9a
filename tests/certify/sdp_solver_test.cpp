// The interior-point SDP solver on problems with known optima: random complementary SDPs, Lovasz
// theta numbers, a degenerate GM line-fit relaxation (tests/certify/data) against csdp,
// infeasible and unbounded problems, and option validation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>

#include "certify/dense_linalg.hpp"
#include "certify/schur_complement.hpp"
#include "certify/sdp_solver.hpp"
#include "certify/sdpa.hpp"
#include "common/errors.hpp"
#include "sdp_fixtures.hpp"
#include "test_support.hpp"

using namespace core::certify;
using namespace certify_test;

TEST_CASE("random SDPs with a planted complementary optimum") {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const int n = 4 + static_cast<int>(seed), r = 1 + static_cast<int>(seed % 3);
    const KnownSdp k = random_known_sdp(n, r, 4, 3 * n, seed);
    const SdpResult res = solve_sdp(k.problem);
    CAPTURE(seed);
    REQUIRE(res.status == SdpStatus::optimal);
    CHECK(res.primal_objective == doctest::Approx(k.optimum).epsilon(1e-7));
    CHECK(res.dual_objective == doctest::Approx(k.optimum).epsilon(1e-7));
    CHECK(res.primal_residual < 1e-8);
    CHECK(res.dual_residual < 1e-8);
    CHECK(res.iterations < 60);
    // Z stays PSD and X, Z are complementary at the optimum.
    const double xz = (res.X[0].cwiseProduct(res.Z[0])).sum() + res.X[1].cwiseProduct(res.Z[1]).sum();
    CHECK(std::abs(xz) < 1e-6 * (1.0 + std::abs(k.optimum)));
  }
}

TEST_CASE("Lovasz theta of small graphs") {
  struct Case {
    const char* name;
    SdpProblem p;
    double theta;
  };
  const Case cases[] = {
      {"5-cycle", lovasz_theta(5, cycle(5)), std::sqrt(5.0)},
      {"7-cycle", lovasz_theta(7, cycle(7)), 7.0 * std::cos(M_PI / 7) / (1.0 + std::cos(M_PI / 7))},
      {"Petersen", lovasz_theta(10, petersen()), 4.0},
      {"complete K6", lovasz_theta(6, complete(6)), 1.0},
      {"empty graph on 4", lovasz_theta(4, {}), 4.0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const SdpResult res = solve_sdp(c.p);
    REQUIRE(res.status == SdpStatus::optimal);
    CHECK(-res.primal_objective == doctest::Approx(c.theta).epsilon(1e-7));
    CHECK(-res.dual_objective == doctest::Approx(c.theta).epsilon(1e-7));
  }
}

TEST_CASE("without scaling the solver reaches the same optimum") {
  SdpOptions opts;
  opts.scale = false;
  const SdpResult res = solve_sdp(lovasz_theta(5, cycle(5)), opts);
  REQUIRE(res.status == SdpStatus::optimal);
  CHECK(-res.primal_objective == doctest::Approx(std::sqrt(5.0)).epsilon(1e-7));
}

TEST_CASE("infeasible inputs report primal_infeasible") {
  SUBCASE("trace of a PSD matrix cannot be negative") {
    SdpProblem p;
    p.blocks = {{3, false}};
    p.C.add(0, 0, 1, 1.0);
    SdpMatrix tr;
    for (int i = 0; i < 3; ++i) tr.add(0, i, i, 1.0);
    p.A = {tr};
    p.b = Eigen::VectorXd::Constant(1, -1.0);
    CHECK(solve_sdp(p).status == SdpStatus::primal_infeasible);
  }
  SUBCASE("LP block: x1 + x2 = 1 and x1 + x2 = 3") {
    SdpProblem p;
    p.blocks = {{2, true}};
    p.C.add(0, 0, 0, 1.0);
    SdpMatrix a;
    a.add(0, 0, 0, 1.0);
    a.add(0, 1, 1, 1.0);
    SdpMatrix a2 = a;
    a2.add(0, 0, 0, 1e-3);  // not exactly parallel, so the Schur complement stays regular
    p.A = {a, a2};
    p.b = Eigen::Vector2d(1.0, 3.0);
    CHECK(solve_sdp(p).status == SdpStatus::primal_infeasible);
  }
}

TEST_CASE("degenerate problems end with a status, never spin") {
  // `printf '1\n1\n1\n1\n'`: one 1x1 block, b = 1, no entries at all (C = 0, A_1 = 0): <0, X> = 1 has no
  // solution. The Schur complement was all zero and its shift loop never grew (0 * 100 = 0).
  SdpProblem p;
  p.blocks = {{1, false}};
  p.A = {SdpMatrix{}};
  p.b = Eigen::VectorXd::Ones(1);
  const SdpResult r = solve_sdp(p);
  CHECK(r.status == SdpStatus::primal_infeasible);
  CHECK(r.iterations == 0);
  CHECK(r.y(0) == 1.0);
  // One empty constraint among regular ones, b < 0 there: the ray's sign follows b.
  SdpMatrix tr;
  for (int i = 0; i < 2; ++i) tr.add(0, i, i, 1.0);
  p.blocks = {{2, false}};
  p.C.add(0, 0, 0, 1.0);
  p.A = {tr, SdpMatrix{}};
  p.b = Eigen::Vector2d(1.0, -2.0);
  const SdpResult r2 = solve_sdp(p);
  CHECK(r2.status == SdpStatus::primal_infeasible);
  CHECK(r2.y(1) == -1.0);
  // Empty constraints with b = 0 are vacuous: the Schur complement is singular in their rows. The solver
  // must stop with some status within its iteration limit (the bug was an endless loop at full CPU).
  p.A = {SdpMatrix{}, SdpMatrix{}};
  p.b = Eigen::Vector2d::Zero();
  SdpOptions opts;
  opts.max_iterations = 50;
  const SdpResult r3 = solve_sdp(p, opts);
  CHECK(r3.iterations <= 50);
  // No constraints at all (found by fuzz_sdpa: an empty Schur complement reached Eigen's maxCoeff).
  p.A.clear();
  p.b.resize(0);
  CHECK_THROWS_WITH_AS(solve_sdp(p), "SDP has no constraints", core::DataError);
}

TEST_CASE("unbounded inputs report dual_infeasible") {
  // min -X11 s.t. X22 = 1: X = diag(t, 1) is feasible for every t > 0.
  SdpProblem p;
  p.blocks = {{2, false}};
  p.C.add(0, 0, 0, -1.0);
  SdpMatrix a;
  a.add(0, 1, 1, 1.0);
  p.A = {a};
  p.b = Eigen::VectorXd::Ones(1);
  CHECK(solve_sdp(p).status == SdpStatus::dual_infeasible);
}

TEST_CASE("iteration limit is reported as such") {
  SdpOptions opts;
  opts.max_iterations = 2;
  const SdpResult res = solve_sdp(lovasz_theta(10, petersen()), opts);
  CHECK(res.status == SdpStatus::iteration_limit);
  CHECK(res.iterations == 2);
  CHECK(std::string(to_string(res.status)) == "iteration_limit");
}

TEST_CASE("options and problems are validated before solving") {
  const SdpProblem p = lovasz_theta(5, cycle(5));
  SdpOptions bad;
  bad.tol = 0.0;
  CHECK_THROWS_AS(solve_sdp(p, bad), core::UsageError);
  bad = {};
  bad.step_fraction = 1.5;
  CHECK_THROWS_WITH_AS(solve_sdp(p, bad), doctest::Contains("step_fraction"), core::UsageError);
  SdpProblem wrong = p;
  wrong.A[1].add(0, 0, 7, 1.0);  // outside the 5x5 block
  CHECK_THROWS_WITH_AS(solve_sdp(wrong), doctest::Contains("outside the block"), core::DataError);
  wrong = p;
  wrong.b.resize(2);
  CHECK_THROWS_AS(solve_sdp(wrong), core::DataError);
}

// Regression: a degenerate Geman-McClure line-fit relaxation (92 x 92, 118 constraints; exported
// by the tls-fit command in the file's comment line) on which the solver used to lose primal
// feasibility near the optimum (rel. primal residual 1e-14 -> 1e-6) and end at the iteration limit.
// Reference: csdp 6.2 with axtol = atytol = objtol = 1e-11, dual objective b^T y recomputed from
// its solution file: -2.977138703891e-02 in the file's max convention (+ in our min form).
TEST_CASE("degenerate GM line-fit relaxation reaches the csdp optimum") {
  const SdpProblem p = read_sdpa(core::test::source_dir() / "tests/certify/data/gm_n30_seed0.dat-s");
  const double csdp_optimum = 2.977138703891e-02;
  const SdpResult res = solve_sdp(p);
  REQUIRE(res.status == SdpStatus::optimal);
  // The solver's contract: relative gap 1e-8 in units of 1 + |objective| (the optimum is 0.03).
  CHECK(std::abs(res.primal_objective - csdp_optimum) < 1e-8 * (1.0 + csdp_optimum));
  CHECK(std::abs(res.dual_objective - csdp_optimum) < 1e-8 * (1.0 + csdp_optimum));
  CHECK(res.primal_residual < 1e-8);
  CHECK(res.dual_residual < 1e-8);
  CHECK(res.iterations < 40);
}

// The sparse Schur complement (SchurMode::sparse) is the same matrix stored sparsely: same iterates
// up to rounding, so the same optimum and iteration count as the dense factorisation.
TEST_CASE("sparse Schur complement reaches the dense solution") {
  SdpOptions sparse;
  sparse.schur = SchurMode::sparse;
  SdpOptions dense;
  dense.schur = SchurMode::dense;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    const KnownSdp k = random_known_sdp(5 + static_cast<int>(seed), 2, 4, 15, seed);
    const SdpResult a = solve_sdp(k.problem, sparse), b = solve_sdp(k.problem, dense);
    REQUIRE(a.status == SdpStatus::optimal);
    CHECK(a.primal_objective == doctest::Approx(k.optimum).epsilon(1e-7));
    CHECK(a.dual_objective == doctest::Approx(b.dual_objective).epsilon(1e-9));
    CHECK(std::abs(a.iterations - b.iterations) <= 1);
  }
  const SdpProblem gm = read_sdpa(core::test::source_dir() / "tests/certify/data/gm_n30_seed0.dat-s");
  const SdpResult a = solve_sdp(gm, sparse);
  REQUIRE(a.status == SdpStatus::optimal);
  CHECK(a.schur == "sparse, block order");
  CHECK(std::abs(a.dual_objective - 2.977138703891e-02) < 1e-7 * 2.977138703891e-02);
}

// A 12 x 12 grid of blocks: the block order would fill the factor (bandwidth 12), so the solver switches to
// an AMD order; a chain of blocks keeps the block order. Both reach the known optimum, as dense does.
TEST_CASE("sparse Schur complement orders: AMD on a grid of blocks, block order on a chain") {
  SdpOptions sparse;
  sparse.schur = SchurMode::sparse;
  SdpOptions dense;
  dense.schur = SchurMode::dense;
  for (const int rows : {1, 12}) {
    CAPTURE(rows);
    const KnownSdp g = rows == 1 ? random_grid_sdp(1, 60, 7) : random_grid_sdp(12, 12, 7);
    const SdpResult a = solve_sdp(g.problem, sparse), b = solve_sdp(g.problem, dense);
    REQUIRE(a.status == SdpStatus::optimal);
    REQUIRE(b.status == SdpStatus::optimal);
    CHECK(a.schur == (rows == 1 ? "sparse, block order" : "sparse, AMD order"));
    CHECK(b.schur == "dense");
    CHECK(a.primal_objective == doctest::Approx(g.optimum).epsilon(1e-7));
    CHECK(a.dual_objective == doctest::Approx(b.dual_objective).epsilon(1e-8));
  }
}

// A memory limit below the solver's estimate refuses the problem before any factorisation.
TEST_CASE("memory limit: SdpTooLarge before solving, a generous limit solves") {
  const KnownSdp k = random_known_sdp(6, 2, 4, 15, 3);
  SdpOptions tight;
  tight.memory_limit_bytes = 1000;
  try {
    (void)solve_sdp(k.problem, tight);
    FAIL("expected SdpTooLarge");
  } catch (const SdpTooLarge& e) {
    CHECK(e.estimated_bytes() > 1000);
    CHECK(std::string(e.what()).find("working memory") != std::string::npos);
  }
  SdpOptions generous;
  generous.memory_limit_bytes = 1ull << 30;
  CHECK(solve_sdp(k.problem, generous).status == SdpStatus::optimal);

  // A block of order 1e9 (a corrupt file) is refused before any block value is allocated.
  SdpProblem huge;
  huge.blocks = {{1000000000, false}};
  huge.b = Eigen::VectorXd::Ones(1);
  huge.A.resize(1);
  huge.A[0].add(0, 0, 0, 1.0);
  CHECK_THROWS_AS(solve_sdp(huge, generous), SdpTooLarge);
}

// Residuals of (X, y, Z) recomputed from the problem, independently of the solver's bookkeeping.
static double primal_residual(const SdpProblem& p, const SdpResult& r) {
  Eigen::VectorXd ax(p.num_constraints());
  for (int i = 0; i < p.num_constraints(); ++i) ax(i) = p.inner(p.A[static_cast<std::size_t>(i)], r.X);
  return (p.b - ax).norm() / (1.0 + p.b.norm());
}
static double dual_residual(const SdpProblem& p, const SdpResult& r) {
  BlockValues R = p.zeros();
  p.accumulate(p.C, 1.0, R);
  for (int i = 0; i < p.num_constraints(); ++i) p.accumulate(p.A[static_cast<std::size_t>(i)], -r.y(i), R);
  double sq = 0.0;
  for (std::size_t k = 0; k < R.size(); ++k) sq += (R[k] - r.Z[k]).squaredNorm();
  return std::sqrt(sq) / (1.0 + p.C.frobenius_norm());
}

// Asked for an accuracy rounding does not allow (1e-14) on the degenerate GM relaxation, the solver
// wanders near the optimum until it stops; it returns its best iterate (not the last), near_optimal with
// the accuracy that iterate achieved, and the residuals it reports are those of the X, y, Z it returns.
TEST_CASE("best iterate: an unreachable tolerance ends near_optimal at the best iterate") {
  const SdpProblem p = read_sdpa(core::test::source_dir() / "tests/certify/data/gm_n30_seed0.dat-s");
  SdpOptions opts;
  opts.tol = 1e-14;
  opts.stall_iterations = 8;
  const SdpResult res = solve_sdp(p, opts);
  REQUIRE(res.status == SdpStatus::near_optimal);
  CHECK(res.achieved_accuracy < 1e-8);
  CHECK(res.achieved_accuracy == std::max({res.primal_residual, res.dual_residual, res.relative_gap}));
  CHECK(res.best_iteration < res.iterations);
  CHECK(res.primal_residual == doctest::Approx(primal_residual(p, res)).epsilon(1e-3).scale(1e-12));
  CHECK(res.dual_residual == doctest::Approx(dual_residual(p, res)).epsilon(1e-3).scale(1e-12));
  CHECK(res.primal_objective == doctest::Approx(2.977138703891e-02).epsilon(1e-7));
  CHECK(std::string(to_string(res.status)) == "near_optimal");
}

// The iteration limit returns the best iterate too, with its accuracy; a limit that leaves it within
// near_tol is near_optimal, an earlier one iteration_limit.
TEST_CASE("iteration limit: best iterate, near_optimal once near_tol is met") {
  const SdpProblem p = lovasz_theta(10, petersen());
  const SdpResult full = solve_sdp(p);
  REQUIRE(full.status == SdpStatus::optimal);
  SdpOptions opts;
  opts.max_iterations = full.iterations - 1;
  opts.near_tol = 1e-3;
  const SdpResult cut = solve_sdp(p, opts);
  CHECK(cut.status == SdpStatus::near_optimal);
  CHECK(cut.iterations == full.iterations - 1);
  CHECK(cut.achieved_accuracy < 1e-3);
  CHECK(cut.achieved_accuracy >= 1e-8);
  CHECK(-cut.primal_objective == doctest::Approx(4.0).epsilon(1e-3));
  CHECK(cut.primal_residual == doctest::Approx(primal_residual(p, cut)).epsilon(1e-3).scale(1e-12));
  opts.max_iterations = 3;
  const SdpResult early = solve_sdp(p, opts);
  CHECK(early.status == SdpStatus::iteration_limit);
  CHECK(early.achieved_accuracy >= 1e-3);
}

TEST_CASE("near_tol and stall_iterations are validated") {
  const SdpProblem p = lovasz_theta(5, cycle(5));
  SdpOptions bad;
  bad.near_tol = 1e-10;  // below tol
  CHECK_THROWS_WITH_AS(solve_sdp(p, bad), doctest::Contains("near_tol"), core::UsageError);
  bad = {};
  bad.stall_iterations = 1;
  CHECK_THROWS_WITH_AS(solve_sdp(p, bad), doctest::Contains("stall_iterations"), core::UsageError);
}

// Two threads share the columns of the dense Schur complement (a 40 x 40 block with 120 constraints:
// 120 x (entries + 1600) is above the solver's threshold for sharing); every entry is computed by the
// same code, so the whole solve is bitwise the serial one. A diagonal block with many constraints too.
TEST_CASE("threaded Schur complement assembly equals the serial one") {
  const KnownSdp k = random_known_sdp(40, 3, 300, 120, 9);
  SdpOptions serial;
  serial.schur = SchurMode::dense;
  SdpOptions threaded = serial;
  threaded.threads = 2;
  const SdpResult a = solve_sdp(k.problem, serial), b = solve_sdp(k.problem, threaded);
  REQUIRE(a.status == SdpStatus::optimal);
  CHECK(a.primal_objective == doctest::Approx(k.optimum).epsilon(1e-7));
  CHECK(b.status == a.status);
  CHECK(b.iterations == a.iterations);
  CHECK(b.primal_objective == a.primal_objective);
  CHECK(b.dual_objective == a.dual_objective);
  CHECK(b.y == a.y);
  CHECK(b.X[0] == a.X[0]);
  CHECK(b.X[1] == a.X[1]);
  SdpOptions bad;
  bad.threads = 0;
  CHECK_THROWS_WITH_AS(solve_sdp(k.problem, bad), doctest::Contains("threads"), core::UsageError);
}

// The products X A^T(y) Z^-1 of the Newton direction formed from the constraint entries (max-cut: diagonal
// entries; theta: the trace and the edges) give the direction of the dense products up to rounding: the same
// iterations and the same solution to 1e-9, at the closed-form optimum of odd cycles (n = 65: the Lanczos
// step lengths of blocks of order >= 64). max-cut of C_n: n (1 + cos(pi / n)) / 2; theta(C_n) = n cos(pi / n)
// / (1 + cos(pi / n)).
TEST_CASE("sparse constraint products: the dense products' solution on max-cut and theta") {
  const int n = 65;
  const double c = std::cos(M_PI / n);
  struct Case {
    const char* name;
    SdpProblem p;
    double optimum;
  };
  std::vector<Edge> chords = cycle(n);
  for (int i = 0; i < n; i += 3) chords.push_back({i, (i + 7) % n});
  const Case cases[] = {
      {"max-cut of C_65", max_cut(n, cycle(n)), -n * (1.0 + c) / 2.0},
      {"theta of C_65", lovasz_theta(n, cycle(n)), -n * c / (1.0 + c)},
      {"max-cut of C_65 with chords", max_cut(n, chords), 0.0},
  };
  SdpOptions dense;
  dense.sparse_products = false;
  for (const auto& k : cases) {
    CAPTURE(k.name);
    const SdpResult a = solve_sdp(k.p), b = solve_sdp(k.p, dense);
    REQUIRE(a.status == SdpStatus::optimal);
    REQUIRE(b.status == SdpStatus::optimal);
    if (k.optimum != 0.0) CHECK(a.primal_objective == doctest::Approx(k.optimum).epsilon(1e-7));
    CHECK(a.iterations == b.iterations);
    CHECK(std::abs(a.primal_objective - b.primal_objective) < 1e-9 * std::abs(b.primal_objective));
    CHECK(std::abs(a.dual_objective - b.dual_objective) < 1e-9 * std::abs(b.dual_objective));
    CHECK((a.X[0] - b.X[0]).norm() < 1e-9 * b.X[0].norm());
    CHECK((a.y - b.y).norm() < 1e-9 * b.y.norm());
  }
}

// A block of order >= 512 (Z^-1 through dpotri) on max-cut of an odd cycle: the closed-form optimum, and the
// dense products' route gives the same iterations and solution (the first route drops R_d's products once the
// dual residual is at rounding level, the dense route keeps it in X dZ Z^-1).
TEST_CASE("max-cut of C_513: a block of order >= 512 reaches the closed form") {
  const int n = 513;
  const SdpProblem p = max_cut(n, cycle(n));
  SdpOptions dense;
  dense.sparse_products = false;
  const SdpResult a = solve_sdp(p), b = solve_sdp(p, dense);
  REQUIRE(a.status == SdpStatus::optimal);
  REQUIRE(b.status == SdpStatus::optimal);
  const double optimum = -n * (1.0 + std::cos(M_PI / n)) / 2.0;
  CHECK(a.primal_objective == doctest::Approx(optimum).epsilon(1e-7));
  CHECK(a.dual_objective == doctest::Approx(optimum).epsilon(1e-7));
  CHECK(a.iterations == b.iterations);
  CHECK(std::abs(a.primal_objective - b.primal_objective) < 1e-9 * std::abs(b.primal_objective));
  CHECK((a.y - b.y).norm() < 1e-8 * b.y.norm());
}

// The batched Schur gather: each lane of a kGatherWidth-wide run gives bitwise the one-column sum (the
// degenerate problems of SDPLIB and the equipartition test below end differently on a last-bit change of M),
// and a wrong width is refused.
TEST_CASE("Schur gather: a run of columns sums bitwise as one column at a time") {
  const int n = 9;
  core::Rng rng(5);
  BlockTerms t;
  for (int a = 0; a < 6; ++a) {
    t.constraint.push_back(a);
    for (int q = 0; q < n; ++q)
      for (int p = 0; p <= q; ++p)
        if (rng.uniform() < 0.5) t.upper.push_back({p, q, rng.uniform(-3.0, 3.0)});
    t.upper_start.push_back(static_cast<int>(t.upper.size()));
  }
  std::vector<double> wide(static_cast<std::size_t>(n) * n * kGatherWidth);
  for (double& v : wide) v = rng.uniform(-1.0, 1.0) * std::exp(rng.uniform(-20.0, 20.0));
  for (int a = 0; a < t.size(); ++a) {
    double sums[kGatherWidth];
    gather_upper(t, a, n, wide.data(), kGatherWidth, sums);
    for (int b = 0; b < kGatherWidth; ++b) {
      std::vector<double> one(static_cast<std::size_t>(n) * n);
      double expected = 0.0;
      for (std::size_t i = 0; i < one.size(); ++i) one[i] = wide[i * kGatherWidth + b];
      for (const BlockEntry* e = t.upper_begin(a); e != t.upper_end(a); ++e) {
        const double product = e->v * one[static_cast<std::size_t>(e->p + e->q * n)];
        expected = expected + product;
      }
      double single = 0.0;
      gather_upper(t, a, n, one.data(), 1, &single);
      CAPTURE(a);
      CAPTURE(b);
      CHECK(sums[b] == single);
      CHECK(std::abs(sums[b] - expected) <= 1e-12 * std::abs(expected));
    }
  }
  double out[kGatherWidth];
  CHECK_THROWS_AS(gather_upper(t, 0, n, wide.data(), 3, out), std::logic_error);
}

// StartPoint::automatic starts from the original data and, when that attempt stops short of near_tol
// (here: an iteration limit of 3), runs a second attempt from the scaled start and returns the better
// of the two returned iterates, with the iterations of both counted.
TEST_CASE("automatic start: a second attempt from the scaled start, the better iterate returned") {
  const SdpProblem p = lovasz_theta(10, petersen());
  SdpOptions opts;
  opts.max_iterations = 3;
  opts.start = StartPoint::unscaled;
  const SdpResult unscaled = solve_sdp(p, opts);
  opts.start = StartPoint::scaled;
  const SdpResult scaled = solve_sdp(p, opts);
  REQUIRE(unscaled.status == SdpStatus::iteration_limit);
  REQUIRE(scaled.status == SdpStatus::iteration_limit);
  REQUIRE(unscaled.achieved_accuracy != scaled.achieved_accuracy);  // the two starts differ
  opts.start = StartPoint::automatic;
  const SdpResult both = solve_sdp(p, opts);
  const SdpResult& better = unscaled.achieved_accuracy < scaled.achieved_accuracy ? unscaled : scaled;
  CHECK(both.iterations == unscaled.iterations + scaled.iterations);
  CHECK(both.achieved_accuracy == better.achieved_accuracy);
  CHECK(both.start == better.start);
  CHECK(both.primal_objective == better.primal_objective);
  CHECK(both.y == better.y);
  CHECK(both.best_iteration == (&better == &unscaled ? better.best_iteration : unscaled.iterations + better.best_iteration));
  // Without the limit the unscaled attempt is optimal and no second one runs.
  const SdpResult full = solve_sdp(p, SdpOptions{.start = StartPoint::automatic});
  CHECK(full.status == SdpStatus::optimal);
  CHECK(full.start == "unscaled");
  CHECK(-full.primal_objective == doctest::Approx(4.0).epsilon(1e-7));
}

// Graph equipartition (SDPLIB's gpp form): min <L, X> s.t. X_ii = 1, <J, X> = 0, X >= 0, on 12 vertices with
// edges i < j where i + j = 0 mod 4 (weights 1 + (i + j) mod 3). Its components {0,4,8}, {2,6,10} and
// the odd vertices split 6:6 with no edge cut, so the optimum is 0; <J, X> = 0 leaves no strictly
// feasible X and the optimal face is not a point. The solver used to stall here at accuracy 9.7e-6
// (36 iterations): a second refinement pass that could not halve A(dX) - r_p added rounding to dX.
TEST_CASE("degenerate equipartition SDP: converges where a second refinement pass stalled it") {
  const int n = 12;
  SdpProblem p;
  p.blocks = {{n, false}};
  Eigen::VectorXd degree = Eigen::VectorXd::Zero(n);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j)
      if ((i + j) % 4 == 0) {
        const double w = 1.0 + (i + j) % 3;
        p.C.add(0, i, j, -w);
        degree(i) += w;
        degree(j) += w;
      }
  for (int i = 0; i < n; ++i) p.C.add(0, i, i, degree(i));
  SdpMatrix all_ones;
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j) all_ones.add(0, i, j, 1.0);
  p.A.push_back(all_ones);
  for (int i = 0; i < n; ++i) {
    SdpMatrix diagonal;
    diagonal.add(0, i, i, 1.0);
    p.A.push_back(diagonal);
  }
  p.b = Eigen::VectorXd::Ones(n + 1);
  p.b(0) = 0.0;
  const SdpResult r = solve_sdp(p);
  CHECK((r.status == SdpStatus::optimal || r.status == SdpStatus::near_optimal));
  CHECK(r.achieved_accuracy < 1e-6);
  CHECK(std::abs(r.primal_objective) < 1e-5);
  CHECK(std::abs(r.dual_objective) < 1e-5);
}

// The dense Schur complement's Cholesky (dense_linalg.hpp: OpenBLAS's dpotrf/dpotrs from the caller's
// lapack_min_order when the build found it, Eigen's LLT below it and without it) equals Eigen's LLT to
// rounding on both sides of the threshold, leaves the upper triangle alone and reports an indefinite matrix.
TEST_CASE("dense Cholesky and inverse: the LAPACK path equals Eigen's to rounding") {
  const Eigen::Index n = 200;
  for (const Eigen::Index min_order : {n + 1, n}) {  // Eigen, then LAPACK when available
    CAPTURE(min_order);
    std::srand(7);
    const Eigen::MatrixXd G = Eigen::MatrixXd::Random(n, n);
    const Eigen::MatrixXd M = G * G.transpose() + 0.1 * Eigen::MatrixXd::Identity(n, n);
    Eigen::MatrixXd F = M;
    REQUIRE(dense::cholesky_lower(F, min_order));
    const Eigen::LLT<Eigen::MatrixXd> reference(M);
    const Eigen::MatrixXd L = F.triangularView<Eigen::Lower>();
    const Eigen::MatrixXd L_ref = reference.matrixL();
    if (min_order > n) CHECK(L == L_ref);  // Eigen's in-place factor is Eigen's LLT, bit for bit
    CHECK((L - L_ref).norm() <= 1e-11 * L_ref.norm());
    CHECK(F.triangularView<Eigen::StrictlyUpper>().toDenseMatrix() == M.triangularView<Eigen::StrictlyUpper>().toDenseMatrix());
    const Eigen::VectorXd r = Eigen::VectorXd::LinSpaced(n, -1.0, 2.0);
    Eigen::VectorXd x = r;
    dense::cholesky_solve(F, x, min_order);
    const Eigen::VectorXd x_ref = reference.solve(r);
    CHECK((x - x_ref).norm() <= 1e-9 * x_ref.norm());
    CHECK((M * x - r).norm() <= 1e-9 * r.norm());
    Eigen::MatrixXd indefinite = M;
    indefinite(n / 2, n / 2) = -1.0;
    CHECK_FALSE(dense::cholesky_lower(indefinite, min_order));
    // The inverse from the factor (the solver's Z^-1): Eigen's solve against the identity bit for bit below
    // min_order, dpotri's exactly symmetric inverse from it; both M^-1 to rounding.
    Eigen::MatrixXd inverse;
    dense::cholesky_inverse(reference, inverse, min_order);
    const Eigen::MatrixXd inverse_ref = reference.solve(Eigen::MatrixXd::Identity(n, n));
    if (min_order > n) CHECK(inverse == inverse_ref);
#ifdef TOOLKIT_EXPECT_OPENBLAS
    if (min_order <= n) CHECK(inverse == inverse.transpose());
#endif
    CHECK((inverse - inverse_ref).norm() <= 1e-10 * inverse_ref.norm());
    CHECK((M * inverse - Eigen::MatrixXd::Identity(n, n)).norm() <= 1e-9);
  }
  // This build was configured with OpenBLAS (libopenblas-dev, scripts/setup.sh): the LAPACK branch ran.
#ifdef TOOLKIT_EXPECT_OPENBLAS
  CHECK(dense::lapack_available());
#endif
}

// The solver with the LAPACK threshold below the Schur order reaches the Eigen path's optimum, and a
// threshold below 1 is refused.
TEST_CASE("lapack_min_order: the OpenBLAS Schur factor reaches the same optimum") {
  const SdpProblem p = lovasz_theta(10, petersen());
  SdpOptions opts;
  const SdpResult eigen = solve_sdp(p, opts);
  opts.lapack_min_order = 1;
  const SdpResult lapack = solve_sdp(p, opts);
  REQUIRE(eigen.status == SdpStatus::optimal);
  CHECK(lapack.status == SdpStatus::optimal);
  CHECK(lapack.primal_objective == doctest::Approx(eigen.primal_objective).epsilon(1e-7));
  opts.lapack_min_order = 0;
  CHECK_THROWS_WITH_AS(solve_sdp(p, opts), "sdp.lapack_min_order must be >= 1, got 0", core::UsageError);
}
