// Trajectory I/O, association, Umeyama alignment, ATE and RPE; the SO(3) projection of predicted poses.
#include <doctest/doctest.h>

#include <cmath>

#include "common/errors.hpp"
#include "nerf/trajectory_eval.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::nerf;
using namespace core::test;

// A helix with a turning camera: every pose differs in position and orientation.
static Trajectory helix(int n) {
  Trajectory t;
  for (int i = 0; i < n; ++i) {
    const double s = 0.1 * i;
    Pose p;
    p.t = Vec3(std::cos(s), std::sin(s), 0.05 * i);
    p.R = so3_exp(Vec3(0.1, 0.2, s));
    t.push_back({1.0 + 0.033 * i, p});
  }
  return t;
}

TEST_CASE("TUM trajectory round trip") {
  TempDir dir("nerf-traj");
  const auto t = helix(20);
  write_tum_trajectory(dir / "t.txt", t);
  const auto r = read_tum_trajectory(dir / "t.txt");
  REQUIRE(r.size() == t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    CHECK(r[i].timestamp == t[i].timestamp);
    CHECK((r[i].pose.t - t[i].pose.t).norm() < 1e-14);
    CHECK((r[i].pose.R - t[i].pose.R).norm() < 1e-14);
  }
}

TEST_CASE("malformed TUM files name the file and line") {
  TempDir dir("nerf-traj-bad");
  auto expect = [&](const std::string& text, const std::string& fragment) {
    write_text(dir / "b.txt", text);
    try {
      read_tum_trajectory(dir / "b.txt");
      FAIL("no error for " << text);
    } catch (const DataError& e) {
      CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    }
  };
  expect("# c\n1 0 0 0 0 0 0 1\n2 0 0 0 0 0\n", "b.txt:3");
  expect("1 0 0 0 0 0 0 1\n2 0 0 nan 0 0 0 1\n", "non-finite");
  expect("1 0 0 0 0 0 0 2\n", "norm");
  expect("2 0 0 0 0 0 0 1\n1 0 0 0 0 0 0 1\n", "does not increase");
  expect("# only a comment\n", "empty");
  CHECK_THROWS_AS(read_tum_trajectory(dir / "missing.txt"), InputMissingError);
}

TEST_CASE("Umeyama recovers a known similarity; ATE and RPE vanish under a rigid change of frame") {
  const auto gt = helix(40);
  Similarity S;
  S.R = so3_exp(Vec3(0.3, -1.1, 2.0));
  S.t = Vec3(4, -2, 0.5);
  S.s = 1.0;
  Trajectory est;
  const Pose T{S.R, S.t};
  for (const auto& sp : gt) est.push_back({sp.timestamp + 0.004, T * sp.pose});  // estimate in another frame
  const auto e = evaluate_trajectory(est, gt);
  CHECK(e.pairs == 40);
  CHECK(e.ate_rmse < 1e-12);
  CHECK(e.rpe_trans < 1e-12);
  CHECK(e.rpe_rot_deg < 1e-5);
  CHECK((e.alignment.R - S.R.transpose()).norm() < 1e-12);  // maps the estimate back to ground truth

  // Scale: sim3 alignment recovers s = 2.5 exactly; se3 alignment leaves a large error.
  std::vector<Vec3> src, dst;
  for (const auto& sp : gt) {
    src.push_back(sp.pose.t);
    dst.push_back(2.5 * (S.R * sp.pose.t) + S.t);
  }
  const auto sim = umeyama_alignment(src, dst, true);
  CHECK(sim.s == doctest::Approx(2.5).epsilon(1e-12));
  CHECK((sim.t - S.t).norm() < 1e-11);
}

