// QCQP, Shor relaxation, tightness and certificates on plain total least squares (closed form:
// the smallest eigenvalue of the centred scatter), on max-cut of the 5-cycle (a relaxation that is
// not tight), and Lanczos against Eigen's dense eigensolver.
#include <doctest/doctest.h>

#include <Eigen/Eigenvalues>
#include <cmath>

#include "certify/certificate.hpp"
#include "certify/lanczos.hpp"
#include "certify/relaxation.hpp"
#include "common/errors.hpp"
#include "common/rng.hpp"
#include "test_support.hpp"

using namespace core::certify;

namespace {

struct TlsData {
  Eigen::MatrixX2d pts;
  Eigen::Matrix3d Q;  // f(a, b, c) = (1/N) sum (a x + b y - c)^2
  double lambda_min, lambda_max;
  Eigen::Vector3d best, worst;  // stationary lines (a, b, c): global minimum and maximum
};

TlsData tls_data(int n, std::uint64_t seed) {
  core::Rng rng(seed);
  TlsData d;
  d.pts.resize(n, 2);
  const double angle = rng.uniform(0.0, M_PI);
  for (int i = 0; i < n; ++i) {
    const double t = rng.uniform(-5.0, 5.0), e = 0.3 * rng.normal();
    d.pts(i, 0) = 2.0 + t * std::cos(angle) - e * std::sin(angle);
    d.pts(i, 1) = -1.0 + t * std::sin(angle) + e * std::cos(angle);
  }
  d.Q.setZero();
  for (int i = 0; i < n; ++i) {
    const Eigen::Vector3d q(d.pts(i, 0), d.pts(i, 1), -1.0);
    d.Q += q * q.transpose() / n;
  }
  const Eigen::RowVector2d m = d.pts.colwise().mean();
  const Eigen::MatrixX2d c = d.pts.rowwise() - m;
  const Eigen::Matrix2d W = c.transpose() * c / n;
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> es(W);
  d.lambda_min = es.eigenvalues()(0);
  d.lambda_max = es.eigenvalues()(1);
  for (int k = 0; k < 2; ++k) {
    const Eigen::Vector2d nrm = es.eigenvectors().col(k);
    Eigen::Vector3d x(nrm(0), nrm(1), nrm.dot(m.transpose()));
    (k == 0 ? d.best : d.worst) = x;
  }
  return d;
}

// x = (a, b, c), A_0 = diag(1, 1, 0): the unit-normal constraint is the homogenising one.
Qcqp tls_qcqp(const TlsData& d) {
  Qcqp q;
  q.Q = Eigen::MatrixXd(d.Q);
  q.A0 = Eigen::MatrixXd(Eigen::Vector3d(1, 1, 0).asDiagonal());
  return q;
}

// x = (a, b, c, h), h^2 = 1 homogenising, a^2 + b^2 = 1 a further constraint; sparse storage.
Qcqp tls_qcqp_homogenised(const TlsData& d) {
  Qcqp q;
  Eigen::MatrixXd Q = Eigen::MatrixXd::Zero(4, 4);
  Q.topLeftCorner<3, 3>() = d.Q;
  q.Q = SparseMatrixd(Q.sparseView());
  SparseMatrixd A0(4, 4), A1(4, 4);
  A0.insert(3, 3) = 1.0;
  A1.insert(0, 0) = 1.0;
  A1.insert(1, 1) = 1.0;
  q.A0 = A0;
  q.constraints.push_back({A1, 1.0, "unit normal"});
  return q;
}

// Max-cut of the 5-cycle as min x^T (-L/4) x... with x_i^2 = 1: best cut 4, SDP bound 4.52.
Qcqp maxcut_c5() {
  Eigen::MatrixXd L = Eigen::MatrixXd::Zero(5, 5);
  for (int i = 0; i < 5; ++i) {
    const int j = (i + 1) % 5;
    L(i, i) += 1;
    L(j, j) += 1;
    L(i, j) -= 1;
    L(j, i) -= 1;
  }
  Qcqp q;
  q.Q = Eigen::MatrixXd(-0.25 * L);
  Eigen::MatrixXd E = Eigen::MatrixXd::Zero(5, 5);
  E(0, 0) = 1;
  q.A0 = E;
  for (int i = 1; i < 5; ++i) {
    Eigen::MatrixXd Ei = Eigen::MatrixXd::Zero(5, 5);
    Ei(i, i) = 1;
    std::string name = "x";  // built in steps: GCC 12 warns falsely (-Wrestrict) on a + chain
    name += std::to_string(i);
    name += "^2 = 1";
    q.constraints.push_back({Ei, 1.0, name});
  }
  return q;
}

}  // namespace

