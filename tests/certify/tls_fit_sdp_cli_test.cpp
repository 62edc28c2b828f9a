// tls-fit end to end for the certify features: gm fits with --verify, --export-sdpa then
// `tls-fit sdp` on the file (against csdp when installed), and bad inputs with their exit codes.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "csdp_runner.hpp"
#include "certify/sdpa.hpp"
#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

TEST_CASE("gm fit: irls matches --verify; sdp export solves the same in tls-fit sdp and csdp") {
  TempDir dir("gm-cli");
  const auto csv = (dir / "p.csv").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "25", "--seed", "4", "--outliers", "0.2", "--output", csv}).exit_code == 0);
  auto irls = run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--sigma", "0.2", "--solver", "irls",
                                   "--verify", "--out", (dir / "r1").string()});
  const auto r = json::parse(irls.out);
  CHECK(r["verified"] == true);
  CHECK(r["cost"].get<double>() == doctest::Approx(r["global_cost"].get<double>()).epsilon(1e-9));
  CHECK(r.contains("lambda_min"));
  CHECK(r.contains("gap"));
  CHECK(fs::exists(dir / "r1/artifacts/weights.npy"));
  CHECK(fs::exists(dir / "r1/artifacts/weights.csv"));
  CHECK((irls.exit_code == 0) == r["certified"].get<bool>());

  const auto sdpa = (dir / "g.dat-s").string();
  auto sdp = run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--sigma", "0.2", "--solver", "sdp",
                                  "--export-sdpa", sdpa, "--out", (dir / "r2").string()});
  const auto s = json::parse(sdp.out);
  CHECK(s.contains("tight"));
  CHECK(s["sdp"]["status"] == "optimal");
  CHECK(s["sdp"]["value"].get<double>() <= r["global_cost"].get<double>() + 1e-8);  // a lower bound
  auto solved = run_tool("tls-fit", {"sdp", "--input", sdpa});
  REQUIRE(solved.exit_code == 0);
  const auto j = json::parse(solved.out);
  CHECK(j["status"] == "optimal");
  CHECK(-j["primal"].get<double>() == doctest::Approx(s["sdp"]["value"].get<double>()).epsilon(1e-7));
  if (certify_test::have_csdp()) {
    const auto problem = core::certify::read_sdpa(sdpa);
    const auto theirs = certify_test::run_csdp(sdpa, problem.b);
    REQUIRE(theirs.dual_objective);
    CHECK(j["dual"].get<double>() == doctest::Approx(*theirs.dual_objective).epsilon(1e-6));
  } else {
    MESSAGE("csdp absent: cross-check skipped");
  }
}

TEST_CASE("bad inputs: exit codes and messages") {
  TempDir dir("gm-cli-bad");
  write_text(dir / "nan.csv", "x,y\n1,2\nnan,3\n");
  CHECK(run_tool("tls-fit", {"fit", "--input", (dir / "nan.csv").string(), "--mode", "gm", "--solver", "irls"}).exit_code == 65);
  CHECK(run_tool("tls-fit", {"fit", "--mode", "gm", "--solver", "eig"}).exit_code == 2);
  CHECK(run_tool("tls-fit", {"fit", "--mode", "tls", "--solver", "irls"}).exit_code == 2);
  write_text(dir / "bad.dat-s", "1\n1\n2\n1.0\n1 1 1 9 1.0\n");
  auto bad = run_tool("tls-fit", {"sdp", "--input", (dir / "bad.dat-s").string()});
  CHECK(bad.exit_code == 65);
  CHECK(bad.err.find("bad.dat-s:5:") != std::string::npos);
  CHECK(run_tool("tls-fit", {"sdp", "--input", (dir / "missing.dat-s").string()}).exit_code == 66);
  auto bad_start = run_tool("tls-fit", {"sdp", "--input", (dir / "bad.dat-s").string(), "start=sideways"});
  CHECK(bad_start.exit_code == 2);
  CHECK(bad_start.err.find("start") != std::string::npos);
  write_text(dir / "inf.dat-s", "1\n1\n3\n-1\n1 1 1 1 1\n1 1 2 2 1\n1 1 3 3 1\n");
  auto inf = run_tool("tls-fit", {"sdp", "--input", (dir / "inf.dat-s").string()});
  CHECK(inf.exit_code == 3);
  CHECK(json::parse(inf.out)["status"] == "primal_infeasible");
  // --out records the run like every other command (manifest with the exit code, result.json).
  auto recorded = run_tool("tls-fit", {"sdp", "--input", (dir / "inf.dat-s").string(), "--out", (dir / "run").string()});
  CHECK(recorded.exit_code == 3);
  CHECK(json::parse(read_text(dir / "run" / "result.json"))["status"] == "primal_infeasible");
  CHECK(json::parse(read_text(dir / "run" / "manifest.json"))["exit_code"] == 3);
}

// near_optimal (a tolerance rounding cannot meet, so the best iterate within near_tol) is a success, exit 0,
// with the accuracy reached; tolerances come from the config like every key.
TEST_CASE("tls-fit sdp: near_optimal is exit 0 with the achieved accuracy") {
  const auto gm = (source_dir() / "tests/certify/data/gm_n30_seed0.dat-s").string();
  TempDir dir("sdp-near");
  auto near = run_tool("tls-fit", {"sdp", "--input", gm, "tol=1e-14", "stall_iterations=8", "start=auto", "--out", (dir / "run").string()});
  CHECK(near.exit_code == 0);
  const auto j = json::parse(near.out);
  CHECK(j["status"] == "near_optimal");
  CHECK(j["achieved_accuracy"].get<double>() < 1e-6);
  CHECK(j["best_iteration"].get<int>() < j["iterations"].get<int>());
  CHECK(j["start"] == "unscaled");  // start=auto: near_optimal from the first start needs no second one
  // --out: the solution in csdp's format; its y (file convention) gives the reported dual objective c^T y.
  const auto problem = core::certify::read_sdpa(gm);
  std::istringstream sol(read_text(dir / "run/artifacts/solution.sol"));
  std::string first;
  std::getline(sol, first);
  std::istringstream ys(first);
  double cty = 0.0;
  int count = 0;
  for (double v; ys >> v; ++count) cty += problem.b(count) * v;
  CHECK(count == problem.num_constraints());
  CHECK(cty == doctest::Approx(j["dual"].get<double>()).epsilon(1e-12));
  std::string line;
  int x_entries = 0;
  while (std::getline(sol, line)) x_entries += line.rfind("2 ", 0) == 0;
  CHECK(x_entries > 0);
  CHECK(fs::exists(dir / "run/artifacts/y.npy"));
  auto bad = run_tool("tls-fit", {"sdp", "--input", gm, "tol=1e-6", "near_tol=1e-8"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("near_tol") != std::string::npos);
}
