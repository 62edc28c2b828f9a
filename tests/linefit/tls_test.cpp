// Plain TLS: closed form against a float64 brute-force angle search, the certificate against the
// optimum, the other stationary line and arbitrary lines, and degenerate inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "common/errors.hpp"
#include "linefit/fit_job.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::linefit;

namespace {
// For a unit normal at angle phi the best c is the mean projection; scan phi finely, then refine.
double brute_force_cost(const Points& p) {
  auto cost_at = [&](double phi) {
    const double a = std::cos(phi), b = std::sin(phi);
    double mean = 0;
    for (std::size_t i = 0; i < p.size(); ++i) mean += a * p.x[i] + b * p.y[i];
    mean /= p.size();
    double s = 0;
    for (std::size_t i = 0; i < p.size(); ++i) s += std::pow(a * p.x[i] + b * p.y[i] - mean, 2);
    return s / p.size();
  };
  double best = std::numeric_limits<double>::infinity(), best_phi = 0;
  const int steps = 20000;
  for (int k = 0; k < steps; ++k) {
    const double phi = M_PI * k / steps;
    const double c = cost_at(phi);
    if (c < best) best = c, best_phi = phi;
  }
  double lo = best_phi - M_PI / steps, hi = best_phi + M_PI / steps;  // golden-section refine
  for (int it = 0; it < 100; ++it) {
    const double m1 = lo + (hi - lo) * 0.382, m2 = lo + (hi - lo) * 0.618;
    (cost_at(m1) < cost_at(m2) ? hi : lo) = (cost_at(m1) < cost_at(m2) ? m2 : m1);
  }
  return std::min(best, cost_at(0.5 * (lo + hi)));
}

Points random_points(std::uint64_t seed, double outliers) {
  SyntheticLine spec;
  spec.n = 150;
  spec.angle_deg = 10.0 + 17.0 * static_cast<double>(seed);
  spec.noise = 0.3;
  spec.outliers = outliers;
  return generate_line_points(spec, seed).points;
}
}  // namespace

TEST_CASE("closed form equals the brute-force global optimum") {
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    const Points p = random_points(seed, seed % 2 ? 0.3 : 0.0);
    const Line line = fit_tls(p);
    const auto cert = certify_tls(tls_cost_matrix(p), line, 1e-9);
    CHECK(cert.cost == doctest::Approx(brute_force_cost(p)).epsilon(1e-9));
    CHECK(cert.dual == doctest::Approx(cert.cost).epsilon(1e-9));
    CHECK(cert.certified);
    CHECK(cert.stationarity < 1e-9);
    CHECK(std::hypot(line.a, line.b) == doctest::Approx(1.0));
  }
}

TEST_CASE("certificate rejects the worst stationary line and arbitrary lines") {
  const Points p = random_points(3, 0.0);
  const Line best = fit_tls(p);
  // The other stationary point: the normal perpendicular to the optimum's, through the centroid.
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < p.size(); ++i) mx += p.x[i] / p.size(), my += p.y[i] / p.size();
  const Line worst = normalise_line(-best.b, best.a, -best.b * mx + best.a * my);
  const auto Q = tls_cost_matrix(p);
  const auto cert = certify_tls(Q, worst, 1e-9);
  CHECK(cert.stationarity < 1e-8);  // it IS a KKT point...
  CHECK_FALSE(cert.certified);      // ...but not the global minimum
  CHECK(cert.lambda_min < 0);
  CHECK(cert.gap() > 0);
  // A shifted optimum is not stationary and not certified.
  const auto shifted = certify_tls(Q, Line{best.a, best.b, best.c + 0.1}, 1e-9);
  CHECK_FALSE(shifted.certified);
  CHECK(shifted.gap() == doctest::Approx(0.01).epsilon(1e-6));  // moving c by d adds d^2
}

TEST_CASE("degenerate inputs are data errors") {
  CHECK_THROWS_AS(points_from_list({{1.0, 2.0}}, "t"), DataError);
  CHECK_THROWS_AS(points_from_list({{1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}}, "t"), DataError);
  CHECK_THROWS_AS(points_from_list({{1.0, 2.0}, {NAN, 2.0}}, "t"), DataError);
  CHECK_THROWS_AS(points_from_list({{1.0, 2.0, 3.0}, {1.0, 2.0}}, "t"), DataError);
  CHECK_THROWS_AS(normalise_line(0, 0, 1), DataError);
  CHECK_THROWS_AS(parse_candidate("1,2", "candidate"), UsageError);
  CHECK_THROWS_AS(parse_candidate("1,x,2", "candidate"), UsageError);
  // Two distinct points: the line through them, cost 0.
  const Points two = points_from_list({{0.0, 0.0}, {1.0, 1.0}}, "t");
  const auto cert = certify_tls(tls_cost_matrix(two), fit_tls(two), 1e-9);
  CHECK(cert.cost == doctest::Approx(0.0));
  CHECK(cert.certified);
}

TEST_CASE("CSV input: line numbers in errors") {
  test::TempDir dir("linefit");
  test::write_text(dir / "p.csv", "x,y\n0,0\n1,1\n2,2.1\n3,3\n4,4\n5,abc\n");
  try {
    read_points_csv(dir / "p.csv");
    FAIL("expected a DataError");
  } catch (const DataError& e) {
    CHECK(std::string(e.what()).find("p.csv:7") != std::string::npos);
  }
  CHECK_THROWS_AS(read_points_csv(dir / "absent.csv"), InputMissingError);
  test::write_text(dir / "same.csv", "1,1\n1,1\n");
  CHECK_THROWS_AS(read_points_csv(dir / "same.csv"), DataError);
}
