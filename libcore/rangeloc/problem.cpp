#include "rangeloc/problem.hpp"

#include "common/errors.hpp"

namespace core::rangeloc {

Prior parse_prior(const std::string& name) {
  if (name == "cv") return Prior::cv;
  if (name == "zv") return Prior::zv;
  if (name == "none") return Prior::none;
  throw UsageError("unknown prior '" + name + "' (cv, zv or none)");
}

const char* to_string(Prior prior) {
  switch (prior) {
    case Prior::cv: return "cv";
    case Prior::zv: return "zv";
    case Prior::none: return "none";
  }
  return "?";
}

Problem::Problem(const Dataset& data, Prior prior, double sigma_d, double sigma_a)
    : d_(data.dim),
      prior_(prior),
      anchors_(data.anchors),
      times_(data.times),
      measurements_(data.measurements),
      data_weight_(1.0 / (static_cast<double>(data.measurements.size()) * sigma_d * sigma_d)),
      sigma_a_(sigma_a) {
  if (!(sigma_d > 0) || !(sigma_a > 0)) throw UsageError("sigma_d and sigma_a must be > 0");
  first_.assign(times_.size() + 1, 0);
  for (const auto& m : measurements_) ++first_[m.state + 1];
  for (std::size_t n = 0; n < times_.size(); ++n) first_[n + 1] += first_[n];
}

void Problem::prior_blocks(int n, SmallMatrix& phi, SmallMatrix& weight) const {
  const int k = state_size();
  const double dt = times_[n + 1] - times_[n], scale = 1.0 / (sigma_a_ * sigma_a_ * states());
  phi.setIdentity(k, k);
  weight.setZero(k, k);
  if (prior_ == Prior::cv) {
    for (int i = 0; i < d_; ++i) {
      phi(i, d_ + i) = dt;
      weight(i, i) = 12.0 / (dt * dt * dt) * scale;
      weight(i, d_ + i) = weight(d_ + i, i) = -6.0 / (dt * dt) * scale;
      weight(d_ + i, d_ + i) = 4.0 / dt * scale;
    }
  } else if (prior_ == Prior::zv) {
    weight.diagonal().setConstant(scale);
  }
}

CostParts Problem::cost(const Eigen::VectorXd& theta) const {
  CostParts c;
  const int k = state_size();
  for (int n = 0; n < states(); ++n) {
    const SmallVector p = positions(theta, n);
    for (int i = first_[n]; i < first_[n + 1]; ++i) {
      const auto& m = measurements_[i];
      const double e = m.range * m.range - (anchors_.col(m.anchor) - p).squaredNorm();
      c.data += data_weight_ * e * e;
    }
  }
  if (prior_ == Prior::none) return c;
  SmallMatrix phi, w;
  SmallVector u;
  for (int n = 0; n + 1 < states(); ++n) {
    prior_blocks(n, phi, w);
    u = theta.segment((n + 1) * k, k) - phi * theta.segment(n * k, k);
    c.prior += u.dot(w * u);
  }
  return c;
}

CostParts Problem::linearize(const Eigen::VectorXd& theta, BlockTridiagonal& a, Eigen::VectorXd& b) const {
  const int k = state_size(), N = states();
  if (a.blocks() != N || a.block_size() != k) a = BlockTridiagonal(N, k);
  a.set_zero();
  b.setZero(variables());
  CostParts c;
  SmallVector jac(d_);
  for (int n = 0; n < N; ++n) {
    const SmallVector p = positions(theta, n);
    auto ann = a.diag(n).topLeftCorner(d_, d_);
    auto bn = b.segment(n * k, d_);
    for (int i = first_[n]; i < first_[n + 1]; ++i) {
      const auto& m = measurements_[i];
      jac = 2.0 * (anchors_.col(m.anchor) - p);  // d e / d p of e = r^2 - ||a - p||^2
      const double e = m.range * m.range - (anchors_.col(m.anchor) - p).squaredNorm();
      c.data += data_weight_ * e * e;
      ann.noalias() += data_weight_ * jac * jac.transpose();
      bn += data_weight_ * e * jac;
    }
  }
  if (prior_ == Prior::none) return c;
  SmallMatrix phi, w, wphi;
  SmallVector u, wu;
  for (int n = 0; n + 1 < N; ++n) {
    prior_blocks(n, phi, w);
    u = theta.segment((n + 1) * k, k) - phi * theta.segment(n * k, k);
    wu = w * u;
    c.prior += u.dot(wu);
    wphi = w * phi;
    a.diag(n).noalias() += phi.transpose() * wphi;
    a.diag(n + 1) += w;
    a.upper(n) -= wphi.transpose();
    b.segment(n * k, k).noalias() -= phi.transpose() * wu;
    b.segment((n + 1) * k, k) += wu;
  }
  return c;
}

Eigen::VectorXd Problem::gradient(const Eigen::VectorXd& theta) const {
  BlockTridiagonal a;
  Eigen::VectorXd b;
  linearize(theta, a, b);
  return 2.0 * b;
}

Eigen::VectorXd Problem::state_vector(const Trajectory& t) const {
  if (t.size() != states() || t.dim() != d_)
    throw DataError("a trajectory of " + std::to_string(t.size()) + " states in " + std::to_string(t.dim()) +
                    "-D does not match the problem's " + std::to_string(states()) + " states in " + std::to_string(d_) + "-D");
  const int k = state_size();
  Eigen::VectorXd theta(variables());
  for (int n = 0; n < states(); ++n) {
    theta.segment(n * k, d_) = t.positions.col(n);
    if (prior_ == Prior::cv) theta.segment(n * k + d_, d_) = t.velocities.col(n);
  }
  return theta;
}

Trajectory Problem::trajectory(const Eigen::VectorXd& theta) const {
  const int k = state_size();
  Trajectory t;
  t.times = times_;
  t.positions.resize(d_, states());
  for (int n = 0; n < states(); ++n) t.positions.col(n) = theta.segment(n * k, d_);
  if (prior_ == Prior::cv) {
    t.velocities.resize(d_, states());
    for (int n = 0; n < states(); ++n) t.velocities.col(n) = theta.segment(n * k + d_, d_);
  }
  return t;
}

}  // namespace core::rangeloc
