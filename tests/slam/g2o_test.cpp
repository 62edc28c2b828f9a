// The g2o reader: SE-Sync's weights, landmarks, vertex estimates, and every kind of bad input.
#include <doctest/doctest.h>

#include <Eigen/Geometry>

#include <cmath>
#include <string>

#include "common/errors.hpp"
#include "slam/g2o.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::slam;
using core::test::TempDir;
using core::test::write_text;

namespace {

G2oGraph read_text(const TempDir& dir, const std::string& text) {
  const auto path = dir / "g.g2o";
  write_text(path, text);
  return read_g2o(path);
}

// The exit code and message of reading `text`.
std::pair<ExitCode, std::string> failure(const std::string& text) {
  TempDir dir("g2o-bad");
  try {
    read_text(dir, text);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ExitCode::ok, ""};
}

}  // namespace

TEST_CASE("EDGE_SE2: tau = 2 / tr(I_t^-1), kappa = I33 (SE-Sync's reader)") {
  TempDir dir("g2o-se2");
  const auto g = read_text(dir,
                           "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 1 2 0.5\n\n"
                           "EDGE_SE2 0 1 1 2 0.5 4 1 0 3 0 7\n"
                           "FIX 0\n\n");
  const Problem& p = g.problem;
  REQUIRE(p.d == 2);
  REQUIRE(p.num_poses() == 2);
  REQUIRE(p.pose_edges.size() == 1);  // blank lines add nothing (SE-Sync's reader repeats the edge there)
  const PoseEdge& e = p.pose_edges[0];
  Eigen::Matrix2d It;
  It << 4, 1, 1, 3;
  CHECK(e.tau == doctest::Approx(2.0 / It.inverse().trace()).epsilon(1e-14));
  CHECK(e.kappa == 7.0);
  CHECK((e.R - Eigen::Rotation2Dd(0.5).toRotationMatrix()).norm() < 1e-15);
  CHECK(e.t(1) == 2.0);
  CHECK(g.skipped_tags == std::vector<std::string>{"FIX"});
  CHECK(g.initial.t(0, 1) == 1.0);
  CHECK(std::abs(g.initial.R(1, 2) - std::sin(0.5)) < 1e-15);
}

TEST_CASE("EDGE_SE3:QUAT: tau = 3 / tr(I_t^-1), kappa = 3 / (2 tr(I_R^-1)); quaternion normalised") {
  TempDir dir("g2o-se3");
  // Information diag(1, 2, 4, 10, 20, 40) with one off-diagonal term in each block.
  const auto g = read_text(dir,
                           "EDGE_SE3:QUAT 3 5 1 2 3 0 0 0.7071067811865476 0.7071067811865476 "
                           "1 0.5 0 0 0 0  2 0 0 0 0  4 0 0 0  10 0 0  20 3  40\n");
  const PoseEdge& e = g.problem.pose_edges.at(0);
  Eigen::Matrix3d It, Ir;
  It << 1, 0.5, 0, 0.5, 2, 0, 0, 0, 4;
  Ir << 10, 0, 0, 0, 20, 3, 0, 3, 40;
  CHECK(e.tau == doctest::Approx(3.0 / It.inverse().trace()).epsilon(1e-14));
  CHECK(e.kappa == doctest::Approx(3.0 / (2.0 * Ir.inverse().trace())).epsilon(1e-14));
  CHECK((e.R - Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ()).toRotationMatrix()).norm() < 1e-12);
  CHECK(!g.has_vertices);  // ids from the edges: 3 -> pose 0, 5 -> pose 1
  CHECK(g.problem.pose_ids == std::vector<long long>{3, 5});
  CHECK(e.i == 0);
  CHECK(e.j == 1);
}

TEST_CASE("landmarks: EDGE_SE2_XY and EDGE_SE3_TRACKXYZ with a sensor offset") {
  TempDir dir("g2o-lm");
  const auto g2 = read_text(dir,
                            "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 1 0 0\nVERTEX_XY 7 2 3\n"
                            "EDGE_SE2 0 1 1 0 0 1 0 0 1 0 1\n"
                            "EDGE_SE2_XY 0 7 2 3 2 0 8\nEDGE_SE2_XY 1 7 1 3 1 0 1\n");
  CHECK(g2.problem.num_landmarks() == 1);
  CHECK(g2.problem.landmark_ids[0] == 7);
  REQUIRE(g2.problem.landmark_edges.size() == 2);
  CHECK(g2.problem.landmark_edges[0].tau == doctest::Approx(2.0 / (0.5 + 0.125)));
  CHECK(g2.initial.m(1, 0) == 3.0);

  const auto g3 = read_text(dir,
                            "PARAMS_SE3OFFSET 0 1 0 0 0 0 0.7071067811865476 0.7071067811865476\n"
                            "VERTEX_SE3:QUAT 0 0 0 0 0 0 0 1\nVERTEX_TRACKXYZ 1 1 1 0\n"
                            "EDGE_SE3_TRACKXYZ 0 1 0 1 0 0 1 0 0 1 0 1\n");
  const LandmarkEdge& e = g3.problem.landmark_edges.at(0);
  // Offset: rotation by 90 degrees about z, then 1 along x: (1, 0, 0) -> (0, 1, 0) + (1, 0, 0).
  CHECK((e.y - Eigen::Vector3d(1, 1, 0)).norm() < 1e-12);
  CHECK(e.tau == doctest::Approx(1.0));
}

