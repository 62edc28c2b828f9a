// GM certificate with the free multipliers chosen by an SDP (gm_certificate.hpp): the free directions
// span exactly the null space of the stationarity system (checked against the generic QCQP's columns
// A_k x^, on a chain, a band with cycles and all pairs); the dense SDP (stationary_sdp), its chordal
// conversion (sparse_sdp) and the ADMM (chordal) find the same optimum and the same decision; they
// accept the global optimum where the relaxation on the graph is tight and never certify a line that
// the exhaustive search beats (a sweep of small instances, planted local minima, the worst line).
#include <doctest/doctest.h>

#include <Eigen/SVD>

#include <cmath>

#include "certify/relaxation.hpp"
#include "linefit/fit_job.hpp"
#include "linefit/gm.hpp"
#include "linefit/gm_certificate.hpp"
#include "linefit/gm_chordal.hpp"
#include "linefit/gm_graph.hpp"
#include "linefit/gm_qcqp.hpp"
#include "line_data.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::linefit;
using fixtures::line_data;

namespace {

// Columns A_k x of the stationarity system of the generic QCQP (independent of gm_append_constraint).
Eigen::MatrixXd stationarity_columns(const certify::Qcqp& q, const Eigen::VectorXd& x) {
  Eigen::MatrixXd G(q.dim(), q.num_multipliers());
  G.col(0) = q.A0.apply(x);
  for (int k = 1; k < q.num_multipliers(); ++k) G.col(k) = q.constraints[k - 1].A.apply(x);
  return G;
}

// Local minima of single-start IRLS that the exhaustive search beats (planted non-optimal lines).
std::vector<Line> local_minima(const Points& p, double sigma, int starts) {
  const double global = exhaustive_search(p, Loss::geman_mcclure, sigma).cost;
  std::vector<Line> out;
  for (int k = 0; k < starts; ++k) {
    IrlsOptions one;
    one.init_angle = M_PI * k / starts;
    const IrlsResult local = irls_gm(p, sigma, one);
    if (local.cost > global * (1 + 1e-6) + 1e-12) out.push_back(local.line);
  }
  return out;
}

}  // namespace

TEST_CASE("free multiplier directions span the null space of the stationarity system") {
  const Points p = line_data(12, 0.2, 0.05, 3);
  const double sigma = 0.5;
  const Line line = irls_gm(p, sigma).line;
  const Eigen::VectorXd x = gm_lift(p, line, sigma);
  for (const GmGraph& g : {gm_chain_graph(12), gm_balanced_graph(p, line, sigma, 3), gm_all_pairs_graph(12)}) {
    CAPTURE(g.name);
    const Eigen::MatrixXd G = stationarity_columns(gm_qcqp(p, sigma, g), x);
    const Eigen::MatrixXd D = Eigen::MatrixXd(gm_free_directions(x, g));
    const int E = static_cast<int>(g.edges.size());
    REQUIRE(D.rows() == G.cols());
    CHECK(D.cols() == 3 * E - 12 + 1);
    CHECK((G * D).cwiseAbs().maxCoeff() < 1e-13);
    const Eigen::JacobiSVD<Eigen::MatrixXd> sd(D), sg(G);
    const Eigen::VectorXd dv = sd.singularValues(), gv = sg.singularValues();
    CHECK(dv(dv.size() - 1) > 1e-3 * dv(0));  // independent columns
    int rank_g = 0;
    for (int k = 0; k < gv.size(); ++k) rank_g += gv(k) > 1e-10 * gv(0);
    CHECK(G.cols() - rank_g == D.cols());  // and as many as the null space has
  }
}

