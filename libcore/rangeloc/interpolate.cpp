#include "rangeloc/interpolate.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "io/csv.hpp"

namespace core::rangeloc {

Eigen::MatrixXd interpolate_positions(const Trajectory& st, Prior prior, const std::vector<double>& query) {
  const int d = st.dim(), n = st.size();
  Eigen::MatrixXd out(d, query.size());
  for (std::size_t q = 0; q < query.size(); ++q) {
    const double tau = query[q];
    const auto it = std::upper_bound(st.times.begin(), st.times.end(), tau);
    const int hi = static_cast<int>(it - st.times.begin());  // first state after tau
    if (hi == 0 || hi == n) {
      const int i = hi == 0 ? 0 : n - 1;
      out.col(q) = st.positions.col(i);
      if (prior == Prior::cv) out.col(q) += (tau - st.times[i]) * st.velocities.col(i);
      continue;
    }
    const int lo = hi - 1;
    const double dt = st.times[hi] - st.times[lo], s = tau - st.times[lo];
    if (prior != Prior::cv) {
      out.col(q) = st.positions.col(lo) + (s / dt) * (st.positions.col(hi) - st.positions.col(lo));
      continue;
    }
    auto qm = [](double x) {
      Eigen::Matrix2d m;
      m << x * x * x / 3.0, x * x / 2.0, x * x / 2.0, x;
      return m;
    };
    auto phi = [](double x) {
      Eigen::Matrix2d m;
      m << 1.0, x, 0.0, 1.0;
      return m;
    };
    const Eigen::Matrix2d psi = qm(s) * phi(dt - s).transpose() * qm(dt).inverse();
    const Eigen::Matrix2d lambda = phi(s) - psi * phi(dt);
    for (int k = 0; k < d; ++k) {
      const Eigen::Vector2d a(st.positions(k, lo), st.velocities(k, lo)), b(st.positions(k, hi), st.velocities(k, hi));
      out(k, q) = (lambda * a + psi * b)(0);
    }
  }
  return out;
}

std::vector<double> read_query_times(const std::filesystem::path& times_file) {
  const io::NumericTable t = io::read_numeric_csv(times_file);
  std::size_t col = 0;
  if (t.cols > 1) {
    const auto it = std::find(t.columns.begin(), t.columns.end(), "t");
    if (it == t.columns.end())
      throw DataError(times_file.string() + ": " + std::to_string(t.cols) +
                      " columns and none named 't' (give one column of times, or a header with a 't' column)");
    col = static_cast<std::size_t>(it - t.columns.begin());
  }
  std::vector<double> times;
  times.reserve(t.rows);
  for (std::size_t r = 0; r < t.rows; ++r) times.push_back(t.at(r, col));
  return times;
}

std::vector<double> query_grid(const Trajectory& st, double dt) {
  std::vector<double> times;
  if (!(dt > 0) || st.size() == 0) return times;
  const double t0 = st.times.front(), t1 = st.times.back();
  const double steps = std::floor((t1 - t0) / dt * (1.0 + 1e-12));
  if (steps > 1e8) throw UsageError("a query step of " + std::to_string(dt) + " s gives more than 10^8 query times");
  for (long long k = 0; k <= static_cast<long long>(steps); ++k) times.push_back(t0 + static_cast<double>(k) * dt);
  return times;
}

Trajectory query_trajectory(const Trajectory& states, Prior prior, const std::vector<double>& times) {
  Trajectory out;
  out.times = times;
  out.positions = interpolate_positions(states, prior, times);
  return out;
}

double rmse(const Trajectory& states, Prior prior, const Trajectory& gt, int axes) {
  const Eigen::MatrixXd p = interpolate_positions(states, prior, gt.times);
  const int k = axes < 0 ? gt.dim() : axes;
  return std::sqrt((p - gt.positions).topRows(k).colwise().squaredNorm().mean());
}

}  // namespace core::rangeloc
