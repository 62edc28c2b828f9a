// slam-certify end to end: the command-line contract, exit codes, run-directory outputs, bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>
#include <string>

#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

namespace {

std::string tiny_config() { return (source_dir() / "configs/slam-certify/tiny.yaml").string(); }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("solve tiny.yaml: certified JSON on stdout, run directory with g2o, TUM, CSV and map") {
  TempDir dir("slam-cli");
  const auto run = dir / "run";
  const auto r = run_tool("slam-certify", {"solve", "--config", tiny_config(), "--out", run.string()});
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.out);
  for (const char* key : {"cost", "lower_bound", "suboptimality_bound", "certified", "lambda_min", "rank", "poses",
                          "landmarks", "edges", "times_s"})
    CHECK(j.contains(key));
  for (const char* key : {"build", "solve", "certify"}) CHECK(j["times_s"].contains(key));
  // The parts of the solve time are within it (rounding and recovery are the rest).
  double parts = 0.0;
  for (const char* key : {"chordal", "preconditioner", "trust_region"}) parts += j["solve_parts_s"][key].get<double>();
  CHECK(parts > 0.0);
  CHECK(parts <= j["times_s"]["solve"].get<double>());
  CHECK(j["certified"] == true);
  CHECK(j["poses"] == 15);
  CHECK(j["landmarks"] == 8);
  CHECK(j["lower_bound"].get<double>() <= j["cost"].get<double>());
  for (const char* f : {"manifest.json", "result.json", "artifacts/optimised.g2o", "artifacts/poses.tum",
                        "artifacts/landmarks.csv", "artifacts/map.png"})
    CHECK(fs::exists(run / f));
  CHECK(count(read_text(run / "artifacts/poses.tum"), "\n") == 15);
  CHECK(count(read_text(run / "artifacts/landmarks.csv"), "\n") == 9);

  // The optimised graph certifies as a candidate (exit 0) with the same cost.
  const auto c = run_tool("slam-certify", {"solve", "--config", tiny_config(), "--candidate",
                                           (run / "artifacts/optimised.g2o").string(), "--out", (dir / "c").string()});
  REQUIRE(c.exit_code == 0);
  CHECK(json::parse(c.out)["candidate"] == true);
  CHECK(json::parse(c.out)["cost"].get<double>() == doctest::Approx(j["cost"].get<double>()).epsilon(1e-9));

  // A candidate file may hold the vertices alone (another solver's output).
  std::string vertices;
  for (std::istringstream in(read_text(run / "artifacts/optimised.g2o")); in;) {
    std::string line;
    std::getline(in, line);
    if (line.rfind("VERTEX", 0) == 0) vertices += line + "\n";
  }
  write_text(dir / "vertices.g2o", vertices);
  const auto v = run_tool("slam-certify", {"solve", "--config", tiny_config(), "--candidate",
                                           (dir / "vertices.g2o").string(), "--out", (dir / "v").string()});
  CHECK(v.exit_code == 0);

  if (std::system("/usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null") == 0) {
    const std::string cmd = (source_dir() / "scripts/plot/slam_certify.py").string() + " " + run.string() + " >/dev/null";
    CHECK(std::system(cmd.c_str()) == 0);
    CHECK(fs::file_size(run / "artifacts/map_plot.png") > 1000);
  } else {
    MESSAGE("python3-matplotlib absent: plot script not exercised");
  }
}

TEST_CASE("sim writes a world; its noisy ground truth is not certified (exit 3), the solve is") {
  TempDir dir("slam-cli-sim");
  const auto g2o = (dir / "w.g2o").string();
  const auto sim = run_tool("slam-certify", {"sim", "--output", g2o, "world.poses=20", "world.landmarks=6",
                                             "world.loop_closures=2", "world.seed=4"});
  REQUIRE(sim.exit_code == 0);
  CHECK(json::parse(sim.out)["edges"].get<int>() > 19);
  const auto solved = run_tool("slam-certify", {"solve", "--input", g2o, "--out", (dir / "s").string()});
  CHECK(solved.exit_code == 0);
  const auto truth = run_tool("slam-certify", {"solve", "--input", g2o, "--candidate", g2o, "--out", (dir / "t").string()});
  CHECK(truth.exit_code == 3);
  const auto t = json::parse(truth.out);
  CHECK(t["certified"] == false);
  CHECK(t["cost"].get<double>() > json::parse(solved.out)["cost"].get<double>());
  // A planted local minimum: a loopy pose graph from a random start at rank 2, escape forbidden: exit 3;
  // the staircase escapes the same start and certifies.
  const auto loopy = (dir / "loopy.g2o").string();
  REQUIRE(run_tool("slam-certify", {"sim", "--output", loopy, "world.poses=30", "world.landmarks=0",
                                    "world.loop_closures=10", "world.rotation_sigma=0.1", "world.seed=1"})
              .exit_code == 0);
  const auto stuck = run_tool("slam-certify", {"solve", "--input", loopy, "init=random", "seed=1", "rank_min=2",
                                               "rank_max=2", "--out", (dir / "l").string()});
  CHECK(stuck.exit_code == 3);
  CHECK(json::parse(stuck.out)["lower_bound"].is_null());
  const auto escaped = run_tool("slam-certify", {"solve", "--input", loopy, "init=random", "seed=1", "rank_min=2",
                                                 "--out", (dir / "e").string()});
  CHECK(escaped.exit_code == 0);
  CHECK(json::parse(escaped.out)["rank"].get<int>() >= 3);
}