TEST_CASE("ATE of a known offset; RPE of a known relative error") {
  // Positions displaced by +d and -d alternately along z of a planar circle: the best rigid alignment
  // is the identity by symmetry (the displacements sum to zero and are orthogonal to the plane's
  // spread), so ATE is exactly d.
  Trajectory gt, est;
  const double d = 0.03;
  for (int i = 0; i < 40; ++i) {
    const double a = 2 * M_PI * i / 40.0;
    Pose p;
    p.t = Vec3(std::cos(a), std::sin(a), 0);
    gt.push_back({double(i), p});
    Pose q = p;
    q.t.z() += (i % 2 ? d : -d);
    est.push_back({double(i), q});
  }
  const auto e = evaluate_trajectory(est, gt);
  CHECK(e.ate_rmse == doctest::Approx(d).epsilon(1e-9));
  CHECK(e.ate_max == doctest::Approx(d).epsilon(1e-9));
  // Each relative motion is off by 2d along z (orientation identity): RPE translation 2d, rotation 0.
  CHECK(e.rpe_trans == doctest::Approx(2 * d).epsilon(1e-9));
  CHECK(e.rpe_rot_deg < 1e-6);
}

TEST_CASE("TUM pair from shared/datasets matches an independent numpy evaluation") {
  if (!have_dataset("trajectories/tum_groundtruth.txt")) return;
  const auto est = read_tum_trajectory(datasets_dir() / "trajectories/tum_estimated.txt");
  const auto gt = read_tum_trajectory(datasets_dir() / "trajectories/tum_groundtruth.txt");
  const auto e = evaluate_trajectory(est, gt);
  // Reference: numpy (greedy association within 0.02 s, SVD alignment without scale, RMSEs), run once
  // by hand: 612 pairs, ATE 0.023089992645, RPE 0.031004442397 m / 2.900970846031 deg.
  CHECK(e.pairs == 612);
  CHECK(e.ate_rmse == doctest::Approx(0.023089992645).epsilon(1e-9));
  CHECK(e.rpe_trans == doctest::Approx(0.031004442397).epsilon(1e-9));
  CHECK(e.rpe_rot_deg == doctest::Approx(2.900970846031).epsilon(1e-8));
}

TEST_CASE("too few associated poses is a data error") {
  auto gt = helix(10), est = helix(10);
  for (auto& sp : est) sp.timestamp += 100;
  CHECK_THROWS_AS(evaluate_trajectory(est, gt), DataError);
}

TEST_CASE("constant-velocity composition stays on SO(3) only when projected (nearest_rotation)") {
  // R_{n+1} = R_n R_{n-1}^T R_n, the constant-velocity prediction, amplifies a deviation from orthonormality
  // by about 1 + sqrt(2) per step; nearest_rotation puts it back.
  const auto off_so3 = [](const Mat3& R) { return (R.transpose() * R - Mat3::Identity()).norm(); };
  Mat3 perturbed = so3_exp(Vec3(0.3, -0.2, 0.5));
  perturbed(0, 1) += 1e-12;
  for (bool project : {false, true}) {
    Mat3 prev = so3_exp(Vec3(0.29, -0.21, 0.5)), cur = perturbed;
    for (int n = 0; n < 30; ++n) {
      Mat3 next = cur * prev.transpose() * cur;
      if (project) next = nearest_rotation(next);
      prev = cur;
      cur = next;
    }
    CAPTURE(project);
    if (project) {
      CHECK(off_so3(cur) < 1e-12);
      CHECK(cur.determinant() == doctest::Approx(1.0));
    } else {
      CHECK(off_so3(cur) > 1e-3);
    }
  }
  // Projection of a rotation is the identity map; of a scaled and sheared one, the nearest rotation.
  const Mat3 R = so3_exp(Vec3(-1.0, 2.0, 0.4));
  CHECK((nearest_rotation(R) - R).norm() < 1e-12);
  CHECK((nearest_rotation(1.3 * R) - R).norm() < 1e-12);
  Mat3 S = Mat3::Identity();
  S(0, 1) = S(1, 0) = 1e-3;  // symmetric stretch: the polar factor of R S is R
  CHECK((nearest_rotation(R * S) - R).norm() < 1e-9);
}
