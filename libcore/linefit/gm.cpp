// Geman-McClure IRLS (Black-Rangarajan) and the exhaustive-search verifier (see gm.hpp).
#include "linefit/gm.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/errors.hpp"

namespace core::linefit {

namespace {

double rho(double e, Loss loss, double s2) {
  const double e2 = e * e;
  return loss == Loss::squared ? e2 : s2 * e2 / (s2 + e2);
}

}  // namespace

double mean_loss(const Points& pts, const Line& line, Loss loss, double sigma) {
  const double s2 = sigma * sigma;
  double s = 0.0;
  for (std::size_t i = 0; i < pts.size(); ++i) s += rho(line.a * pts.x[i] + line.b * pts.y[i] - line.c, loss, s2);
  return s / static_cast<double>(pts.size());
}

double gm_cost(const Points& pts, const Line& line, double sigma) {
  return mean_loss(pts, line, Loss::geman_mcclure, sigma);
}

std::vector<double> gm_weights(const Points& pts, const Line& line, double sigma) {
  const double s2 = sigma * sigma;
  std::vector<double> w(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double e = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
    const double s = s2 / (s2 + e * e);
    w[i] = s * s;
  }
  return w;
}

Line fit_weighted_tls(const Points& pts, const std::vector<double>& w) {
  double sw = 0.0;
  Eigen::Vector2d m = Eigen::Vector2d::Zero();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    sw += w[i];
    m += w[i] * Eigen::Vector2d(pts.x[i], pts.y[i]);
  }
  if (!(sw > 0.0)) throw DataError("weighted TLS: all weights are zero");
  m /= sw;
  Eigen::Matrix2d W = Eigen::Matrix2d::Zero();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Eigen::Vector2d d(pts.x[i] - m.x(), pts.y[i] - m.y());
    W.noalias() += w[i] * d * d.transpose();
  }
  const Eigen::Vector2d n = Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d>(W).eigenvectors().col(0);
  return normalise_line(n.x(), n.y(), n.dot(m));
}

Line line_from_angle(const Points& pts, double phi) {
  const double a = std::cos(phi), b = std::sin(phi);
  std::vector<double> t(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) t[i] = a * pts.x[i] + b * pts.y[i];
  auto mid = t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2);
  std::nth_element(t.begin(), mid, t.end());
  return normalise_line(a, b, *mid);
}

IrlsResult irls_gm(const Points& pts, double sigma, const IrlsOptions& opts) {
  if (!(sigma > 0.0) || !std::isfinite(sigma)) throw UsageError("sigma must be > 0 and finite");
  std::vector<Line> starts;
  if (opts.init_angle) {
    starts.push_back(line_from_angle(pts, *opts.init_angle));
  } else {
    starts.push_back(fit_tls(pts));
    for (int k = 0; k < opts.starts; ++k) starts.push_back(line_from_angle(pts, M_PI * k / opts.starts));
  }
  // One IRLS step. When sigma is tiny next to every residual, each weight underflows to 0 (sigma^2
  // itself below 1e-308, or the squared ratio below it): a setting to change, not malformed data.
  const auto reweighted = [&](const Line& line) {
    const std::vector<double> w = gm_weights(pts, line, sigma);
    if (std::none_of(w.begin(), w.end(), [](double x) { return x > 0.0; }))
      throw UsageError("sigma = " + (std::ostringstream() << sigma).str() +
                       " is too small for these points: every Geman-McClure weight (sigma^2 / (sigma^2 + e^2))^2 "
                       "underflows to 0 at the IRLS iterate; raise sigma");
    return fit_weighted_tls(pts, w);
  };
  IrlsResult best;
  best.cost = std::numeric_limits<double>::infinity();
  best.starts = static_cast<int>(starts.size());
  for (std::size_t s = 0; s < starts.size(); ++s) {
    Line line = starts[s];
    double cost = gm_cost(pts, line, sigma);
    int it = 0;
    while (it < opts.max_iterations) {
      ++it;
      const Line next = reweighted(line);
      const double next_cost = gm_cost(pts, next, sigma);
      const bool done = cost - next_cost <= opts.tol * std::max(cost, 1e-300);
      if (next_cost <= cost) line = next, cost = next_cost;
      if (done) break;
    }
    best.total_iterations += it;
    best.start_costs.push_back(cost);
    if (cost < best.cost) {
      best.cost = cost;
      best.line = line;
      best.iterations = it;
      best.best_start = opts.init_angle ? 0 : static_cast<int>(s) - 1;
    }
  }
  // Polish the winner to a fixed point: the cost test above leaves a gradient of order
  // sqrt(tol), and the certificate's multipliers need stationarity to rounding.
  for (int it = 0; it < opts.max_iterations; ++it) {
    const Line next = reweighted(best.line);
    const double next_cost = gm_cost(pts, next, sigma);
    if (next_cost > best.cost * (1.0 + 1e-14)) break;
    const double move = std::abs(next.a - best.line.a) + std::abs(next.b - best.line.b) +
                        std::abs(next.c - best.line.c) / (1.0 + std::abs(next.c));
    best.line = next;
    best.cost = std::min(best.cost, next_cost);
    ++best.iterations;
    ++best.total_iterations;
    if (move <= 1e-14) break;
  }
  best.cost = gm_cost(pts, best.line, sigma);
  return best;
}