TEST_CASE("bad input: exit 65 with FILE:LINE, missing file 66") {
  const std::string v = "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 0 0 0\n";
  const std::string edge = "EDGE_SE2 0 1 1 0 0 1 0 0 1 0 1\n";
  struct Case {
    std::string text, needle;
  } cases[] = {
      {v + "EDGE_SE2 0 1 1 0 0 1 0 0 1 0\n", "g.g2o:3: EDGE_SE2 expects 11 values, got 10"},
      {v + "EDGE_SE2 0 1 1 x 0 1 0 0 1 0 1\n", "g.g2o:3: EDGE_SE2: value 4 ('x') is not a number"},
      {v + "EDGE_SE2 0 1 1 nan 0 1 0 0 1 0 1\n", ":3: EDGE_SE2: value 4 is nan"},
      {v + "EDGE_SE2 0 1 1 0 0 1 2 0 1 0 1\n", ":3: EDGE_SE2: translational information block is not positive definite"},
      {v + "EDGE_SE2 0 1 1 0 0 1 0 0 1 0 -1\n", ":3: EDGE_SE2: rotational information block is not positive definite"},
      {v + "EDGE_SE2 0 1 1 0 0 1 0 0 1 0 1\nEDGE_SE2_XY 0 1 1 0 1 3 1\n", ":4: EDGE_SE2_XY: point information block"},
      {v + edge + "EDGE_SE2 0 2 1 0 0 1 0 0 1 0 1\n", ":4: vertex 2 is not declared (dangling id)"},
      {v + "VERTEX_SE2 2 0 0 0\n" + edge, ":3: vertex 2 is not connected to vertex 0"},
      {v + "EDGE_SE2 1 1 1 0 0 1 0 0 1 0 1\n", ":3: EDGE_SE2 joins vertex 1 to itself"},
      {v + "VERTEX_SE2 0 1 0 0\n" + edge, ":3: vertex 0 already declared on line 1"},
      {v + edge + "EDGE_SE2_XY 0 1 1 0 1 0 1\n", ":4: vertex 1 is a pose (line 2) but this edge needs a landmark"},
      {v + edge + "VERTEX_TRACKXYZ 5 0 0 0\n", ":4: VERTEX_TRACKXYZ is 3D but line 1 was 2D"},
      {"VERTEX_SE3:QUAT 0 0 0 0 0 0 0 1\nVERTEX_TRACKXYZ 1 0 0 0\nEDGE_SE3_TRACKXYZ 0 1 4 1 0 0 1 0 0 1 0 1\n",
       ":3: offset parameter 4 is not defined"},
      {"# only a comment\n", "no edges"},
      // An offset id beyond an int is its own id, not another one's (it was truncated to 0 and took offset 0).
      {"PARAMS_SE3OFFSET 0 0 0 0 0 0 0 1\nVERTEX_SE3:QUAT 0 0 0 0 0 0 0 1\nVERTEX_TRACKXYZ 1 0 0 0\n"
       "EDGE_SE3_TRACKXYZ 0 1 4294967296 1 0 0 1 0 0 1 0 1\n",
       ":4: offset parameter 4294967296 is not defined"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const auto [code, message] = failure(c.text);
    CHECK(code == ExitCode::data);
    CHECK(message.find(c.needle) != std::string::npos);
  }
  TempDir dir("g2o-missing");
  CHECK_THROWS_AS(read_g2o(dir / "absent.g2o"), InputMissingError);
}

TEST_CASE("write_g2o reads back: vertices at the estimate, edges verbatim") {
  TempDir dir("g2o-write");
  const auto g = read_text(dir,
                           "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 1 0 0\nVERTEX_XY 7 2 3\n"
                           "EDGE_SE2 0 1 1 0 0 1 0 0 1 0 1\nEDGE_SE2_XY 0 7 2 3 2 0 8\nEDGE_SE2_XY 1 7 1 3 1 0 1\n");
  Estimate x = g.initial;
  x.t(1, 1) = 0.25;
  x.R.middleCols(2, 2) = Eigen::Rotation2Dd(-1.0).toRotationMatrix();
  x.m(0, 0) = -4.5;
  write_g2o(dir / "out.g2o", g, x);
  const auto back = read_g2o(dir / "out.g2o");
  CHECK((back.initial.R - x.R).norm() < 1e-14);
  CHECK((back.initial.t - x.t).norm() == 0.0);
  CHECK((back.initial.m - x.m).norm() == 0.0);
  CHECK(back.problem.landmark_edges.size() == 2);
  const Estimate c = read_g2o_estimate(dir / "out.g2o", g.problem);
  CHECK((c.t - x.t).norm() == 0.0);
}
