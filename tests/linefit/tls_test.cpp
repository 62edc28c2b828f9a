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

namespace {
// The TLS optimum of `p` in long double: lambda_min of the centred scatter.
long double tls_cost_long_double(const Points& p) {
  long double mx = 0, my = 0;
  for (std::size_t i = 0; i < p.size(); ++i) mx += p.x[i], my += p.y[i];
  mx /= p.size(), my /= p.size();
  long double sxx = 0, syy = 0, sxy = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const long double dx = p.x[i] - mx, dy = p.y[i] - my;
    sxx += dx * dx, syy += dy * dy, sxy += dx * dy;
  }
  sxx /= p.size(), syy /= p.size(), sxy /= p.size();
  return (sxx + syy) / 2 - std::sqrt((sxx - syy) * (sxx - syy) / 4 + sxy * sxy);
}
}  // namespace

TEST_CASE("far from the origin (offset 1e8) every solver and certificate matches the same points at 0") {
  // Points on a 2^-10 grid, so that adding 1e8 is exact: the two sets are exact translates.
  Points base = random_points(2, 0.0);
  for (std::size_t i = 0; i < base.size(); ++i) {
    base.x[i] = std::ldexp(std::round(std::ldexp(base.x[i], 10)), -10);
    base.y[i] = std::ldexp(std::round(std::ldexp(base.y[i], 10)), -10);
  }
  const double offset = 1e8;
  std::vector<std::vector<double>> near, far;
  for (std::size_t i = 0; i < base.size(); ++i) {
    near.push_back({base.x[i], base.y[i]});
    far.push_back({base.x[i] + offset, base.y[i] + offset});
  }
  const double reference = static_cast<double>(tls_cost_long_double(base));
  struct Case {
    std::string mode, solver;
  };
  for (const Case& k : {Case{"tls", "eig"}, Case{"tls", "sdp"}, Case{"gm", "irls"}}) {
    CAPTURE(k.mode);
    CAPTURE(k.solver);
    FitOptions o;
    o.mode = k.mode;
    o.solver = k.solver;
    o.sigma = 1.5;
    o.verify = true;
    o.points = near;
    const FitResult at0 = run_fit(o);
    o.points = far;
    const FitResult at1e8 = run_fit(o);
    CHECK(at0.certificate.certified);
    CHECK(at1e8.certificate.certified);
    CHECK(at1e8.verified());
    CHECK(at1e8.certificate.cost == doctest::Approx(at0.certificate.cost).epsilon(1e-9));
    CHECK(at1e8.certificate.dual == doctest::Approx(at0.certificate.dual).epsilon(1e-7));
    CHECK(*at1e8.global_cost == doctest::Approx(at0.certificate.cost).epsilon(1e-9));
    if (k.mode == "tls") {
      CHECK(at1e8.certificate.cost == doctest::Approx(reference).epsilon(1e-9));
      CHECK(at1e8.certificate.detail.find("tol 0.000000") == std::string::npos);  // the tolerance is shown
    }
    // The same line, moved: c grows by a * 1e8 + b * 1e8; the points come back in the input's frame.
    CHECK(at1e8.line.a == doctest::Approx(at0.line.a).epsilon(1e-9));
    CHECK(at1e8.line.c == doctest::Approx(at0.line.c + (at0.line.a + at0.line.b) * offset).epsilon(1e-12));
    CHECK(at1e8.points.x[0] == far[0][0]);
    // A candidate keeps its exact coefficients in the result.
    o.candidate = "0.6,0.8,140000000.5";
    const FitResult cand = run_fit(o);
    CHECK(cand.line.c == 140000000.5);
    CHECK_FALSE(cand.certificate.certified);
  }
}