namespace {

// Best offset c for the normal at angle phi and its cost: exact mean for the squared loss, else a
// grid of spacing h over the projections' range.
std::pair<double, double> best_offset(const Points& pts, double phi, Loss loss, double sigma, double h,
                                      long& evals) {
  const double a = std::cos(phi), b = std::sin(phi);
  std::vector<double> t(pts.size());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, mean = 0.0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    t[i] = a * pts.x[i] + b * pts.y[i];
    lo = std::min(lo, t[i]);
    hi = std::max(hi, t[i]);
    mean += t[i];
  }
  const double s2 = sigma * sigma;
  auto cost_at = [&](double c) {
    ++evals;
    double s = 0.0;
    for (double ti : t) s += rho(ti - c, loss, s2);
    return s / static_cast<double>(t.size());
  };
  if (loss == Loss::squared) {
    const double c = mean / static_cast<double>(t.size());
    return {c, cost_at(c)};
  }
  std::pair<double, double> best{lo, std::numeric_limits<double>::infinity()};
  const long steps = std::max(1L, static_cast<long>(std::ceil((hi - lo) / h)));
  for (long k = 0; k <= steps; ++k) {
    const double c = lo + (hi - lo) * static_cast<double>(k) / static_cast<double>(steps);
    const double v = cost_at(c);
    if (v < best.second) best = {c, v};
  }
  return best;
}

}  // namespace

VerifyResult exhaustive_search(const Points& pts, Loss loss, double sigma) {
  check_fit_input(pts, "exhaustive search");
  double mx = 0.0, my = 0.0;
  for (std::size_t i = 0; i < pts.size(); ++i) mx += pts.x[i], my += pts.y[i];
  mx /= static_cast<double>(pts.size());
  my /= static_cast<double>(pts.size());
  double R = 0.0;
  for (std::size_t i = 0; i < pts.size(); ++i) R = std::max(R, std::hypot(pts.x[i] - mx, pts.y[i] - my));
  // Grid: offsets every sigma/4; angles so that no point moves more than sigma/4 between cells.
  const double h_c = loss == Loss::squared ? R / 100.0 : sigma / 4.0;
  const long K = std::clamp(static_cast<long>(std::ceil(M_PI * R / h_c)), 360L, 200000L);
  const double h_phi = M_PI / static_cast<double>(K);
  VerifyResult res;
  struct Cell {
    double cost, phi, c;
  };
  std::vector<Cell> cells;
  cells.reserve(K);
  for (long k = 0; k < K; ++k) {
    const double phi = h_phi * static_cast<double>(k);
    const auto [c, v] = best_offset(pts, phi, loss, sigma, h_c, res.evaluations);
    cells.push_back({v, phi, c});
  }
  // Refine the best few cells by a compass search on (phi, c) with halving steps.
  const std::size_t keep = std::min<std::size_t>(8, cells.size());
  std::partial_sort(cells.begin(), cells.begin() + static_cast<std::ptrdiff_t>(keep), cells.end(),
                    [](const Cell& x, const Cell& y) { return x.cost < y.cost; });
  auto cost_of = [&](double phi, double c) {
    ++res.evaluations;
    return mean_loss(pts, Line{std::cos(phi), std::sin(phi), c}, loss, sigma);
  };
  res.cost = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < keep; ++j) {
    double phi = cells[j].phi, c = cells[j].c, v = cost_of(phi, c);
    double sp = h_phi, sc = h_c;
    while (sp > 1e-14 || sc > 1e-14 * (1.0 + R)) {
      bool moved = false;
      for (const auto& [dp, dc] : {std::pair{sp, 0.0}, {-sp, 0.0}, {0.0, sc}, {0.0, -sc}}) {
        const double w = cost_of(phi + dp, c + dc);
        if (w < v) {
          v = w, phi += dp, c += dc, moved = true;
          break;
        }
      }
      if (!moved) sp *= 0.5, sc *= 0.5;
    }
    if (v < res.cost) res.cost = v, res.line = normalise_line(std::cos(phi), std::sin(phi), c);
  }
  return res;
}

}  // namespace core::linefit
