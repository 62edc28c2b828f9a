// GM certificate with the free chain multipliers chosen by the small SDP (gm_certificate.hpp):
// the free directions span exactly the null space of the stationarity system (checked against the
// generic QCQP's columns A_k x^), the certificate accepts the global optimum where the chain
// relaxation is tight, and rejects the worst line, planted local minima and the optimum of an
// instance whose chain relaxation is not tight. The chordal ADMM (gm_chordal.hpp) gives the same
// decision on every instance.
#include <doctest/doctest.h>

#include <Eigen/SVD>

#include <cmath>

#include "certify/relaxation.hpp"
#include "linefit/gm.hpp"
#include "linefit/fit_job.hpp"
#include "linefit/gm_certificate.hpp"
#include "linefit/gm_chordal.hpp"
#include "linefit/gm_qcqp.hpp"
#include "linefit/synthetic.hpp"
#include "line_data.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::linefit;
using fixtures::line_data;

namespace {

// Columns A_k x of the stationarity system of the generic chain QCQP (independent of gm_append_constraint).
Eigen::MatrixXd stationarity_columns(const certify::Qcqp& q, const Eigen::VectorXd& x) {
  Eigen::MatrixXd G(q.dim(), q.num_multipliers());
  G.col(0) = q.A0.apply(x);
  for (int k = 1; k < q.num_multipliers(); ++k) G.col(k) = q.constraints[k - 1].A.apply(x);
  return G;
}
}  // namespace

TEST_CASE("free multiplier directions span the null space of the stationarity system") {
  const Points p = line_data(12, 0.2, 0.05, 3);
  const double sigma = 0.5;
  const Line line = irls_gm(p, sigma).line;
  const Eigen::VectorXd x = gm_lift(p, line, sigma);
  const Eigen::MatrixXd G = stationarity_columns(gm_qcqp(p, sigma, false), x);
  const Eigen::MatrixXd D = Eigen::MatrixXd(gm_free_directions(x));
  REQUIRE(D.rows() == G.cols());
  CHECK(D.cols() == 2 * (12 - 1));
  CHECK((G * D).cwiseAbs().maxCoeff() < 1e-14);
  const Eigen::JacobiSVD<Eigen::MatrixXd> sd(D), sg(G);
  const Eigen::VectorXd dv = sd.singularValues(), gv = sg.singularValues();
  CHECK(dv(dv.size() - 1) > 1e-3 * dv(0));  // independent columns
  int rank_g = 0;
  for (int k = 0; k < gv.size(); ++k) rank_g += gv(k) > 1e-10 * gv(0);
  CHECK(G.cols() - rank_g == D.cols());  // and as many as the null space has
}

TEST_CASE("stationary_sdp and chordal certify the global optimum where the chain relaxation is tight") {
  int certified = 0, chordal = 0, closed_form = 0;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    for (int n : {10, 20}) {
      CAPTURE(seed);
      CAPTURE(n);
      const Points p = line_data(n, 0.0, 0.05, seed);
      const double sigma = 1.0;
      const auto relax = certify::solve_relaxation(gm_qcqp(p, sigma, false));
      REQUIRE(relax.tight);
      const IrlsResult best = irls_gm(p, sigma);
      CHECK(best.cost == doctest::Approx(exhaustive_search(p, Loss::geman_mcclure, sigma).cost).epsilon(1e-9));
      const GmCertificate g = certify_gm_stationary_sdp(p, best.line, sigma);
      CHECK(g.sdp.status == certify::SdpStatus::optimal);
      CHECK(g.sdp.t > 0.0);
      CHECK(g.certificate.certified);
      CHECK(g.certificate.multipliers.residual < 1e-8);
      CHECK(std::abs(g.certificate.gap) < 1e-7);
      CHECK(g.certificate.lambda_min->lambda_min > -1e-8);
      certified += g.certificate.certified;
      const GmChordalCertificate h = certify_gm_chordal(p, best.line, sigma);
      CHECK(h.admm.proven);
      CHECK(h.certificate.certified);
      CHECK(h.certificate.multipliers.method == "chordal");
      CHECK(h.certificate.multipliers.residual < 1e-8);
      CHECK(std::abs(h.certificate.gap) < 1e-7);
      chordal += h.certificate.certified;
      closed_form += certify_gm_closed_form(p, best.line, sigma).certified;
    }
  }
  CHECK(chordal == certified);
  MESSAGE(certified << "/6 certified by stationary_sdp, " << chordal << "/6 by chordal, " << closed_form << "/6 by the closed-form multipliers alone");
}

