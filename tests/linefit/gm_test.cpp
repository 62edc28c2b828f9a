// Geman-McClure fitting: IRLS from many starts against the exhaustive search, the lifted QCQP
// against the direct cost, the SDP relaxation as a lower bound, and the certificate accepting the
// global optimum where the relaxation is tight and rejecting local minima and the worst line.
#include <doctest/doctest.h>

#include <cmath>

#include "certify/relaxation.hpp"
#include "common/rng.hpp"
#include "linefit/gm.hpp"
#include "linefit/gm_qcqp.hpp"
#include "linefit/synthetic.hpp"
#include "line_data.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::linefit;
using fixtures::line_data;

TEST_CASE("IRLS (multi-start) reaches the exhaustive-search optimum; no single start beats it") {
  for (std::uint64_t seed = 0; seed < 6; ++seed) {
    CAPTURE(seed);
    const Points p = line_data(60, 0.3, 0.05, seed);
    const double sigma = 0.2;
    const VerifyResult global = exhaustive_search(p, Loss::geman_mcclure, sigma);
    const IrlsResult best = irls_gm(p, sigma);
    CHECK(best.cost == doctest::Approx(global.cost).epsilon(1e-9));
    CHECK(best.cost == doctest::Approx(gm_cost(p, best.line, sigma)).epsilon(1e-14));
    for (int k = 0; k < 12; ++k) {
      IrlsOptions one;
      one.init_angle = M_PI * k / 12;
      CHECK(irls_gm(p, sigma, one).cost >= global.cost * (1.0 - 1e-9));
    }
  }
}

TEST_CASE("exhaustive search with the squared loss equals the closed-form TLS") {
  const Points p = line_data(80, 0.2, 0.1, 3);
  const Line tls = fit_tls(p);
  const VerifyResult v = exhaustive_search(p, Loss::squared, 1.0);
  CHECK(v.cost == doctest::Approx(mean_loss(p, tls, Loss::squared, 1.0)).epsilon(1e-10));
}

TEST_CASE("lifted QCQP: the lift is feasible and its cost is the GM cost") {
  const Points p = line_data(12, 0.25, 0.05, 1);
  for (const GmGraph& g : {gm_chain_graph(12), gm_all_pairs_graph(12), gm_balanced_graph(p, normalise_line(0.3, -1.0, 0.7), 0.3, 3)}) {
    CAPTURE(g.name);
    const certify::Qcqp q = gm_qcqp(p, 0.3, g);
    CHECK(q.dim() == 3 * 12 + 2);
    const Line line = normalise_line(0.3, -1.0, 0.7);
    const Eigen::VectorXd x = gm_lift(p, line, 0.3);
    CHECK(q.constraint_violation(x) < 1e-14);
    CHECK(q.cost(x) == doctest::Approx(gm_cost(p, line, 0.3)).epsilon(1e-12));
    const Line back = gm_line_from_lifted(x);
    CHECK(std::abs(back.c - line.c) < 1e-12);
  }
}

TEST_CASE("SDP relaxation: a lower bound, tight without outliers at large sigma") {
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    CAPTURE(seed);
    const Points noisy = line_data(10, 0.3, 0.05, seed);
    const double global = exhaustive_search(noisy, Loss::geman_mcclure, 0.2).cost;
    for (const GmGraph& g : {gm_chain_graph(10), gm_all_pairs_graph(10)}) {
      const auto r = certify::solve_relaxation(gm_qcqp(noisy, 0.2, g));
      CHECK(r.sdp_value <= global + 1e-8);
    }
    const Points clean = line_data(10, 0.0, 0.05, seed);
    const auto r = certify::solve_relaxation(gm_qcqp(clean, 1.0, gm_all_pairs_graph(10)));
    REQUIRE(r.sdp.status == certify::SdpStatus::optimal);
    CHECK(r.tight);
    const double g = exhaustive_search(clean, Loss::geman_mcclure, 1.0).cost;
    CHECK(r.sdp_value == doctest::Approx(g).epsilon(1e-6));
  }
}