TEST_CASE("stationary_sdp, sparse_sdp and chordal certify the global optimum where the relaxation is tight") {
  int certified = 0, closed_form = 0;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    for (int n : {10, 20}) {
      CAPTURE(seed);
      CAPTURE(n);
      const Points p = line_data(n, 0.0, 0.05, seed);
      const double sigma = 1.0;
      const GmGraph g = gm_chain_graph(n);
      const auto relax = certify::solve_relaxation(gm_qcqp(p, sigma, g));
      REQUIRE(relax.tight);
      const IrlsResult best = irls_gm(p, sigma);
      CHECK(best.cost == doctest::Approx(exhaustive_search(p, Loss::geman_mcclure, sigma).cost).epsilon(1e-9));
      const GmCertificate dense = certify_gm_stationary_sdp(p, best.line, sigma, g);
      CHECK(dense.sdp.status == certify::SdpStatus::optimal);
      CHECK(dense.sdp.t > 0.0);
      CHECK(dense.certificate.certified);
      CHECK(dense.certificate.multipliers.residual < 1e-8);
      CHECK(std::abs(dense.certificate.gap) < 1e-7);
      CHECK(dense.certificate.lambda_min->lambda_min > -1e-8);
      certified += dense.certificate.certified;
      const GmCertificate sparse = certify_gm_sparse_sdp(p, best.line, sigma, g);
      CHECK(sparse.certificate.certified);
      CHECK(sparse.certificate.multipliers.method == "sparse_sdp");
      CHECK(sparse.sdp.t == doctest::Approx(dense.sdp.t).epsilon(1e-5));
      const GmChordalCertificate h = certify_gm_chordal(p, best.line, sigma, g);
      CHECK(h.admm.proven);
      CHECK(h.certificate.certified);
      CHECK(h.certificate.multipliers.residual < 1e-8);
      closed_form += certify_gm_closed_form(p, best.line, sigma, g).certified;
    }
  }
  CHECK(certified == 6);
  MESSAGE(certified << "/6 certified by the SDP multipliers, " << closed_form << "/6 by the closed-form multipliers alone");
}

TEST_CASE("the certificates reject the worst line and planted local minima") {
  const Points p = line_data(10, 0.0, 0.05, 2);
  const double sigma = 1.0;
  const IrlsResult best = irls_gm(p, sigma);
  const Line worst = normalise_line(-best.line.b, best.line.a, 0.0);
  const GmGraph g = gm_balanced_graph(p, worst, sigma, 2);
  CHECK(!certify_gm_stationary_sdp(p, worst, sigma, g).certificate.certified);
  CHECK(!certify_gm_sparse_sdp(p, worst, sigma, g).certificate.certified);
  CHECK(!certify_gm_chordal(p, worst, sigma, g).certificate.certified);
  const Points hard = line_data(16, 0.4, 0.02, 5);
  const double s = 0.1;
  const std::vector<Line> planted = local_minima(hard, s, 8);
  REQUIRE(!planted.empty());
  for (const Line& local : planted) {
    const GmGraph gl = gm_balanced_graph(hard, local, s, 2);
    const GmCertificate c = certify_gm_stationary_sdp(hard, local, s, gl);
    CHECK(!c.certificate.certified);
    CHECK(c.sdp.t < 0.0);
    const GmCertificate sp = certify_gm_sparse_sdp(hard, local, s, gl);
    CHECK(!sp.certificate.certified);
    CHECK(sp.sdp.t == doctest::Approx(c.sdp.t).epsilon(1e-4).scale(1e-3));
    const GmChordalCertificate h = certify_gm_chordal(hard, local, s, gl);
    CHECK(!h.certificate.certified);
    CHECK(!h.admm.proven);
  }
  MESSAGE(planted.size() << " local minima rejected");
}

