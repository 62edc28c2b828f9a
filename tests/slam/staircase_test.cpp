// The relaxation's derivatives against finite differences, the certificate on noise-free optima and
// planted local minima, the staircase's saddle escape, and candidate certification.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <Eigen/SVD>

#include <cmath>

#include "common/rng.hpp"
#include "slam/data_matrix.hpp"
#include "slam/simulate.hpp"
#include "slam/staircase.hpp"
#include "slam/stiefel.hpp"

using namespace core;
using namespace core::slam;

namespace {

double inner(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B) { return (A.array() * B.array()).sum(); }

WorldOptions landmark_world(int d, double noise_scale) {
  WorldOptions o;
  o.dimension = d;
  o.poses = 20;
  o.landmarks = 10;
  o.loop_closures = 3;
  o.noise_scale = noise_scale;
  o.seed = 11;
  return o;
}

// A pose graph with loop closures: random starts at rank d end in local minima.
WorldOptions loopy_pose_graph() {
  WorldOptions o;
  o.poses = 30;
  o.landmarks = 0;
  o.loop_closures = 10;
  o.rotation_sigma = 0.1;
  o.seed = 1;
  return o;
}

Eigen::MatrixXd random_tangent(const Eigen::MatrixXd& X, int d, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd Z(X.rows(), X.cols());
  for (int k = 0; k < Z.size(); ++k) Z.data()[k] = rng.normal();
  Eigen::MatrixXd V = stiefel::project(X, Z, d);
  return V / V.norm();
}

}  // namespace

TEST_CASE("Stiefel kernels (fixed-size d x d blocks) against per-pose dense formulas") {
  for (int d : {2, 3}) {
    CAPTURE(d);
    const int n = 7, r = d + 2;
    const Eigen::MatrixXd X = stiefel::random_point(n, d, r, 21);
    Rng rng(4);
    Eigen::MatrixXd Z(d * n, r), W(d * n, r);
    for (int k = 0; k < Z.size(); ++k) Z.data()[k] = rng.normal(), W.data()[k] = rng.normal();
    const Eigen::MatrixXd Ret = stiefel::retract(X, Z, d), P = stiefel::project(X, Z, d);
    const Eigen::MatrixXd S = stiefel::sym_block_diag(Z, W, d), SW = stiefel::block_multiply(S, W);
    for (int i = 0; i < n; ++i) {
      const Eigen::MatrixXd Xi = X.middleRows(d * i, d), Zi = Z.middleRows(d * i, d), Wi = W.middleRows(d * i, d);
      // Polar factor of X_i + Z_i by the SVD: U V^T.
      Eigen::JacobiSVD<Eigen::MatrixXd> svd(Xi + Zi, Eigen::ComputeThinU | Eigen::ComputeThinV);
      CHECK((Ret.middleRows(d * i, d) - svd.matrixU() * svd.matrixV().transpose()).norm() < 1e-12);
      const Eigen::MatrixXd sym = 0.5 * (Zi * Xi.transpose() + Xi * Zi.transpose());
      CHECK((P.middleRows(d * i, d) - (Zi - sym * Xi)).norm() < 1e-12);
      const Eigen::MatrixXd Pi = P.middleRows(d * i, d) * Xi.transpose();
      CHECK((Pi + Pi.transpose()).norm() < 1e-12);  // tangent: sym(V_i X_i^T) = 0
      const Eigen::MatrixXd Si = 0.5 * (Zi * Wi.transpose() + Wi * Zi.transpose());
      CHECK((S.middleCols(d * i, d) - Si).norm() < 1e-12);
      CHECK((SW.middleRows(d * i, d) - Si * Wi).norm() < 1e-12);
    }
  }
}

TEST_CASE("Riemannian gradient and Hessian against finite differences along the retraction") {
  for (int d : {2, 3}) {
    CAPTURE(d);
    const World w = simulate_world(landmark_world(d, 1.0));
    const DataMatrix Q(w.graph.problem, "auto");
    const int n = Q.num_poses(), r = d + 2;
    const Eigen::MatrixXd X = stiefel::random_point(n, d, r, 5);
    CHECK((X.topRows(d) * X.topRows(d).transpose() - Eigen::MatrixXd::Identity(d, d)).norm() < 1e-12);
    Relaxation f(Q);
    f.set_point(X);
    const Eigen::MatrixXd g = f.gradient();
    CHECK(stiefel::project(X, g, d).isApprox(g, 1e-12));  // tangent
    for (std::uint64_t seed : {1, 2, 3}) {
      const Eigen::MatrixXd V = random_tangent(X, d, seed);
      const double h = 1e-5;
      const double Fp = f.cost_at(stiefel::retract(X, h * V, d)), Fm = f.cost_at(stiefel::retract(X, -h * V, d));
      const double scale = std::abs(f.cost());
      // First derivative <grad, V>; second derivative <V, Hess V> (the polar retraction is second order).
      CHECK(std::abs((Fp - Fm) / (2 * h) - inner(g, V)) <= 1e-6 * scale);
      const Eigen::MatrixXd HV = f.hessian(V);
      CHECK(std::abs((Fp - 2 * f.cost() + Fm) / (h * h) - inner(V, HV)) <= 1e-3 * scale);
      // Hess V = P_X(D grad [V]) by central differences of the gradient.
      Relaxation fp(Q), fm(Q);
      fp.set_point(stiefel::retract(X, h * V, d));
      fm.set_point(stiefel::retract(X, -h * V, d));
      const Eigen::MatrixXd dg = stiefel::project(X, (fp.gradient() - fm.gradient()) / (2 * h), d);
      CHECK((dg - HV).norm() <= 1e-6 * HV.norm());
      // The preconditioner is symmetric positive definite on the tangent space.
      const Eigen::MatrixXd U = random_tangent(X, d, seed + 10);
      CHECK(std::abs(inner(U, f.precondition(V)) - inner(V, f.precondition(U))) <= 1e-9 * f.precondition(V).norm());
      CHECK(inner(V, f.precondition(V)) > 0);
    }
  }
}

