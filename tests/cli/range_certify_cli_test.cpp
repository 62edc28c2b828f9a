// range-certify end to end: sim then solve, exit codes (0 certified, 3 not), the run directory and
// plot, candidates, the bare run and its config file, and bad input (2, 65 with FILE:LINE, 66).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

namespace {

CommandResult sim(const TempDir& dir, const std::string& name, std::vector<std::string> extra) {
  std::vector<std::string> args{"sim", "--output", (dir / name).string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_tool("range-certify", args);
}

}  // namespace

TEST_CASE("sim then solve: certified JSON on stdout, run directory with trajectory and plot") {
  TempDir dir("rc-cli");
  auto s = sim(dir, "data", {"--n", "60", "--anchors", "5", "--dim", "2", "--seed", "3"});
  REQUIRE(s.exit_code == 0);
  CHECK(json::parse(s.out)["e"] == 300);
  for (const char* f : {"anchors.csv", "ranges.csv", "groundtruth.csv"}) CHECK(fs::exists(dir / "data" / f));

  const auto run = (dir / "run").string();
  auto r = run_tool("range-certify", {"solve", "--input", (dir / "data").string(), "--init", "gt", "--out", run});
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.out);
  for (const char* key : {"cost", "certified", "certificate", "rho", "tries", "rmse", "times_s", "n", "e"})
    CHECK(j.contains(key));
  for (const char* key : {"solve", "multipliers", "certificate"}) CHECK(j["times_s"].contains(key));
  CHECK(j["certified"] == true);
  CHECK(j["n"] == 60);
  CHECK(j["tries"] == 1);
  CHECK(j["certificate"].get<double>() > 1e-9);
  CHECK(j["rho"].get<double>() == doctest::Approx(j["cost"].get<double>()).epsilon(1e-6));
  CHECK(j["rmse"].get<double>() < 0.5);
  for (const char* f : {"manifest.json", "result.json", "artifacts/trajectory.csv", "artifacts/anchors.csv",
                        "artifacts/groundtruth.csv"})
    CHECK(fs::exists(fs::path(run) / f));
  if (std::system("/usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null") == 0) {
    const std::string cmd = (source_dir() / "scripts/plot/range_certify.py").string() + " " + run + " >/dev/null";
    CHECK(std::system(cmd.c_str()) == 0);
    CHECK(fs::file_size(fs::path(run) / "artifacts/trajectory.png") > 1000);
  } else {
    MESSAGE("python3-matplotlib absent: plot script not exercised");
  }

  // The estimate, given back as a candidate, is certified as given; shifted by 1 m it is not stationary.
  const auto est = (fs::path(run) / "artifacts/trajectory.csv").string();
  auto c = run_tool("range-certify", {"solve", "--input", (dir / "data").string(), "--candidate", est, "--out",
                                      (dir / "cand").string()});
  CHECK(c.exit_code == 0);
  CHECK(json::parse(c.out)["cost"].get<double>() == doctest::Approx(j["cost"].get<double>()).epsilon(1e-12));
  std::string text = read_text(est), shifted;
  {
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    shifted = line + "\n";
    while (std::getline(in, line)) {
      const auto comma = line.find(',');
      const auto comma2 = line.find(',', comma + 1);
      const double x = std::stod(line.substr(comma + 1, comma2 - comma - 1)) + 1.0;
      shifted += line.substr(0, comma + 1) + std::to_string(x) + line.substr(comma2) + "\n";
    }
  }
  write_text(dir / "shifted.csv", shifted);
  auto bad = run_tool("range-certify", {"solve", "--input", (dir / "data").string(), "--candidate",
                                        (dir / "shifted.csv").string(), "--out", (dir / "cand2").string()});
  CHECK(bad.exit_code == 3);
  CHECK(json::parse(bad.out)["reason"].get<std::string>().find("stationary") != std::string::npos);
}

