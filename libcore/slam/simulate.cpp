// Seeded landmark worlds (see simulate.hpp).
#include "slam/simulate.hpp"

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::slam {

namespace {

Eigen::MatrixXd exp_rotation(const Eigen::VectorXd& w) {
  if (w.size() == 1) return rotation_2d(w(0));
  const double angle = w.norm();
  if (angle == 0.0) return Eigen::Matrix3d::Identity();
  return Eigen::AngleAxisd(angle, w / angle).toRotationMatrix();
}

Eigen::VectorXd gaussian(Rng& rng, int size, double sigma) {
  Eigen::VectorXd v(size);
  for (int k = 0; k < size; ++k) v(k) = sigma * rng.normal();
  return v;
}

void write_upper_information(std::ostream& os, const Eigen::VectorXd& diagonal) {
  for (int r = 0; r < diagonal.size(); ++r)
    for (int c = r; c < diagonal.size(); ++c) os << ' ' << (r == c ? diagonal(r) : 0.0);
}

}  // namespace

World simulate_world(const WorldOptions& o) {
  const int d = o.dimension, n = o.poses, rdim = d == 2 ? 1 : 3;
  Rng rng(o.seed);
  World w;
  Estimate& x = w.truth;
  x.R.resize(d, d * n);
  x.t.resize(d, n);
  const int side = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  for (int i = 0; i < n; ++i) {
    Eigen::VectorXd p = Eigen::VectorXd::Zero(d);
    double heading;
    if (o.path == "circle") {
      const double a = 2.0 * M_PI * i / n;
      p(0) = o.radius * std::cos(a);
      p(1) = o.radius * std::sin(a);
      if (d == 3) p(2) = 0.5 * o.radius * static_cast<double>(i) / n;
      heading = a + M_PI / 2;
    } else {  // lawn-mower rows
      const int row = i / side, col = row % 2 == 0 ? i % side : side - 1 - i % side;
      p(0) = o.radius * col / std::max(side - 1, 1);
      p(1) = o.radius * row / std::max(side - 1, 1);
      heading = row % 2 == 0 ? 0.0 : M_PI;
    }
    Eigen::VectorXd angles = Eigen::VectorXd::Zero(rdim);
    angles(rdim - 1) = heading;
    if (d == 3) angles.head(2) = gaussian(rng, 2, 0.1);  // some roll and pitch
    Eigen::MatrixXd R = d == 2 ? exp_rotation(angles)
                               : Eigen::MatrixXd((Eigen::AngleAxisd(angles(2), Eigen::Vector3d::UnitZ()) *
                                                  Eigen::AngleAxisd(angles(1), Eigen::Vector3d::UnitY()) *
                                                  Eigen::AngleAxisd(angles(0), Eigen::Vector3d::UnitX()))
                                                     .toRotationMatrix());
    x.R.middleCols(d * i, d) = R;
    x.t.col(i) = p;
  }
  const Eigen::VectorXd lo = x.t.rowwise().minCoeff().array() - 0.3 * o.radius;
  const Eigen::VectorXd hi = x.t.rowwise().maxCoeff().array() + 0.3 * o.radius;
  x.m.resize(d, o.landmarks);
  for (int j = 0; j < o.landmarks; ++j)
    for (int k = 0; k < d; ++k) x.m(k, j) = lo(k) + (hi(k) - lo(k)) * rng.uniform();

  std::ostringstream g;
  g << std::setprecision(17);
  const double s = o.noise_scale;
  auto pose_edge = [&](int i, int j) {
    const Eigen::MatrixXd Ri = x.R.middleCols(d * i, d);
    const Eigen::MatrixXd Rij = Ri.transpose() * x.R.middleCols(d * j, d) * exp_rotation(gaussian(rng, rdim, s * o.rotation_sigma));
    const Eigen::VectorXd tij = Ri.transpose() * (x.t.col(j) - x.t.col(i)) + gaussian(rng, d, s * o.translation_sigma);
    Eigen::VectorXd info(d + rdim);
    info.head(d).setConstant(1.0 / (o.translation_sigma * o.translation_sigma));
    info.tail(rdim).setConstant(1.0 / (o.rotation_sigma * o.rotation_sigma));
    if (d == 2) {
      g << "EDGE_SE2 " << i << ' ' << j << ' ' << tij(0) << ' ' << tij(1) << ' ' << std::atan2(Rij(1, 0), Rij(0, 0));
    } else {
      const Eigen::Quaterniond q{Eigen::Matrix3d(Rij)};
      g << "EDGE_SE3:QUAT " << i << ' ' << j << ' ' << tij(0) << ' ' << tij(1) << ' ' << tij(2) << ' ' << q.x() << ' '
        << q.y() << ' ' << q.z() << ' ' << q.w();
    }
    write_upper_information(g, info);
    g << '\n';
  };
  for (int i = 0; i + 1 < n; ++i) pose_edge(i, i + 1);
  for (int k = 0; k < o.loop_closures; ++k) {
    const int i = static_cast<int>(rng.uniform() * n) % n;
    int j = static_cast<int>(rng.uniform() * n) % n;
    if (std::abs(i - j) < 2) j = (i + n / 2) % n;
    pose_edge(std::min(i, j), std::max(i, j));
  }
  if (d == 3) g << "PARAMS_SE3OFFSET 0 0 0 0 0 0 0 1\n";
  const Eigen::VectorXd point_info = Eigen::VectorXd::Constant(d, 1.0 / (o.landmark_sigma * o.landmark_sigma));
  std::vector<int> order(n);
  for (int j = 0; j < o.landmarks; ++j) {
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + std::min(2, n), order.end(), [&](int a, int b) {
      return (x.t.col(a) - x.m.col(j)).squaredNorm() < (x.t.col(b) - x.m.col(j)).squaredNorm();
    });
    for (int i = 0; i < n; ++i) {
      const bool nearest = i == order[0] || i == order[1];
      if (!nearest && o.sensor_range > 0 && (x.t.col(i) - x.m.col(j)).norm() > o.sensor_range) continue;
      const Eigen::VectorXd y = x.R.middleCols(d * i, d).transpose() * (x.m.col(j) - x.t.col(i)) +
                                gaussian(rng, d, s * o.landmark_sigma);
      g << (d == 2 ? "EDGE_SE2_XY " : "EDGE_SE3_TRACKXYZ ") << i << ' ' << n + j << (d == 3 ? " 0" : "");
      for (int k = 0; k < d; ++k) g << ' ' << y(k);
      write_upper_information(g, point_info);
      g << '\n';
    }
  }
  std::ostringstream vertices;
  vertices << std::setprecision(17);
  for (int i = 0; i < n; ++i) {
    const Eigen::MatrixXd R = x.R.middleCols(d * i, d);
    if (d == 2) {
      vertices << "VERTEX_SE2 " << i << ' ' << x.t(0, i) << ' ' << x.t(1, i) << ' ' << std::atan2(R(1, 0), R(0, 0)) << '\n';
    } else {
      const Eigen::Quaterniond q{Eigen::Matrix3d(R)};
      vertices << "VERTEX_SE3:QUAT " << i << ' ' << x.t(0, i) << ' ' << x.t(1, i) << ' ' << x.t(2, i) << ' ' << q.x()
               << ' ' << q.y() << ' ' << q.z() << ' ' << q.w() << '\n';
    }
  }
  for (int j = 0; j < o.landmarks; ++j) {
    vertices << (d == 2 ? "VERTEX_XY " : "VERTEX_TRACKXYZ ") << n + j;
    for (int k = 0; k < d; ++k) vertices << ' ' << x.m(k, j);
    vertices << '\n';
  }
  std::istringstream text(vertices.str() + g.str());
  w.graph = parse_g2o(text, "simulated world (seed " + std::to_string(o.seed) + ")");
  return w;
}

}  // namespace core::slam
