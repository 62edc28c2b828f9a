// The data matrix: landmark-by-landmark construction against the dense construction and exact
// elimination, the implicit translation elimination, the cost of a configuration by hand.
#include <doctest/doctest.h>

#include <Eigen/Dense>

#include "slam/data_matrix.hpp"
#include "slam/simulate.hpp"

using namespace core::slam;

namespace {

// Dense M over [t_0..t_{n-1} | m_0..m_{L-1} | R] straight from the edges (landmarks as variables).
Eigen::MatrixXd dense_full_matrix(const Problem& p) {
  const int d = p.d, n = p.num_poses(), L = p.num_landmarks(), N = n + L + d * n;
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(N, N);
  auto R = [&](int i) { return n + L + d * i; };
  for (const PoseEdge& e : p.pose_edges) {
    Eigen::VectorXd a = Eigen::VectorXd::Zero(N);
    a(e.j) += 1;
    a(e.i) -= 1;
    a.segment(R(e.i), d) -= e.t;
    M += e.tau * a * a.transpose();
    for (int c = 0; c < d; ++c) {
      Eigen::VectorXd b = Eigen::VectorXd::Zero(N);
      b(R(e.j) + c) = 1;
      b.segment(R(e.i), d) -= e.R.col(c);
      M += e.kappa * b * b.transpose();
    }
  }
  for (const LandmarkEdge& e : p.landmark_edges) {
    Eigen::VectorXd a = Eigen::VectorXd::Zero(N);
    a(n + e.landmark) += 1;
    a(e.pose) -= 1;
    a.segment(R(e.pose), d) -= e.y;
    M += e.tau * a * a.transpose();
  }
  return M;
}

Eigen::MatrixXd pinv(const Eigen::MatrixXd& A) {
  return A.completeOrthogonalDecomposition().pseudoInverse();
}

WorldOptions small_world(int d) {
  WorldOptions o;
  o.dimension = d;
  o.poses = 12;
  o.landmarks = 7;
  o.sensor_range = 9.0;
  o.loop_closures = 2;
  o.rotation_sigma = 0.1;
  o.seed = 3 + d;
  return o;
}

}  // namespace

TEST_CASE("Q by landmark-by-landmark elimination equals the dense construction (2D and 3D)") {
  for (int d : {2, 3}) {
    CAPTURE(d);
    const World w = simulate_world(small_world(d));
    const Problem& p = w.graph.problem;
    const int n = p.num_poses(), L = p.num_landmarks(), P = n + L;
    REQUIRE(L == 7);
    const Eigen::MatrixXd M = dense_full_matrix(p);
    // Eliminate translations and landmarks at once by the pseudo-inverse (no anchoring).
    const Eigen::MatrixXd Mpp = M.topLeftCorner(P, P), Mpr = M.topRightCorner(P, d * n);
    const Eigen::MatrixXd Q_dense = M.bottomRightCorner(d * n, d * n) - Mpr.transpose() * pinv(Mpp) * Mpr;
    for (const std::string& backend : cholesky_backends()) {
      CAPTURE(backend);
      const DataMatrix Q(p, backend);
      const Eigen::MatrixXd Q_ours = Q.dense_Q();
      const double scale = Q_dense.cwiseAbs().maxCoeff();
      CHECK((Q_ours - Q_dense).cwiseAbs().maxCoeff() <= 1e-10 * scale);
      const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(d * n, d * n);
      CHECK((Q.multiply(I) - Q_dense).cwiseAbs().maxCoeff() <= 1e-10 * scale);
    }
    // The weighted projector equals the exact elimination of the landmarks alone (their block of M is
    // diagonal): the Schur complement over [t | R] with t_0 anchored is K.
    const DataMatrix Q(p, "auto");
    std::vector<int> keep;
    for (int k = 1; k < n; ++k) keep.push_back(k);
    for (int k = P; k < P + d * n; ++k) keep.push_back(k);
    std::vector<int> lm;
    for (int k = n; k < P; ++k) lm.push_back(k);
    const Eigen::MatrixXd Mkk = M(keep, keep), Mkl = M(keep, lm), Mll = M(lm, lm);
    const Eigen::MatrixXd K_exact = Mkk - Mkl * Mll.inverse() * Mkl.transpose();
    const Eigen::MatrixXd K = Eigen::MatrixXd(Q.K());
    CHECK((K - K_exact).cwiseAbs().maxCoeff() <= 1e-10 * K_exact.cwiseAbs().maxCoeff());
  }
}

