// nice-slam-run end to end: eval, synth, run on the tiny config; exit codes on bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

TEST_CASE("eval: ATE and RPE of the shared TUM pair; missing and malformed inputs") {
  if (!have_dataset("trajectories/tum_groundtruth.txt")) return;
  const auto gt = (datasets_dir() / "trajectories/tum_groundtruth.txt").string();
  const auto est = (datasets_dir() / "trajectories/tum_estimated.txt").string();
  auto r = run_tool("nice-slam-run", {"eval", "--estimate", est, "--groundtruth", gt});
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.out);
  CHECK(j["ate_rmse"].get<double>() == doctest::Approx(0.023089992645).epsilon(1e-8));
  CHECK(j.contains("rpe_trans"));
  CHECK(j.contains("rpe_rot"));
  CHECK(run_tool("nice-slam-run", {"eval", "--estimate", "/nonexistent.txt", "--groundtruth", gt}).exit_code == 66);
  TempDir dir("nsr-eval");
  write_text(dir / "bad.txt", "1 2 3\n");
  auto bad = run_tool("nice-slam-run", {"eval", "--estimate", (dir / "bad.txt").string(), "--groundtruth", gt});
  CHECK(bad.exit_code == 65);
  CHECK(bad.err.find("bad.txt:1") != std::string::npos);
  CHECK(run_tool("nice-slam-run", {"eval", "--estimate", est}).exit_code == 2);
}