TEST_CASE("noise-free worlds: the staircase finds cost 0, certified; the truth certifies as a candidate") {
  for (int d : {2, 3}) {
    CAPTURE(d);
    const World w = simulate_world(landmark_world(d, 0.0));
    const Problem& p = w.graph.problem;
    const DataMatrix Q(p, "auto");
    const SolveResult s = solve(Q, StaircaseOptions{});
    CHECK(s.certified);
    CHECK(s.psd);
    CHECK(std::abs(s.cost) < 1e-6);
    const Estimate truth = anchor_first_pose(w.truth);
    CHECK((s.estimate.R - truth.R).norm() < 1e-6);
    CHECK((s.estimate.m - truth.m).norm() < 1e-5);
    const SolveResult c = certify_candidate(Q, p, w.truth, CertificateOptions{});
    CHECK(c.certified);
    CHECK(c.lower_bound <= c.cost + 1e-9);
  }
}

TEST_CASE("noisy worlds: solution certified; its suboptimality bound is small; re-certified as a candidate") {
  for (int d : {2, 3}) {
    CAPTURE(d);
    const World w = simulate_world(landmark_world(d, 1.0));
    const Problem& p = w.graph.problem;
    const DataMatrix Q(p, "auto");
    const SolveResult s = solve(Q, StaircaseOptions{});
    REQUIRE(s.certified);
    CHECK(s.cost > 1.0);
    CHECK(s.lower_bound <= s.cost);
    CHECK(s.suboptimality_bound <= 1e-5 * s.cost);  // tau dn, eta_rel = 1e-10 of the data's scale
    CHECK(evaluate_cost(p, s.estimate) == doctest::Approx(s.cost).epsilon(1e-10));
    // The truth is not the optimum of noisy data: it costs more and is not certified.
    const SolveResult t = certify_candidate(Q, p, w.truth, CertificateOptions{});
    CHECK(!t.certified);
    CHECK(t.cost > s.cost);
    const SolveResult c = certify_candidate(Q, p, s.estimate, CertificateOptions{});
    CHECK(c.certified);
    CHECK(c.cost == doctest::Approx(s.cost).epsilon(1e-10));
  }
}

TEST_CASE("planted local minima are rejected: a rank-d local minimum, a rotated sub-graph") {
  const World w = simulate_world(loopy_pose_graph());
  const Problem& p = w.graph.problem;
  const DataMatrix Q(p, "auto");
  StaircaseOptions o;
  o.init = "random";
  o.seed = 1;
  o.rank_min = o.rank_max = 2;  // no escape allowed
  o.trust_region.grad_tol = 1e-6;  // converge to the critical point itself
  o.trust_region.rel_decrease_tol = 0.0;
  const SolveResult stuck = solve(Q, o);
  CHECK(!stuck.certified);
  CHECK(!stuck.psd);
  CHECK(stuck.lambda_min < -1.0);
  REQUIRE(stuck.levels.size() == 1);
  CHECK(stuck.levels[0].trust_region.grad_norm <= 1e-8 * stuck.cost);  // a critical point
  // The staircase escapes the same start along the certificate's eigenvector and certifies.
  o.rank_max = 10;
  const SolveResult escaped = solve(Q, o);
  CHECK(escaped.certified);
  CHECK(escaped.levels.size() >= 2);
  CHECK(escaped.cost < 1e-2 * stuck.cost);
  const SolveResult best = solve(Q, StaircaseOptions{});
  CHECK(escaped.cost == doctest::Approx(best.cost).epsilon(1e-7));

  // The optimum with the second half of the trajectory turned by 90 degrees about pose 15.
  Estimate rotated = best.estimate;
  const Eigen::Matrix2d turn = rotation_2d(M_PI / 2);
  const Eigen::Vector2d pivot = rotated.t.col(15);
  for (int i = 16; i < p.num_poses(); ++i) {
    rotated.R.middleCols(2 * i, 2) = turn * rotated.R.middleCols(2 * i, 2);
    rotated.t.col(i) = pivot + turn * (rotated.t.col(i) - pivot);
  }
  const SolveResult c = certify_candidate(Q, p, rotated, CertificateOptions{});
  CHECK(!c.certified);
  CHECK(c.cost > best.cost);
  CHECK(!c.psd);
  CHECK(std::isnan(c.lower_bound));  // tr(Lambda) bounds nothing when S is not PSD
}
