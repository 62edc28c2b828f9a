// IMU preintegration (Forster et al. 2017): exact on noise-free spline motion as the sample rate grows
// (first-order convergence of the piecewise-constant hold), bias Jacobians against central differences,
// the propagated covariance against a Monte Carlo estimate, the imu.txt reader on malformed lines, and the
// gradient of the IMU pose factor tracking adds, and the factor between keyframes that mapping adds.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "nerf/imu_preintegration.hpp"
#include "nerf/slam.hpp"
#include "nerf/synthetic.hpp"

using namespace core;
using namespace core::nerf;

namespace {

// Position and rotation error of the state at t1 predicted from the exact state at t0.
std::pair<double, double> prediction_error(double rate) {
  SynthOptions o;
  o.noise = false;
  o.imu_rate = rate;
  const SyntheticScene scene(3, "fast-textureless");
  const SplineTrajectory traj(3, 2.0, 0.75, scene);
  const double t0 = 0.6, t1 = t0 + 1.0 / 15;
  const auto imu = synthesize_imu(traj, o, 0.0, 2.0);
  ImuPreintegration pre(ImuBias{}, ImuNoise{});
  pre.integrate(imu, t0, t1);
  CHECK(pre.dt() == doctest::Approx(t1 - t0).epsilon(1e-12));
  const TrajectorySample a = traj.at(t0), b = traj.at(t1);
  Pose pj;
  Vec3 vj;
  pre.predict(a.pose, a.velocity, ImuBias{}, pj, vj);
  CHECK(pre.residual(a.pose, a.velocity, pj, vj, ImuBias{}).norm() < 1e-12);
  return {(pj.t - b.pose.t).norm() + (vj - b.velocity).norm() / 15, rotation_angle(pj.R.transpose() * b.pose.R)};
}

}  // namespace

TEST_CASE("preintegration of noise-free spline IMU data predicts the next state exactly in the limit") {
  const auto [p1, r1] = prediction_error(2000);
  const auto [p2, r2] = prediction_error(8000);
  MESSAGE("2 kHz: " << p1 << " m, " << r1 << " rad; 8 kHz: " << p2 << " m, " << r2 << " rad");
  CHECK(p2 < 2e-5);
  CHECK(r2 < 2e-5);
  CHECK(p1 / p2 > 3.0);  // first order: four times the rate, a quarter of the error
  CHECK(r1 / r2 > 3.0);
}

TEST_CASE("bias Jacobians match central differences of re-integrated deltas") {
  Rng rng(4);
  std::vector<ImuSample> s;
  for (int k = 0; k < 14; ++k)
    s.push_back({k / 200.0, Vec3(0.8, -0.5, 1.1) + 0.3 * Vec3(rng.normal(), rng.normal(), rng.normal()),
                 Vec3(0.5, -9.0, 2.0) + Vec3(rng.normal(), rng.normal(), rng.normal())});
  const ImuBias b0{Vec3(0.01, -0.02, 0.005), Vec3(0.05, 0.02, -0.04)};
  ImuPreintegration pre(b0, ImuNoise{});
  pre.integrate(s, 0.0, 13 / 200.0);
  const double h = 1e-6;
  for (int k = 0; k < 6; ++k) {
    CAPTURE(k);
    ImuBias bp = b0, bm = b0;
    (k < 3 ? bp.gyro : bp.accel)[k % 3] += h;
    (k < 3 ? bm.gyro : bm.accel)[k % 3] -= h;
    ImuPreintegration pp(bp, ImuNoise{}), pm(bm, ImuNoise{});
    pp.integrate(s, 0.0, 13 / 200.0);
    pm.integrate(s, 0.0, 13 / 200.0);
    const Vec3 dR = so3_log(pm.delta_R(bm).transpose() * pp.delta_R(bp)) / (2 * h);
    const Vec3 dv = (pp.delta_v(bp) - pm.delta_v(bm)) / (2 * h), dp = (pp.delta_p(bp) - pm.delta_p(bm)) / (2 * h);
    const Vec3 jR = k < 3 ? Vec3(pre.dR_dbg().col(k)) : Vec3::Zero();
    const Vec3 jv = k < 3 ? pre.dv_dbg().col(k) : pre.dv_dba().col(k - 3);
    const Vec3 jp = k < 3 ? pre.dp_dbg().col(k) : pre.dp_dba().col(k - 3);
    CHECK((dR - jR).norm() < 1e-6 * std::max(1.0, jR.norm()));
    CHECK((dv - jv).norm() < 1e-6 * std::max(1.0, jv.norm()));
    CHECK((dp - jp).norm() < 1e-6 * std::max(1.0, jp.norm()));
    CHECK(jv.norm() > 1e-3);
  }
  // First-order correction: a small bias change moves the deltas as re-integration does, to second order.
  ImuBias b1 = b0;
  b1.gyro += Vec3(2e-3, -1e-3, 1e-3);
  b1.accel += Vec3(-0.02, 0.01, 0.03);
  ImuPreintegration p1(b1, ImuNoise{});
  p1.integrate(s, 0.0, 13 / 200.0);
  CHECK((pre.delta_v(b1) - p1.delta_v(b1)).norm() < 1e-5);
  CHECK((pre.delta_p(b1) - p1.delta_p(b1)).norm() < 1e-6);
  CHECK(so3_log(pre.delta_R(b1).transpose() * p1.delta_R(b1)).norm() < 1e-6);
}