TEST_CASE("plain TLS: eig = SDP = dual to 1e-6, and the relaxation is tight") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    CAPTURE(seed);
    const TlsData d = tls_data(20 + 10 * static_cast<int>(seed), seed);
    const Qcqp q = tls_qcqp(d);
    CHECK(q.cost(d.best) == doctest::Approx(d.lambda_min).epsilon(1e-12));
    const RelaxationResult r = solve_relaxation(q, {}, q.cost(d.best));
    REQUIRE(r.sdp.status == SdpStatus::optimal);
    CHECK(std::abs(r.sdp_value - d.lambda_min) < 1e-6);
    CHECK(std::abs(r.sdp.dual_objective - d.lambda_min) < 1e-6);
    CHECK(std::abs(r.sdp.y(0) - d.lambda_min) < 1e-6);  // y_0 is the multiplier of A_0
    CHECK(r.tight);
    CHECK(r.numerical_rank == 1);
    CHECK(r.eigen_ratio < 1e-6);
    CHECK(std::abs(*r.local_gap) < 1e-6);
    CHECK(std::min((r.x - d.best).norm(), (r.x + d.best).norm()) < 1e-4);
  }
}

TEST_CASE("homogenised TLS in sparse storage: same value, but X is rank two and not called tight") {
  // h does not appear in the cost, so the optimal face holds X = diag(x x^T, 1) of rank two: the
  // interior-point solution (analytic centre of the face) shows it, and the diagnostics say so.
  const TlsData d = tls_data(40, 9);
  const Qcqp q = tls_qcqp_homogenised(d);
  const RelaxationResult r = solve_relaxation(q);
  REQUIRE(r.sdp.status == SdpStatus::optimal);
  CHECK(std::abs(r.sdp_value - d.lambda_min) < 1e-6);
  CHECK(r.numerical_rank == 2);
  CHECK(!r.tight);
}

TEST_CASE("certificate accepts the global TLS optimum and rejects the other stationary line") {
  const TlsData d = tls_data(50, 4);
  SUBCASE("closed-form multiplier lambda_0 = f(x)") {
    const Qcqp q = tls_qcqp(d);
    const Certificate good = certify(q, d.best, {}, Eigen::VectorXd::Constant(1, q.cost(d.best)));
    CHECK(good.certified);
    CHECK(good.factorization_psd);
    CHECK(good.multipliers.method == "given");
    CHECK(good.multipliers.residual < 1e-12);
    CHECK(std::abs(good.gap) < 1e-12);
    CHECK(good.eta > 0.0);
    const Certificate bad = certify(q, d.worst, {}, Eigen::VectorXd::Constant(1, q.cost(d.worst)));
    CHECK(!bad.certified);
    CHECK(!bad.factorization_psd);
    CHECK(bad.multipliers.residual < 1e-12);  // a stationary point, yet not a minimum
    REQUIRE(bad.lambda_min);
    const Eigen::Matrix3d H = d.Q - q.cost(d.worst) * Eigen::Vector3d(1, 1, 0).asDiagonal().toDenseMatrix();
    const double exact = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(H).eigenvalues()(0);
    CHECK(exact < 0.0);
    CHECK(bad.lambda_min->lambda_min == doctest::Approx(exact).epsilon(1e-8));
  }
  SUBCASE("least-squares multipliers on the homogenised, sparse form") {
    const Qcqp q = tls_qcqp_homogenised(d);
    const Eigen::Vector4d best(d.best(0), d.best(1), d.best(2), 1.0);
    const Certificate good = certify(q, best);
    CHECK(good.certified);
    CHECK(good.multipliers.method == "least_squares");
    CHECK(good.multipliers.residual < 1e-10);
    CHECK(good.multipliers.lambda(0) == doctest::Approx(0.0).epsilon(1e-10));
    CHECK(good.multipliers.lambda(1) == doctest::Approx(d.lambda_min).epsilon(1e-10));
    CHECK(good.dual_value == doctest::Approx(d.lambda_min).epsilon(1e-10));
    const Eigen::Vector4d worst(d.worst(0), d.worst(1), d.worst(2), 1.0);
    const Certificate bad = certify(q, worst);
    CHECK(!bad.certified);
    CHECK(bad.reason.find("Cholesky") != std::string::npos);
    // A line that is not stationary: multipliers fit badly, gap reported, not certified.
    const Eigen::Vector4d tilted(std::cos(0.3), std::sin(0.3), 0.0, 1.0);
    const Certificate off = certify(q, tilted);
    CHECK(!off.certified);
    CHECK(off.multipliers.residual > 1e-3);
    CHECK(off.gap == doctest::Approx(off.cost - off.dual_value));
  }
}