TEST_CASE("no certificate when the relaxation on the graph is not tight") {
  const Points p = line_data(10, 0.3, 0.05, 1);
  const double sigma = 1.0;
  const GmGraph g = gm_chain_graph(10);
  const auto relax = certify::solve_relaxation(gm_qcqp(p, sigma, g));
  REQUIRE(relax.sdp.status == certify::SdpStatus::optimal);
  REQUIRE(!relax.tight);
  const IrlsResult best = irls_gm(p, sigma);
  REQUIRE(best.cost == doctest::Approx(exhaustive_search(p, Loss::geman_mcclure, sigma).cost).epsilon(1e-9));
  const GmCertificate dense = certify_gm_stationary_sdp(p, best.line, sigma, g);
  CHECK(!dense.certificate.certified);
  CHECK(!dense.certificate.factorization_psd);
  CHECK(dense.sdp.t < 0.0);
  CHECK(!certify_gm_sparse_sdp(p, best.line, sigma, g).certificate.certified);
  const GmChordalCertificate h = certify_gm_chordal(p, best.line, sigma, g);
  CHECK(!h.certificate.certified);
  CHECK(!h.admm.proven);
  // weak duality: no multipliers on this graph give a dual value above the relaxation's
  CHECK(relax.sdp_value < best.cost - 1e-6);
}

// Sweep of small instances (balanced blocks of 2): at the IRLS optimum and at planted local minima, sparse_sdp decides as
// stationary_sdp does, and every certified line is the exhaustive search's optimum.
TEST_CASE("sparse_sdp agrees with stationary_sdp and never certifies a beaten line") {
  certify::SdpOptions sign_only;  // sparse_sdp as tls-fit runs it: stopped once the sign of t* is known
  sign_only.target = 0.0;
  int cases = 0, certified = 0, rejected_local = 0;
  for (double outliers : {0.0, 0.3}) {
    for (double sigma : {0.2, 1.0}) {
      for (std::uint64_t seed = 0; seed < 3; ++seed) {
        const Points p = line_data(12, outliers, 0.05, seed);
        const double global = exhaustive_search(p, Loss::geman_mcclure, sigma).cost;
        std::vector<Line> lines = local_minima(p, sigma, 6);
        const std::size_t n_local = lines.size();
        lines.push_back(irls_gm(p, sigma).line);
        for (std::size_t l = 0; l < lines.size(); ++l) {
          CAPTURE(outliers);
          CAPTURE(sigma);
          CAPTURE(seed);
          CAPTURE(l);
          const GmGraph g = gm_balanced_graph(p, lines[l], sigma, 2);
          const GmCertificate dense = certify_gm_stationary_sdp(p, lines[l], sigma, g);
          const GmCertificate sparse = certify_gm_sparse_sdp(p, lines[l], sigma, g, {}, sign_only);
          CHECK(sparse.certificate.certified == dense.certificate.certified);
          CHECK((sparse.sdp.status == certify::SdpStatus::above_target) == (dense.sdp.t > 0));
          if (sparse.certificate.certified) CHECK(gm_cost(p, lines[l], sigma) <= global + 1e-9 * (1 + global));
          ++cases;
          certified += sparse.certificate.certified;
          rejected_local += l < n_local && !sparse.certificate.certified;
        }
      }
    }
  }
  CHECK(certified > 0);
  MESSAGE(cases << " lines, " << certified << " certified by both, " << rejected_local << " local minima rejected");
}

TEST_CASE("with outliers a tree is not enough: blocks on the balanced order certify, chains do not") {
  const Points p = line_data(40, 0.2, 0.05, 1);
  const double sigma = 1.0;
  const IrlsResult best = irls_gm(p, sigma);
  REQUIRE(best.cost == doctest::Approx(exhaustive_search(p, Loss::geman_mcclure, sigma).cost).epsilon(1e-9));
  certify::SdpOptions sign_only;
  sign_only.target = 0.0;
  for (const GmGraph& chain : {gm_chain_graph(40), gm_balanced_graph(p, best.line, sigma, 1)}) {
    CAPTURE(chain.name);
    const GmCertificate c = certify_gm_sparse_sdp(p, best.line, sigma, chain, {}, sign_only);
    CHECK(!c.certificate.certified);
    CHECK(c.sdp.status == certify::SdpStatus::below_target);
  }
  const GmCertificate band = certify_gm_sparse_sdp(p, best.line, sigma, gm_balanced_graph(p, best.line, sigma, 2), {}, sign_only);
  CHECK(band.certificate.certified);
  CHECK(band.sdp.status == certify::SdpStatus::above_target);
  CHECK(band.sdp.t > 0.0);
}