TEST_CASE("continuous-time queries: solve's query_dt and the query command give the same GP interpolation") {
  TempDir dir("rc-cli-query");
  REQUIRE(sim(dir, "data", {"--n", "20", "--anchors", "5", "--dim", "2", "--seed", "4"}).exit_code == 0);
  const auto run = dir / "run";
  auto r = run_tool("range-certify",
                    {"solve", "--input", (dir / "data").string(), "--init", "gt", "query_dt=0.25", "--out", run.string()});
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out)["queries"] == 77);  // 19 s of states, a quarter-second grid
  const std::string from_solve = read_text(run / "artifacts/trajectory_query.csv");
  CHECK(from_solve.rfind("t,x,y\n", 0) == 0);

  const auto est = (run / "artifacts/trajectory.csv").string();
  auto q = run_tool("range-certify", {"query", "--trajectory", est, "--dt", "0.25", "--output", (dir / "q.csv").string()});
  REQUIRE(q.exit_code == 0);
  CHECK(json::parse(q.out)["rows"] == 77);
  CHECK(read_text(dir / "q.csv") == from_solve);

  // At the state times the interpolation returns the states themselves.
  write_text(dir / "times.csv", "t\n3\n0\n");
  REQUIRE(run_tool("range-certify", {"query", "--trajectory", est, "--times", (dir / "times.csv").string(), "--output",
                                     (dir / "at.csv").string()})
              .exit_code == 0);
  std::istringstream traj(read_text(est)), at(read_text(dir / "at.csv"));
  std::string line, row0, row3;
  for (int i = 0; i <= 4 && std::getline(traj, line); ++i) {
    if (i == 1) row0 = line;
    if (i == 4) row3 = line;
  }
  std::getline(at, line);
  auto fields = [](const std::string& l, int k) {  // the first k comma-separated numbers
    std::vector<double> v;
    std::istringstream in(l);
    std::string f;
    while (static_cast<int>(v.size()) < k && std::getline(in, f, ',')) v.push_back(std::stod(f));
    return v;
  };
  std::getline(at, line);
  for (int k = 0; k < 3; ++k) CHECK(fields(line, 3)[k] == doctest::Approx(fields(row3, 3)[k]).epsilon(1e-12));
  std::getline(at, line);
  for (int k = 0; k < 3; ++k) CHECK(fields(line, 3)[k] == doctest::Approx(fields(row0, 3)[k]).epsilon(1e-12));

  // Bad input: exactly one of --times/--dt (2), a missing file (66), a bad field with FILE:LINE (65).
  CHECK(run_tool("range-certify", {"query", "--trajectory", est, "--output", (dir / "x.csv").string()}).exit_code == 2);
  CHECK(run_tool("range-certify", {"query", "--trajectory", est, "--dt", "1", "--times", (dir / "times.csv").string(),
                                   "--output", (dir / "x.csv").string()})
            .exit_code == 2);
  CHECK(run_tool("range-certify", {"query", "--trajectory", (dir / "none.csv").string(), "--dt", "1", "--output",
                                   (dir / "x.csv").string()})
            .exit_code == 66);
  write_text(dir / "bad.csv", "t\n1\nnan\n");
  auto bad = run_tool("range-certify", {"query", "--trajectory", est, "--times", (dir / "bad.csv").string(), "--output",
                                        (dir / "x.csv").string()});
  CHECK(bad.exit_code == 65);
  CHECK(bad.err.find("bad.csv:3") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "x.csv"));
  CHECK(run_tool("range-certify", {"solve", "--input", (dir / "data").string(), "query_dt=1", "query_times=" +
                                   (dir / "times.csv").string(), "--out", (dir / "r2").string()})
            .exit_code == 2);
}

TEST_CASE("coplanar anchors in 3-D: the reflection ambiguity is never certified (exit 3)") {
  TempDir dir("rc-cli-planar");
  REQUIRE(sim(dir, "data", {"--n", "30", "--anchors", "4", "--dim", "3", "--seed", "2", "planar_anchors=true"}).exit_code == 0);
  for (const char* init : {"gt", "flip"}) {
    auto r = run_tool("range-certify", {"solve", "--input", (dir / "data").string(), "--init", init, "--tries", "2",
                                        "--out", (dir / init).string()});
    CHECK(r.exit_code == 3);
    const auto j = json::parse(r.out);
    CHECK(j["certified"] == false);
    CHECK(j["tries"] == 2);
    CHECK(json::parse(read_text(dir / init / "manifest.json"))["exit_code"] == 3);
  }
}

