// The cost, gradient and Gauss-Newton normal equations of range-certify against finite differences
// and dense linear algebra; the GP interpolation against closed forms.
#include <doctest/doctest.h>

#include "common/rng.hpp"
#include "rangeloc/gauss_newton.hpp"
#include "rangeloc/interpolate.hpp"
#include "rangeloc/problem.hpp"
#include "rangeloc/simulate.hpp"
#include "rangeloc/solve_job.hpp"

using namespace core::rangeloc;

namespace {

Dataset small_problem(int n, int dim, std::uint64_t seed, double sigma_d, const std::string& ranges = "all") {
  SimOptions o;
  o.n = n;
  o.dim = dim;
  o.anchors = dim + 3;
  o.seed = seed;
  o.sigma_d = sigma_d;
  o.ranges = ranges;
  return simulate(o);
}

Eigen::VectorXd random_theta(const Problem& pb, std::uint64_t seed) {
  core::Rng rng(seed);
  Eigen::VectorXd t(pb.variables());
  for (int i = 0; i < t.size(); ++i) t(i) = rng.uniform(-2.0, 4.0);
  return t;
}

}  // namespace

TEST_CASE("gradient matches central finite differences of the cost (all priors, 2-D and 3-D)") {
  for (const char* prior : {"cv", "zv", "none"})
    for (int dim : {2, 3}) {
      CAPTURE(prior);
      CAPTURE(dim);
      const Dataset data = small_problem(7, dim, 3, 0.1);
      const Problem pb(data, parse_prior(prior), 0.1, 0.5);
      const Eigen::VectorXd theta = random_theta(pb, 11);
      const Eigen::VectorXd g = pb.gradient(theta);
      double worst = 0;
      for (int i = 0; i < theta.size(); ++i) {
        const double h = 1e-6 * (1.0 + std::abs(theta(i)));
        Eigen::VectorXd tp = theta, tm = theta;
        tp(i) += h;
        tm(i) -= h;
        const double fd = (pb.cost(tp).total() - pb.cost(tm).total()) / (2 * h);
        worst = std::max(worst, std::abs(fd - g(i)) / (1.0 + std::abs(g(i))));
      }
      CHECK(worst < 1e-6);
    }
}

TEST_CASE("Gauss-Newton matrix: twice it is the finite-difference Hessian at a zero-residual point") {
  for (const char* prior : {"cv", "zv"}) {
    CAPTURE(prior);
    const Dataset data = small_problem(6, 2, 5, 0.0);  // noise-free: ground truth has zero range residuals
    const Problem pb(data, parse_prior(prior), 0.1, 0.5);
    const Eigen::VectorXd theta = initial_state(pb, data, "gt", 0, 0.2);
    BlockTridiagonal a;
    Eigen::VectorXd b;
    pb.linearize(theta, a, b);
    const Eigen::MatrixXd dense = a.dense();
    Eigen::MatrixXd hess(theta.size(), theta.size());
    for (int i = 0; i < theta.size(); ++i) {
      const double h = 1e-5;
      Eigen::VectorXd tp = theta, tm = theta;
      tp(i) += h;
      tm(i) -= h;
      hess.col(i) = (pb.gradient(tp) - pb.gradient(tm)) / (2 * h);
    }
    CHECK((hess - 2.0 * dense).norm() <= 1e-6 * dense.norm());
  }
}

TEST_CASE("block Cholesky solves the block-tridiagonal system as a dense solver does") {
  const Dataset data = small_problem(12, 3, 7, 0.1);
  const Problem pb(data, Prior::cv, 0.1, 0.3);
  BlockTridiagonal a;
  Eigen::VectorXd b;
  pb.linearize(random_theta(pb, 1), a, b);
  BlockCholesky chol;
  REQUIRE(chol.compute(a));
  const Eigen::VectorXd x = chol.solve(b), ref = a.dense().ldlt().solve(b);
  CHECK((x - ref).norm() <= 1e-9 * ref.norm());
  CHECK((a.multiply(x) - b).norm() <= 1e-9 * b.norm());
  BlockTridiagonal negative = a;
  negative.diag(5)(0, 0) = -1.0;
  CHECK_FALSE(chol.compute(negative));
}

TEST_CASE("Gauss-Newton reaches a stationary point: gradient ~ 0 and no init does better than ground truth on clean data") {
  const Dataset data = small_problem(40, 2, 9, 0.01);
  const Problem pb(data, Prior::cv, 0.01, 0.2);
  const GaussNewtonResult gt = gauss_newton(pb, initial_state(pb, data, "gt", 0, 0.2));
  CHECK(gt.converged);
  const double scale = pb.gradient(initial_state(pb, data, "random", 1, 0.2)).lpNorm<Eigen::Infinity>();
  CHECK(gt.gradient_norm <= 1e-9 * scale);
  CHECK(gt.cost.total() <= pb.cost(initial_state(pb, data, "gt", 0, 0.2)).total());
}

TEST_CASE("GP interpolation: states are reproduced, constant-velocity motion exactly, zv linearly") {
  Trajectory t;
  t.times = {0.0, 1.0, 2.5, 4.0};
  t.positions.resize(2, 4);
  t.velocities.resize(2, 4);
  for (int i = 0; i < 4; ++i) {
    t.positions.col(i) << 1.0 + 2.0 * t.times[i], -3.0 * t.times[i];
    t.velocities.col(i) << 2.0, -3.0;
  }
  const std::vector<double> q{0.0, 0.3, 1.7, 2.5, 3.9, 5.0};
  const Eigen::MatrixXd p = interpolate_positions(t, Prior::cv, q);
  for (std::size_t i = 0; i < q.size(); ++i) {
    CHECK(p(0, i) == doctest::Approx(1.0 + 2.0 * q[i]).epsilon(1e-12));
    CHECK(p(1, i) == doctest::Approx(-3.0 * q[i]).epsilon(1e-12));
  }
  // A curved cv trajectory: the interpolant is the cubic Hermite spline of the two states.
  t.positions.col(1) << 5.0, 0.0;
  t.velocities.col(1) << 0.0, 1.0;
  const Eigen::MatrixXd mid = interpolate_positions(t, Prior::cv, {0.5});
  const double s = 0.5, h00 = 2 * s * s * s - 3 * s * s + 1, h10 = s * s * s - 2 * s * s + s, h01 = -2 * s * s * s + 3 * s * s,
               h11 = s * s * s - s * s;
  CHECK(mid(0, 0) == doctest::Approx(h00 * 1.0 + h10 * 2.0 + h01 * 5.0 + h11 * 0.0).epsilon(1e-12));
  const Eigen::MatrixXd lin = interpolate_positions(t, Prior::zv, {0.5, 10.0});
  CHECK(lin(0, 0) == doctest::Approx(3.0));
  CHECK(lin(0, 1) == doctest::Approx(t.positions(0, 3)));
}