TEST_CASE("propagated covariance matches a Monte Carlo estimate") {
  const ImuNoise noise{0.02, 0.3};
  std::vector<ImuSample> s;
  for (int k = 0; k < 14; ++k) s.push_back({k / 200.0, Vec3(1.0, -2.0, 0.5), Vec3(2.0, -9.0, 3.0)});
  ImuPreintegration mean(ImuBias{}, noise);
  mean.integrate(s, 0.0, 13 / 200.0);
  Rng rng(9);
  const int draws = 4000;
  Mat9 C = Mat9::Zero();
  for (int n = 0; n < draws; ++n) {
    std::vector<ImuSample> noisy = s;
    for (auto& m : noisy) {
      m.gyro += noise.gyro * Vec3(rng.normal(), rng.normal(), rng.normal());
      m.accel += noise.accel * Vec3(rng.normal(), rng.normal(), rng.normal());
    }
    ImuPreintegration p(ImuBias{}, noise);
    p.integrate(noisy, 0.0, 13 / 200.0);
    Vec9 e;  // the error in the tangent space of eq. 42: Delta R_meas = Delta R Exp(delta phi), ...
    e.segment<3>(0) = so3_log(mean.delta_R(ImuBias{}).transpose() * p.delta_R(ImuBias{}));
    e.segment<3>(3) = p.delta_v(ImuBias{}) - mean.delta_v(ImuBias{});
    e.segment<3>(6) = p.delta_p(ImuBias{}) - mean.delta_p(ImuBias{});
    C += e * e.transpose() / draws;
  }
  const Mat9& P = mean.covariance();
  for (int i = 0; i < 9; ++i) {
    CAPTURE(i);
    CHECK(C(i, i) == doctest::Approx(P(i, i)).epsilon(0.1));  // 4000 draws: about 2% standard error
  }
  CHECK((C - P).norm() < 0.1 * P.norm());
}