// The interior-point iteration count does not grow with N, for a certified optimum and for a
// rejected local minimum alike.
TEST_CASE("sparse_sdp: iteration count independent of N, acceptance and rejection alike") {
  for (int n : {100, 400}) {
    CAPTURE(n);
    const Points p = line_data(n, 0.0, 0.05, 4);
    const double sigma = 1.0;
    const Line best = irls_gm(p, sigma).line;
    certify::SdpOptions sign_only;
    sign_only.target = 0.0;
    const GmCertificate ok = certify_gm_sparse_sdp(p, best, sigma, gm_balanced_graph(p, best, sigma, 1), {}, sign_only);
    CHECK(ok.certificate.certified);
    CHECK(ok.sdp.status == certify::SdpStatus::above_target);
    CHECK(ok.sdp.iterations <= 25);
    const Line off = normalise_line(best.a, best.b, best.c + 2.0);  // not stationary: rejected
    const GmCertificate bad = certify_gm_sparse_sdp(p, off, sigma, gm_balanced_graph(p, off, sigma, 1), {}, sign_only);
    CHECK(!bad.certificate.certified);
    CHECK(bad.sdp.status == certify::SdpStatus::below_target);
    CHECK(bad.sdp.iterations <= 25);
  }
}

TEST_CASE("multipliers=auto: the sparse SDP on the balanced graph, block size escalated") {
  CHECK(resolve_multipliers("auto") == "sparse_sdp");
  CHECK(resolve_multipliers("sdp") == "sdp");
  // A bare gm fit on clean data certifies its optimum with the default choice.
  FitOptions o;
  o.mode = "gm";
  o.solver = "irls";
  o.synthetic.n = 20;
  const FitResult r = run_fit(o);
  CHECK(r.multipliers == "sparse_sdp");
  CHECK(r.graph.find("balanced chain") == 0);
  CHECK(r.certificate.certified);
  CHECK(r.graphs_tried.size() == 1);
  // With outliers the chain fails and blocks are tried next.
  o.synthetic.n = 40;
  o.synthetic.outliers = 0.2;
  o.synthetic.angle_deg = 52.0;
  o.seed = 1;
  const FitResult w = run_fit(o);
  REQUIRE(w.graphs_tried.size() >= 2);
  CHECK(w.graphs_tried[0]["certified"] == false);
  CHECK(w.certificate.certified == w.graphs_tried.back()["certified"].get<bool>());
}

// memory_gb: an SDP whose estimated working memory exceeds the limit is not built. The first graph
// too large is a usage error naming memory_gb; a larger block than the first is skipped (recorded
// in graphs_tried), and the result is the last graph actually tried.
TEST_CASE("memory_gb: the first graph over the limit is an error, a larger block is skipped") {
  FitOptions o;
  o.mode = "gm";
  o.solver = "irls";
  o.synthetic.n = 40;
  o.synthetic.outliers = 0.2;
  o.synthetic.angle_deg = 52.0;
  o.seed = 1;
  o.memory_gb = 1e-9;
  CHECK_THROWS_WITH_AS(run_fit(o), doctest::Contains("memory_gb"), core::UsageError);
  bool skipped = false;
  for (double gb = 1e-6; gb < 1e-1 && !skipped; gb *= 1.5) {
    o.memory_gb = gb;
    FitResult r;
    try {
      r = run_fit(o);
    } catch (const core::UsageError&) {
      continue;  // even the chain is over this limit
    }
    if (!r.graphs_tried.back().contains("skipped")) continue;
    skipped = true;
    CAPTURE(gb);
    REQUIRE(r.graphs_tried.size() >= 2);
    CHECK(!r.certificate.certified);
    CHECK(r.graph == r.graphs_tried[r.graphs_tried.size() - 2]["graph"].get<std::string>());
    CHECK(r.graphs_tried.back()["skipped"].get<std::string>().find("working memory") != std::string::npos);
  }
  CHECK(skipped);
}