TEST_CASE("max-cut of the 5-cycle: the relaxation is not tight and the best cut is not certified") {
  const Qcqp q = maxcut_c5();
  Eigen::VectorXd cut(5);
  cut << 1, -1, 1, -1, 1;  // cuts 4 of 5 edges: the optimum
  CHECK(q.cost(cut) == doctest::Approx(-4.0));
  const RelaxationResult r = solve_relaxation(q, {}, q.cost(cut));
  REQUIRE(r.sdp.status == SdpStatus::optimal);
  const double goemans_williamson_c5 = 25.0 / 8.0 + 25.0 * std::sqrt(5.0) / 40.0;  // 4.5225
  CHECK(-r.sdp_value == doctest::Approx(goemans_williamson_c5).epsilon(1e-7));
  CHECK(!r.tight);
  CHECK(r.numerical_rank > 1);
  CHECK(*r.local_gap > 0.5);
  const Certificate c = certify(q, cut);
  CHECK(!c.certified);
}

TEST_CASE("QCQP validation names the bad matrix") {
  const TlsData d = tls_data(10, 2);
  Qcqp q = tls_qcqp(d);
  Eigen::MatrixXd asym = d.Q;
  asym(0, 1) += 1.0;
  q.Q = asym;
  CHECK_THROWS_WITH_AS(q.validate(), "QCQP matrix Q is not symmetric", core::DataError);
  q = tls_qcqp_homogenised(d);
  q.constraints[0].A = Eigen::MatrixXd(Eigen::MatrixXd::Identity(3, 3));
  CHECK_THROWS_WITH_AS(q.validate(), doctest::Contains("A_1 (unit normal) has size 3"), core::DataError);
  CHECK_THROWS_AS(certify(tls_qcqp(d), Eigen::Vector2d(1, 0)), core::DataError);
  CertificateOptions bad;
  bad.eta_rel = -1.0;
  CHECK_THROWS_WITH_AS(certify(tls_qcqp(d), d.best, bad), doctest::Contains("eta_rel"), core::UsageError);
}

TEST_CASE("Lanczos smallest eigenvalue matches the dense eigensolver") {
  core::Rng rng(17);
  for (int n : {30, 200}) {
    std::vector<Eigen::Triplet<double>> t;
    for (int i = 0; i < n; ++i) {
      t.emplace_back(i, i, rng.uniform(-1.0, 3.0));
      for (int k = 0; k < 3; ++k) {
        const int j = static_cast<int>(rng.below(n));
        const double v = rng.normal();
        t.emplace_back(i, j, v);
        t.emplace_back(j, i, v);
      }
    }
    SparseMatrixd A(n, n);
    A.setFromTriplets(t.begin(), t.end());
    const double exact = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Eigen::MatrixXd(A)).eigenvalues()(0);
    CAPTURE(n);
    LanczosOptions opts;
    const LanczosResult full = lanczos_smallest(A, opts);
    CHECK(full.converged);
    CHECK(full.lambda_min == doctest::Approx(exact).epsilon(1e-8));
    opts.full_reorthogonalization = false;
    opts.max_steps = 3 * n;
    const LanczosResult plain = lanczos_smallest(A, opts);
    CHECK(plain.converged);
    CHECK(plain.lambda_min == doctest::Approx(exact).epsilon(1e-8));
  }
  LanczosOptions bad;
  bad.max_steps = 0;
  CHECK_THROWS_AS(lanczos_smallest(SparseMatrixd(3, 3), bad), core::UsageError);
}

// The step to the PSD cone's boundary: X + alpha D is singular at alpha = -1 / lambda_min(L^-1 D L^-T).
// Lanczos (order >= kLanczosMinOrder) and the dense path agree with the dense eigensolver and never
// exceed it (a lower bound: the step is not past the boundary), and X - D / lambda_min is singular.
TEST_CASE("scaled_lambda_min: the step to the PSD boundary, Lanczos and dense") {
  core::Rng rng(23);
  CHECK(lanczos_step_limit(kLanczosMinOrder) == 60);
  CHECK(lanczos_step_limit(kLongLanczosMinOrder) == std::max<int>(60, kLongLanczosMinOrder / 8));
  CHECK(lanczos_step_limit(1600) == 200);
  // 12: dense; 100: 60 Lanczos steps; 600: up to 75 (a Wigner-like D: its smallest eigenvalues crowd together).
  for (int n : {12, static_cast<int>(kLanczosMinOrder) + 36, static_cast<int>(kLongLanczosMinOrder) + 88}) {
    Eigen::MatrixXd G(n, n), D(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        G(i, j) = rng.normal();
        D(i, j) = rng.normal();
      }
    const Eigen::MatrixXd X = G * G.transpose() / n + 0.1 * Eigen::MatrixXd::Identity(n, n);
    D = (0.5 * (D + D.transpose())).eval();
    const Eigen::LLT<Eigen::MatrixXd> L(X);
    const Eigen::MatrixXd Li = L.matrixL().solve(Eigen::MatrixXd::Identity(n, n));
    const double exact =
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Li * D * Li.transpose()).eigenvalues()(0);
    const double lmin = scaled_lambda_min(L, D);
    CAPTURE(n);
    REQUIRE(exact < 0.0);
    CHECK(lmin == doctest::Approx(exact).epsilon(1e-7));
    CHECK(lmin <= exact + 1e-12 * std::abs(exact));
    const Eigen::MatrixXd boundary = X - D / exact;
    const double smallest = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(boundary).eigenvalues()(0);
    CHECK(std::abs(smallest) < 1e-8 * boundary.norm());
  }
}