TEST_CASE("stationary_sdp and chordal reject the worst line and planted local minima") {
  const Points p = line_data(10, 0.0, 0.05, 2);
  const double sigma = 1.0;
  const IrlsResult best = irls_gm(p, sigma);
  const Line worst = normalise_line(-best.line.b, best.line.a, 0.0);
  const GmCertificate bad = certify_gm_stationary_sdp(p, worst, sigma);
  CHECK(!bad.certificate.certified);
  CHECK(!certify_gm_chordal(p, worst, sigma).certificate.certified);
  const Points hard = line_data(16, 0.4, 0.02, 5);
  const double s = 0.1, global = exhaustive_search(hard, Loss::geman_mcclure, s).cost;
  int planted = 0;
  for (int k = 0; k < 8; ++k) {
    IrlsOptions one;
    one.init_angle = M_PI * k / 8;
    const IrlsResult local = irls_gm(hard, s, one);
    if (local.cost <= global * (1 + 1e-6)) continue;
    ++planted;
    const GmCertificate c = certify_gm_stationary_sdp(hard, local.line, s);
    CHECK(!c.certificate.certified);
    CHECK(c.sdp.t < 0.0);
    const GmChordalCertificate h = certify_gm_chordal(hard, local.line, s);
    CHECK(!h.certificate.certified);
    CHECK(!h.admm.proven);
  }
  CHECK(planted > 0);
  MESSAGE(planted << " local minima rejected");
}

TEST_CASE("stationary_sdp and chordal do not certify the optimum when the chain relaxation is not tight") {
  const Points p = line_data(10, 0.3, 0.05, 1);
  const double sigma = 1.0;
  const auto relax = certify::solve_relaxation(gm_qcqp(p, sigma, false));
  REQUIRE(relax.sdp.status == certify::SdpStatus::optimal);
  REQUIRE(!relax.tight);
  const IrlsResult best = irls_gm(p, sigma);
  REQUIRE(best.cost == doctest::Approx(exhaustive_search(p, Loss::geman_mcclure, sigma).cost).epsilon(1e-9));
  const GmCertificate g = certify_gm_stationary_sdp(p, best.line, sigma);
  CHECK(!g.certificate.certified);
  CHECK(!g.certificate.factorization_psd);
  CHECK(g.sdp.t < 0.0);
  const GmChordalCertificate h = certify_gm_chordal(p, best.line, sigma);
  CHECK(!h.certificate.certified);
  CHECK(!h.admm.proven);
  // weak duality: no chain multipliers give a dual value above the relaxation's
  CHECK(relax.sdp_value < best.cost - 1e-6);
}

TEST_CASE("multipliers=auto: the SDP choice on small sets, the O(N) closed form on large ones") {
  CHECK(resolve_multipliers("auto", 10) == "stationary_sdp");
  CHECK(resolve_multipliers("auto", kAutoStationarySdpMaxPoints) == "stationary_sdp");
  CHECK(resolve_multipliers("auto", kAutoStationarySdpMaxPoints + 1) == "closed_form");
  CHECK(resolve_multipliers("sdp", 10) == "sdp");
  // A bare gm fit on clean data certifies its optimum with the default choice.
  FitOptions o;
  o.mode = "gm";
  o.solver = "irls";
  o.synthetic.n = 20;
  const FitResult r = run_fit(o);
  CHECK(r.multipliers == "stationary_sdp");
  CHECK(r.certificate.certified);
}
