#include "rangeloc/interpolate.hpp"

#include <algorithm>
#include <cmath>

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

double rmse(const Trajectory& states, Prior prior, const Trajectory& gt, int axes) {
  const Eigen::MatrixXd p = interpolate_positions(states, prior, gt.times);
  const int k = axes < 0 ? gt.dim() : axes;
  return std::sqrt((p - gt.positions).topRows(k).colwise().squaredNorm().mean());
}

}  // namespace core::rangeloc
