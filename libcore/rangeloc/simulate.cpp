#include "rangeloc/simulate.hpp"

#include <cmath>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::rangeloc {

void SimOptions::validate() const {
  if (ranges == "2" && anchors < 2) throw UsageError("config key 'ranges': 2 ranges per time need at least 2 anchors");
  if (anchors < dim + 1)
    throw UsageError("config key 'anchors': " + std::to_string(dim) + "-D localization needs at least " +
                     std::to_string(dim + 1) + " anchors");
  if (planar_anchors && dim != 3) throw UsageError("config key 'planar_anchors' applies to dim 3 only");
}

void SimCommandOptions::validate() const {
  SimOptions::validate();
  if (output.empty()) throw UsageError("config key 'output' (--output) is required: the dataset folder to write");
}

Dataset simulate(const SimOptions& o) {
  o.validate();
  Rng rng(o.seed);
  Dataset data;
  data.source = "simulated (seed " + std::to_string(o.seed) + ")";
  data.dim = o.dim;
  Trajectory& gt = data.groundtruth;
  gt.times.resize(o.n);
  gt.positions.resize(o.dim, o.n);
  gt.velocities.resize(o.dim, o.n);
  gt.positions.col(0).setOnes();
  gt.velocities.col(0).setOnes();
  gt.times[0] = 0.0;
  for (int i = 1; i < o.n; ++i) {
    gt.times[i] = i * o.dt;
    gt.positions.col(i) = gt.positions.col(i - 1) + o.dt * gt.velocities.col(i - 1);
    for (int k = 0; k < o.dim; ++k)
      gt.velocities(k, i) = gt.velocities(k, i - 1) + o.sigma_a * std::sqrt(o.dt) * rng.normal();
  }
  data.times = gt.times;

  const Eigen::VectorXd lo = gt.positions.rowwise().minCoeff(), hi = gt.positions.rowwise().maxCoeff();
  data.anchors.resize(o.dim, o.anchors);
  const double height = lo(o.dim - 1) + rng.uniform() * (hi(o.dim - 1) - lo(o.dim - 1));
  for (int j = 0; j < o.anchors; ++j) {
    data.anchor_ids.push_back(j);
    for (int k = 0; k < o.dim; ++k) data.anchors(k, j) = lo(k) + rng.uniform() * (hi(k) - lo(k));
    if (o.planar_anchors) data.anchors(o.dim - 1, j) = height;
  }

  const int per_time = o.ranges == "all" ? o.anchors : std::stoi(o.ranges);
  data.measurements.reserve(static_cast<std::size_t>(o.n) * per_time);
  int next_anchor = 0;
  for (int i = 0; i < o.n; ++i)
    for (int r = 0; r < per_time; ++r) {
      const int j = per_time == o.anchors ? r : next_anchor++ % o.anchors;
      const double range = (data.anchors.col(j) - gt.positions.col(i)).norm() + o.sigma_d * rng.normal();
      data.measurements.push_back({i, j, std::abs(range)});
    }
  check_measurements(data, data.source);
  return data;
}

}  // namespace core::rangeloc