// A path graph's Laplacian: lambda_min = 0 with the next eigenvalue 2 - 2 cos(pi / n) ~ 1e-6 for
// n = 3000 (a cluster near 0 as in a certificate's Lagrangian). Shift-invert finds 0 to tol ||A||_inf
// in a few steps where plain Lanczos stops at max_steps on an upper bound. With one diagonal entry
// lowered by 3 (n = 300) it is indefinite, the Cholesky fails and plain Lanczos finds the isolated
// negative eigenvalue of the dense eigensolver.
TEST_CASE("smallest_eigenvalue: shift-invert near a cluster at 0, plain Lanczos when indefinite") {
  const auto path_laplacian = [](int n) {
    std::vector<Eigen::Triplet<double>> t;
    for (int i = 0; i + 1 < n; ++i) {
      t.emplace_back(i, i, 1.0);
      t.emplace_back(i + 1, i + 1, 1.0);
      t.emplace_back(i, i + 1, -1.0);
      t.emplace_back(i + 1, i, -1.0);
    }
    SparseMatrixd L(n, n);
    L.setFromTriplets(t.begin(), t.end());
    return L;
  };
  const LanczosOptions opts;
  const SparseMatrixd L = path_laplacian(3000);
  const LanczosResult si = smallest_eigenvalue(L, opts);
  CHECK(si.shift_invert);
  CHECK(si.converged);
  CHECK(si.steps < 50);
  CHECK(std::abs(si.lambda_min) <= opts.tol * 4.0);  // ||L||_inf = 4
  CHECK(si.residual <= opts.tol * 4.0);
  const LanczosResult plain = lanczos_smallest(L, opts);
  CHECK(plain.lambda_min > 1e3 * std::abs(si.lambda_min) + 1e-9);

  SparseMatrixd indefinite = path_laplacian(300);
  indefinite.coeffRef(0, 0) -= 3.0;
  const double exact =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Eigen::MatrixXd(indefinite)).eigenvalues()(0);
  const LanczosResult neg = smallest_eigenvalue(indefinite, opts);
  CHECK_FALSE(neg.shift_invert);
  CHECK(neg.converged);
  CHECK(neg.lambda_min == doctest::Approx(exact).epsilon(1e-8));
}

// The PSD shift is relative to each row's diagonal: a negative eigenvalue of -1e-10 inside a block of
// scale 1e-6 is found next to a row of scale 1 (a shift of 1e-8 ||H|| would hide it), and the same
// block with a positive eigenvalue of 1e-10 passes. shift_bound is sum_i eta H_ii x_i^2.
TEST_CASE("certificate shift is relative to each diagonal entry (Jacobi scaling)") {
  for (const double delta : {1e-4, -1e-4}) {
    CAPTURE(delta);
    std::vector<Eigen::Triplet<double>> t = {{0, 0, 1.0}, {1, 1, 1e-6}, {2, 2, 1e-6}, {1, 2, 1e-6 * (1.0 + delta)},
                                             {2, 1, 1e-6 * (1.0 + delta)}};
    SparseMatrixd H(3, 3);
    H.setFromTriplets(t.begin(), t.end());
    CertificateOptions opts;
    opts.compute_lambda_min = false;
    const Certificate c = certify_lagrangian(H, 0.0, 0.0, 0.0, {}, opts);
    CHECK(c.factorization_psd == (delta < 0.0));
    CHECK(c.shift(0) == doctest::Approx(opts.eta_rel));
    CHECK(c.shift(1) == doctest::Approx(opts.eta_rel * 1e-6));
    CHECK(c.shift_bound(Eigen::Vector3d(1.0, 2.0, 0.0)) == doctest::Approx(opts.eta_rel * (1.0 + 4e-6)));
  }
}