TEST_CASE("imu.txt: malformed lines and missing files") {
  const auto dir = std::filesystem::temp_directory_path() / "nerf_imu_test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "good.txt") << "# t wx wy wz ax ay az\n1.0 0 0 0 0 0 9.81\n1.005 0.1 0 0 0 0 9.81\n";
    std::ofstream(dir / "short.txt") << "1.0 0 0 0 0 0 9.81\n1.005 0.1 0 0 0 0\n";
    std::ofstream(dir / "order.txt") << "1.0 0 0 0 0 0 9.81\n0.9 0.1 0 0 0 0 9.81\n";
  }
  CHECK(read_imu_file(dir / "good.txt").size() == 2);
  CHECK_THROWS_AS(read_imu_file(dir / "short.txt"), DataError);
  CHECK_THROWS_WITH_AS(read_imu_file(dir / "short.txt"), doctest::Contains("short.txt:2"), DataError);
  CHECK_THROWS_AS(read_imu_file(dir / "order.txt"), DataError);
  CHECK_THROWS_AS(read_imu_file(dir / "missing.txt"), InputMissingError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("the IMU pose factor's gradient matches central differences") {
  PosePrior prior;
  prior.mean.R = so3_exp(Vec3(0.3, -0.2, 0.5));
  prior.mean.t = Vec3(0.4, 1.1, -0.3);
  prior.frame = so3_exp(Vec3(-0.1, 0.7, 0.2));
  Eigen::Matrix<double, 6, 6> A = Eigen::Matrix<double, 6, 6>::Random();
  prior.information = A * A.transpose() + Eigen::Matrix<double, 6, 6>::Identity();
  prior.weight = 0.7;
  Pose p;
  p.R = so3_exp(Vec3(0.05, 0.1, -0.08)) * prior.mean.R;
  p.t = prior.mean.t + Vec3(0.03, -0.02, 0.05);
  Vec3 g_rot, g_trans;
  const double c = prior.cost(p, &g_rot, &g_trans);
  CHECK(c > 0);
  CHECK(prior.cost(prior.mean, nullptr, nullptr) == doctest::Approx(0.0));
  const double h = 1e-6;
  for (int a = 0; a < 6; ++a) {
    CAPTURE(a);
    Vec3 d = Vec3::Zero();
    d[a % 3] = h;
    Pose pp = p, pm = p;
    if (a < 3) {
      pp.R = so3_exp(d) * p.R;
      pm.R = so3_exp(-d) * p.R;
    } else {
      pp.t += d;
      pm.t -= d;
    }
    const double numeric = (prior.cost(pp, nullptr, nullptr) - prior.cost(pm, nullptr, nullptr)) / (2 * h);
    const double analytic = a < 3 ? g_rot[a] : g_trans[a - 3];
    CHECK(analytic == doctest::Approx(numeric).epsilon(1e-6));
  }
}

TEST_CASE("IMU disabled: samples are ignored and the run is bit-identical; enabled: velocities follow the motion") {
  SynthOptions so;
  so.frames = 4;
  so.width = 40;
  so.height = 30;
  so.seed = 5;
  const SyntheticSequence seq = synthesize_frames(so);
  const SyntheticScene scene(so.seed, so.variant);
  const SplineTrajectory traj(so.seed, (so.frames - 1) / so.fps, so.speed, scene);
  std::vector<ImuSample> imu = synthesize_imu(traj, so, 0.0, (so.frames - 1) / so.fps);
  for (auto& m : imu) m.timestamp += seq.frames[0].timestamp;  // on the frames' clock
  SlamOptions o;
  o.decoders = "none";
  o.model.channels = 4;
  o.model.hidden = 8;
  o.model.voxel_middle = 0.64;
  o.model.voxel_fine = o.model.voxel_colour = 0.32;
  o.sampling.stratified = 8;
  o.sampling.surface = 4;
  o.tracking.iterations = 3;
  o.tracking.pixels = 50;
  o.mapping.iterations = 4;
  o.mapping.first_iterations = 4;
  o.mapping.pixels = 100;
  o.mapping.every = 2;
  auto run = [&](const SlamOptions& opt, bool give_imu) {
    Vec3 lo, hi;
    slam_bound(opt, seq.camera, seq.frames[0], *seq.frames[0].groundtruth, lo, hi);
    NiceModel<float> model;
    model.init(opt.model, lo, hi, 1);
    auto slam = std::make_unique<NiceSlam>(opt, seq.camera, model);
    if (give_imu) slam->set_imu(imu);
    for (const auto& f : seq.frames) slam->process(f);
    return slam;
  };
  const auto a = run(o, false), b = run(o, true);
  for (std::size_t i = 0; i < seq.frames.size(); ++i) {
    CHECK(a->trajectory()[i].pose.t == b->trajectory()[i].pose.t);
    CHECK(a->trajectory()[i].pose.R == b->trajectory()[i].pose.R);
  }
  CHECK(b->velocities().empty());
  SlamOptions with = o;
  with.imu.enabled = true;
  const auto c = run(with, true);
  REQUIRE(c->velocities().size() == seq.frames.size());
  // The window's velocities are finite and of the motion's magnitude (about speed; exact poses not given).
  for (const Vec3& v : c->velocities()) {
    CHECK(v.allFinite());
    CHECK(v.norm() < 10 * so.speed);
  }
}

TEST_CASE("the keyframe IMU factor: zero at the true states of noise-free motion, gradients match central differences") {
  SynthOptions o;
  o.noise = false;
  o.imu_rate = 8000;
  const SyntheticScene scene(3, "fast-textureless");
  const SplineTrajectory traj(3, 2.0, 0.75, scene);
  const auto imu = synthesize_imu(traj, o, 0.0, 2.0);
  const double t0 = 0.5, t1 = t0 + 5.0 / 15;  // five frame intervals apart, as keyframes are
  ImuPreintegration pre(ImuBias{}, ImuNoise{});
  pre.integrate(imu, t0, t1);
  const TrajectorySample a = traj.at(t0), b = traj.at(t1);
  Eigen::Matrix<double, 6, 6> A = Eigen::Matrix<double, 6, 6>::Random();
  const Eigen::Matrix<double, 6, 6> information = A * A.transpose() + Eigen::Matrix<double, 6, 6>::Identity();
  const KeyframeImuFactor factor(0, 1, pre, ImuBias{}, a.velocity, information, 0.3);
  // The same residual rows as the preintegration's own (eq. 45), and near zero at the true states.
  const Vec9 full = pre.residual(a.pose, a.velocity, b.pose, b.velocity, ImuBias{});
  const Eigen::Matrix<double, 6, 1> r = factor.residual(a.pose, b.pose);
  CHECK((r.head<3>() - full.head<3>()).norm() < 1e-12);
  CHECK((r.tail<3>() - full.tail<3>()).norm() < 1e-12);
  MESSAGE("residual at the true states over 1/3 s: " << r.norm());
  CHECK(r.norm() < 1e-3);
  // Gradients at perturbed poses.
  Pose pi = a.pose, pj = b.pose;
  pi.R = so3_exp(Vec3(0.04, -0.03, 0.05)) * pi.R;
  pi.t += Vec3(0.02, 0.01, -0.03);
  pj.R = so3_exp(Vec3(-0.02, 0.06, 0.01)) * pj.R;
  pj.t += Vec3(-0.04, 0.02, 0.01);
  PoseGradient gi, gj;
  CHECK(factor.cost(pi, pj, &gi, &gj) > 0);
  const double h = 1e-6;
  for (int a6 = 0; a6 < 12; ++a6) {
    CAPTURE(a6);
    const bool second = a6 >= 6;
    const int k = a6 % 6;
    Vec3 d = Vec3::Zero();
    d[k % 3] = h;
    auto moved = [&](double sign) {
      Pose qi = pi, qj = pj;
      Pose& q = second ? qj : qi;
      if (k < 3)
        q.R = so3_exp(sign * d) * q.R;
      else
        q.t += sign * d;
      return factor.cost(qi, qj, nullptr, nullptr);
    };
    const double numeric = (moved(1) - moved(-1)) / (2 * h);
    const PoseGradient& g = second ? gj : gi;
    const double analytic = k < 3 ? g.rotation[k] : g.translation[k - 3];
    CHECK(analytic == doctest::Approx(numeric).epsilon(1e-6));
  }
}