TEST_CASE("certificate: accepts the global optimum (tight case), rejects the worst line and local minima") {
  const Points p = line_data(10, 0.0, 0.05, 2);
  const double sigma = 1.0;
  const certify::Qcqp q = gm_qcqp(p, sigma, gm_all_pairs_graph(10));
  const auto relax = certify::solve_relaxation(q);
  REQUIRE(relax.tight);
  const IrlsResult best = irls_gm(p, sigma);
  const auto good = certify::certify(q, gm_lift(p, best.line, sigma), {}, relax.sdp.y);
  CHECK(good.certified);
  CHECK(std::abs(good.gap) < 1e-7);
  const Line worst = normalise_line(-best.line.b, best.line.a, 0.0);
  const auto bad = certify::certify(q, gm_lift(p, worst, sigma));
  CHECK(!bad.certified);
  // Local minima from other starts (when a start ends worse than the global cost) are rejected
  // with every multiplier choice we offer.
  const Points hard = line_data(40, 0.4, 0.02, 5);
  const double s = 0.1, global = exhaustive_search(hard, Loss::geman_mcclure, s).cost;
  int planted = 0;
  for (int k = 0; k < 16; ++k) {
    IrlsOptions one;
    one.init_angle = M_PI * k / 16;
    const IrlsResult local = irls_gm(hard, s, one);
    if (local.cost <= global * (1 + 1e-6)) continue;
    ++planted;
    CHECK(!certify_gm(hard, local.line, s, gm_chain_graph(40)).certified);
  }
  MESSAGE(planted << " local minima found and rejected");
}

TEST_CASE("closed-form stationary multipliers solve H(lambda) x^ = 0 at the IRLS optimum") {
  for (int graph = 0; graph < 3; ++graph) {
    for (std::uint64_t seed = 0; seed < 4; ++seed) {
      CAPTURE(seed);
      const Points p = line_data(30, 0.2, 0.05, seed);
      const double sigma = 0.5;
      const IrlsResult best = irls_gm(p, sigma);
      const GmGraph g = graph == 0 ? gm_chain_graph(30) : graph == 1 ? gm_all_pairs_graph(30) : gm_balanced_graph(p, best.line, sigma, 3);
      CAPTURE(g.name);
      const certify::Qcqp q = gm_qcqp(p, sigma, g);
      const Eigen::VectorXd x = gm_lift(p, best.line, sigma);
      const Eigen::VectorXd lambda = gm_stationary_multipliers(p, best.line, sigma, g);
      REQUIRE(lambda.size() == q.num_multipliers());
      const auto fit = certify::given_multipliers(q, x, lambda);
      CHECK(fit.residual < 1e-7);
      // and not at a non-stationary line: the residual is then of the order of the gradient
      const Line off = normalise_line(best.line.a, best.line.b, best.line.c + 0.3);
      const auto bad = certify::given_multipliers(q, gm_lift(p, off, sigma),
                                                  gm_stationary_multipliers(p, off, sigma, g));
      CHECK(bad.residual > 1e-4);
    }
  }
}

TEST_CASE("directly assembled GM Lagrangian equals the generic QCQP's; closed-form certificate agrees") {
  const Points p = line_data(15, 0.2, 0.05, 2);
  const double sigma = 0.5;
  const IrlsResult best = irls_gm(p, sigma);
  const GmGraph g = gm_balanced_graph(p, best.line, sigma, 2);
  const certify::Qcqp q = gm_qcqp(p, sigma, g);
  Rng rng(7);
  Eigen::VectorXd lambda(q.num_multipliers());
  for (int i = 0; i < lambda.size(); ++i) lambda(i) = rng.uniform(-1.0, 1.0);
  const Eigen::MatrixXd direct = Eigen::MatrixXd(gm_lagrangian(p, sigma, g, lambda));
  CHECK((direct - Eigen::MatrixXd(q.lagrangian(lambda))).cwiseAbs().maxCoeff() < 1e-14);
  const auto fast = certify_gm_closed_form(p, best.line, sigma, g);
  const auto generic = certify::certify(q, gm_lift(p, best.line, sigma), {},
                                        gm_stationary_multipliers(p, best.line, sigma, g));
  CHECK(fast.certified == generic.certified);
  CHECK(fast.factorization_psd == generic.factorization_psd);
  CHECK(fast.cost == doctest::Approx(gm_cost(p, best.line, sigma)).epsilon(1e-12));
  CHECK(fast.dual_value == doctest::Approx(generic.dual_value).epsilon(1e-12));
  CHECK(fast.multipliers.residual == doctest::Approx(generic.multipliers.residual).epsilon(1e-3));
  CHECK(fast.lambda_min->lambda_min == doctest::Approx(generic.lambda_min->lambda_min).epsilon(1e-6));
}