TEST_CASE("cost of a known configuration by hand; recovered translations and landmarks are optimal") {
  // Pose 0 at the origin, pose 1 at (1, 0) turned by 90 degrees, landmark at (2, 0).
  Problem p;
  p.d = 2;
  p.pose_ids = {0, 1};
  p.landmark_ids = {2};
  PoseEdge e;
  e.i = 0, e.j = 1, e.R = Eigen::Matrix2d::Identity(), e.t = Eigen::Vector2d(1, 1), e.kappa = 2, e.tau = 3;
  p.pose_edges = {e};
  p.landmark_edges = {{0, 0, Eigen::Vector2d(2, 0.5), 4.0}, {1, 0, Eigen::Vector2d(0, -1), 5.0}};
  Estimate x;
  x.R.resize(2, 4);
  x.R << 1, 0, 0, -1, 0, 1, 1, 0;
  x.t.resize(2, 2);
  x.t << 0, 1, 0, 0;
  x.m = Eigen::Vector2d(2, 0);
  // kappa ||R_1 - I||^2 = 2 * 4; tau ||(1,0) - (1,1)||^2 = 3 * 1; landmark: 4 * 0.5^2 + 5 * 0 = 1.
  CHECK(evaluate_cost(p, x) == doctest::Approx(12.0).epsilon(1e-15));

  // tr(R Q R^T) is the cost with the best translations and landmarks for these rotations.
  const DataMatrix Q(p, "auto");
  const Estimate best = Q.recover(x.R);
  CHECK(best.t.col(0).norm() == 0.0);
  CHECK(Q.cost(x.R.transpose()) == doctest::Approx(evaluate_cost(p, best)).epsilon(1e-12));
  CHECK(Q.cost(x.R.transpose()) < 12.0);
  // ...and no better: the gradient of the cost in t_1 and m vanishes (finite differences).
  for (int k = 0; k < 2; ++k) {
    Estimate plus = best, minus = best;
    plus.t(k, 1) += 1e-6;
    minus.t(k, 1) -= 1e-6;
    CHECK(std::abs(evaluate_cost(p, plus) - evaluate_cost(p, minus)) < 1e-9);
    plus = best, minus = best;
    plus.m(k, 0) += 1e-6;
    minus.m(k, 0) -= 1e-6;
    CHECK(std::abs(evaluate_cost(p, plus) - evaluate_cost(p, minus)) < 1e-9);
  }
}

TEST_CASE("noise-free world: the truth has cost 0 and recover() returns its translations and landmarks") {
  WorldOptions o = small_world(3);
  o.noise_scale = 0.0;
  const World w = simulate_world(o);
  const DataMatrix Q(w.graph.problem, "auto");
  const Estimate truth = anchor_first_pose(w.truth);
  CHECK(std::abs(Q.cost(truth.R.transpose())) < 1e-8);
  const Estimate x = Q.recover(truth.R);
  CHECK((x.t - truth.t).norm() < 1e-8);
  CHECK((x.m - truth.m).norm() < 1e-8);
}

TEST_CASE("cholesky=auto: simplicial for 2D pose graphs and small problems, the sparse default for large 3D or landmark ones") {
  const std::string sparse_default = cholesky_backends().front();
  CHECK(resolve_cholesky_backend("auto", 2, false, 45000) == "simplicial");   // ais2klinik
  CHECK(resolve_cholesky_backend("auto", 3, false, 35) == "simplicial");      // tinyGrid3D
  CHECK(resolve_cholesky_backend("auto", 3, false, 499) == "simplicial");     // smallGrid3D
  CHECK(resolve_cholesky_backend("auto", 3, true, 59) == "simplicial");       // a 15-pose landmark world
  CHECK(resolve_cholesky_backend("auto", 3, false, 8799) == sparse_default);  // sphere_bignoise_vertex3
  CHECK(resolve_cholesky_backend("auto", 3, true, 1199) == sparse_default);   // Starry Night, 300 steps
  CHECK(resolve_cholesky_backend("simplicial", 3, true, 100000) == "simplicial");
}