TEST_CASE("bare run and configs: --print-config matches configs/range-certify/default.yaml; tiny.yaml runs") {
  TempDir dir("rc-cli-bare");
  auto bare = run_tool("range-certify", {"--print-config"});
  auto file = run_tool("range-certify",
                       {"solve", "--config", (source_dir() / "configs/range-certify/default.yaml").string(), "--print-config"});
  REQUIRE(bare.exit_code == 0);
  CHECK(bare.out == file.out);
  auto run = run_tool("range-certify", {}, dir.path());
  CHECK(run.exit_code == 0);
  CHECK(json::parse(run.out)["n"] == 100);
  auto tiny = run_tool("range-certify", {"--config", (source_dir() / "configs/range-certify/tiny.yaml").string(), "--out",
                                         (dir / "tiny").string()});
  CHECK((tiny.exit_code == 0 || tiny.exit_code == 3));
  CHECK(json::parse(tiny.out)["n"] == 30);
}

TEST_CASE("bad input: 66 missing, 65 with FILE:LINE, 2 for configuration") {
  TempDir dir("rc-cli-bad");
  auto missing = run_tool("range-certify", {"solve", "--input", (dir / "nope").string(), "--out", (dir / "r1").string()});
  CHECK(missing.exit_code == 66);
  write_text(dir / "d" / "anchors.csv", "id,x,y\n1,0,0\n2,4,0\n3,0,4\n");
  write_text(dir / "d" / "ranges.csv", "t,anchor,range\n0,1,1\n0,7,2\n");
  auto unknown = run_tool("range-certify", {"solve", "--input", (dir / "d").string(), "--out", (dir / "r2").string()});
  CHECK(unknown.exit_code == 65);
  CHECK(unknown.err.find("ranges.csv:3") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "r2" / "artifacts" / "trajectory.csv"));
  auto key = run_tool("range-certify", {"solve", "no_such_key=1", "--out", (dir / "r3").string()});
  CHECK(key.exit_code == 2);
  auto gt = run_tool("range-certify", {"solve", "--input", (dir / "d").string(), "--init", "gt", "--out", (dir / "r4").string()});
  CHECK(gt.exit_code == 65);  // the data error comes first
  auto no_output = run_tool("range-certify", {"sim", "--n", "10"});
  CHECK(no_output.exit_code == 2);
}

TEST_CASE("STAR-loc runs are read directly: anchors, bias calibration, grouping, ground truth") {
  if (!have_dataset("uwb/starloc/loop-3d_s5/uwb.csv")) {
    MESSAGE("STAR-loc data absent: skipped");
    return;
  }
  TempDir dir("rc-cli-starloc");
  const std::string base = "starloc:" + (datasets_dir() / "uwb/starloc").string();
  auto grouped = run_tool("range-certify", {"solve", "--input", base + "/loop-3d_s5", "--init", "gt", "--tries", "1",
                                            "group_window=0.05", "time_range=[10,14]", "sigma_d=0.05", "sigma_a=0.1",
                                            "--out", (dir / "g").string()});
  REQUIRE((grouped.exit_code == 0 || grouped.exit_code == 3));
  const auto g = json::parse(grouped.out);
  CHECK(g["dim"] == 3);
  CHECK(g["anchors"] == 4);
  CHECK(g["e"].get<int>() == 4 * g["n"].get<int>());  // the 4 anchors' burst shares one state
  CHECK(g["starloc"]["anchors_file"].get<std::string>().find("uwb_markers_v3.csv") != std::string::npos);
  for (const auto& b : g["starloc"]["biases"]) CHECK(std::abs(b.get<double>()) > 1e-3);
  CHECK(g["rmse"].is_number());
  auto single = run_tool("range-certify", {"solve", "--input", base + "/loop-3d_s5", "--init", "gt", "--tries", "1",
                                           "time_range=[10,14]", "--out", (dir / "s").string()});
  // Without grouping, one state per distinct row time (a few rows share their time stamp).
  const int single_n = json::parse(single.out)["n"];
  CHECK(single_n <= g["e"].get<int>());
  CHECK(single_n > 0.9 * g["e"].get<int>());
  auto missing = run_tool("range-certify", {"solve", "--input", base + "/no-such-run", "--out", (dir / "m").string()});
  CHECK(missing.exit_code == 66);
}