TEST_CASE("bad input: 66 missing, 65 malformed with file:line, 2 bad config; unknown tags warned once") {
  TempDir dir("slam-cli-bad");
  auto missing = run_tool("slam-certify", {"solve", "--input", (dir / "absent.g2o").string(), "--out", (dir / "m").string()});
  CHECK(missing.exit_code == 66);
  CHECK(missing.out.empty());

  write_text(dir / "bad.g2o", "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 0 0 0\nEDGE_SE2 0 1 1 0 0 1 0 0 1 0\n");
  auto bad = run_tool("slam-certify", {"solve", "--input", (dir / "bad.g2o").string(), "--out", (dir / "b").string()});
  CHECK(bad.exit_code == 65);
  CHECK(bad.err.find("bad.g2o:3: EDGE_SE2 expects 11 values, got 10") != std::string::npos);
  CHECK(bad.out.empty());
  CHECK(!fs::exists(dir / "b/artifacts/optimised.g2o"));

  write_text(dir / "nan.g2o", "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 0 0 0\nEDGE_SE2 0 1 nan 0 0 1 0 0 1 0 1\n");
  CHECK(run_tool("slam-certify", {"solve", "--input", (dir / "nan.g2o").string(), "--out", (dir / "n").string()}).exit_code == 65);

  auto key = run_tool("slam-certify", {"solve", "no_such_key=1", "--out", (dir / "k").string()});
  CHECK(key.exit_code == 2);
  CHECK(key.err.find("no_such_key") != std::string::npos);
  CHECK(run_tool("slam-certify", {"solve", "rank_min=5", "rank_max=3", "--out", (dir / "r").string()}).exit_code == 2);
  CHECK(run_tool("slam-certify", {"sim"}).exit_code == 2);  // --output required

  write_text(dir / "tags.g2o", "VERTEX_SE2 0 0 0 0\nVERTEX_SE2 1 1 0 0\nFIX 0\nFIX 1\n"
                               "EDGE_SE2 0 1 1 0 0 10 0 0 10 0 10\n");
  auto tags = run_tool("slam-certify", {"solve", "--input", (dir / "tags.g2o").string(), "--out", (dir / "g").string()});
  CHECK(tags.exit_code == 0);
  CHECK(count(tags.err, "unknown g2o tag FIX") == 1);
}

TEST_CASE("starry: UTIAS Starry Night steps to a landmark problem that solves") {
  if (!have_dataset("landmark-slam/stereo_measurements.csv")) {
    MESSAGE("dataset landmark-slam absent: skipped");
    return;
  }
  TempDir dir("slam-cli-starry");
  const auto g2o = (dir / "s.g2o").string();
  const auto conv = run_tool("slam-certify", {"starry", "--dataset", (datasets_dir() / "landmark-slam").string(),
                                              "--output", g2o, "--steps", "0:60", "--truth", (dir / "t.tum").string()});
  REQUIRE(conv.exit_code == 0);
  CHECK(json::parse(conv.out)["steps"] == 60);
  CHECK(count(read_text(dir / "t.tum"), "\n") == 60);
  const auto solved = run_tool("slam-certify", {"solve", "--input", g2o, "--out", (dir / "run").string()});
  CHECK((solved.exit_code == 0 || solved.exit_code == 3));
  const auto j = json::parse(solved.out);
  CHECK(j["poses"] == 60);
  CHECK(j["landmarks"].get<int>() > 0);
  CHECK(run_tool("slam-certify", {"starry", "--dataset", (datasets_dir() / "landmark-slam").string(), "--output", g2o,
                                  "--steps", "5-9"}).exit_code == 2);
  CHECK(run_tool("slam-certify", {"starry", "--dataset", (dir / "none").string(), "--output", g2o}).exit_code == 66);
}
