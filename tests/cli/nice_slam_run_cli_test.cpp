// nice-slam-run end to end: eval, synth, run on the tiny config; exit codes on bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

// The vertex count a PLY header declares (-1 without one).
static long ply_vertex_count(const fs::path& path) {
  const std::string text = read_text(path);
  if (text.rfind("ply\n", 0) != 0) return -1;
  const auto at = text.find("element vertex ");
  return at == std::string::npos ? -1 : std::stol(text.substr(at + 15));
}

// Width and height from a PNG's IHDR chunk ({-1, -1} when not a PNG).
static std::pair<int, int> png_size(const fs::path& path) {
  const std::string b = read_text(path);
  if (b.size() < 24 || b.compare(1, 3, "PNG") != 0) return {-1, -1};
  auto be32 = [&](std::size_t at) {
    int v = 0;
    for (std::size_t k = 0; k < 4; ++k) v = v * 256 + static_cast<unsigned char>(b[at + k]);
    return v;
  };
  return {be32(16), be32(20)};
}

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

TEST_CASE("synth then run on the tiny config: trajectory, metrics, ATE") {
  TempDir dir("nsr-run");
  const auto data = (dir / "data").string();
  auto s = run_tool("nice-slam-run", {"synth", "--out", data, "--frames", "20", "width=80", "height=60"});
  REQUIRE(s.exit_code == 0);
  CHECK(json::parse(s.out)["frames"] == 20);
  const auto run = (dir / "run").string();
  auto r = run_tool("nice-slam-run", {"run", "--dataset", data, "--config",
                                      (source_dir() / "configs/nice-slam-run/tiny.yaml").string(), "output.mesh=true",
                                      "mesh.resolution=32", "render.frames=[0,19]", "--out", run});
  REQUIRE(r.exit_code == 0);
  const auto j = json::parse(r.out);
  // The map and its mesh; `mesh` re-extracts it from the run directory afterwards.
  CHECK(fs::exists(fs::path(run) / "artifacts/map.safetensors"));
  REQUIRE(j.contains("mesh"));
  CHECK(j["mesh"]["triangles"].get<long>() > 100);
  CHECK(ply_vertex_count(fs::path(run) / "artifacts/mesh.ply") == j["mesh"]["vertices"].get<long>());
  const auto ply = (dir / "mesh48.ply").string();
  auto m = run_tool("nice-slam-run", {"mesh", run, "--resolution", "48", "--output", ply});
  REQUIRE(m.exit_code == 0);
  const auto mj = json::parse(m.out);
  CHECK(mj["triangles"].get<long>() > j["mesh"]["triangles"].get<long>());  // a finer lattice, more triangles
  CHECK(ply_vertex_count(ply) == mj["vertices"].get<long>());
  CHECK(run_tool("nice-slam-run", {"mesh", (dir / "none").string(), "--output", ply}).exit_code == 66);
  CHECK(run_tool("nice-slam-run", {"mesh", data, "--output", ply}).exit_code == 66);  // no map there
  // Rendered frames: by the run (render.frames) and afterwards by `render`, at 80x60 (comparison 160x120).
  REQUIRE(j.contains("render"));
  CHECK(j["render"].size() == 2);
  CHECK(png_size(fs::path(run) / "artifacts/render/frame_000019_depth.png") == std::pair(80, 60));
  const auto pngs = (dir / "pngs").string();
  auto rr = run_tool("nice-slam-run", {"render", run, "--frames", "5,10", "--output", pngs});
  REQUIRE(rr.exit_code == 0);
  const auto rj = json::parse(rr.out);
  REQUIRE(rj["frames"].size() == 2);
  MESSAGE("rendered frame 10: depth L1 " << rj["frames"][1]["depth_l1"] << " m");
  CHECK(rj["frames"][1]["depth_l1"].get<double>() < 0.1);
  CHECK(png_size(fs::path(pngs) / "frame_000010_colour.png") == std::pair(80, 60));
  CHECK(png_size(fs::path(pngs) / "frame_000010_depth.png") == std::pair(80, 60));
  CHECK(png_size(fs::path(pngs) / "frame_000005_compare.png") == std::pair(160, 120));
  CHECK(run_tool("nice-slam-run", {"render", run, "--frames", "20", "--output", pngs}).exit_code == 2);
  CHECK(run_tool("nice-slam-run", {"render", run, "--frames", "1,x", "--output", pngs}).exit_code == 2);
  CHECK(run_tool("nice-slam-run", {"render", (dir / "none").string(), "--frames", "1"}).exit_code == 66);
  MESSAGE("tiny run: ATE " << j["ate_rmse"] << " m, " << j["fps"] << " fps");
  CHECK(j["frames"] == 20);
  CHECK(j["ate_rmse"].get<double>() < 0.05);
  CHECK(j["fps"].get<double>() > 0);
  CHECK(fs::exists(fs::path(run) / "trajectory.txt"));
  const std::string metrics = read_text(fs::path(run) / "metrics.jsonl");
  CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 20);
  // The plot script draws the trajectory against the ground truth (where python3-matplotlib exists).
  if (std::system("/usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null") == 0) {
    const std::string cmd = (source_dir() / "scripts/plot/nice_slam_run.py").string() + " " + run + " >/dev/null";
    CHECK(std::system(cmd.c_str()) == 0);
    CHECK(fs::file_size(fs::path(run) / "artifacts/trajectory.png") > 1000);
  }
  // eval of the written trajectory agrees with the run's own figure.
  auto e = run_tool("nice-slam-run", {"eval", "--estimate", run + "/trajectory.txt", "--groundtruth",
                                      data + "/groundtruth.txt"});
  REQUIRE(e.exit_code == 0);
  CHECK(json::parse(e.out)["ate_rmse"].get<double>() == doctest::Approx(j["ate_rmse"].get<double>()).epsilon(1e-6));
}

TEST_CASE("run: missing dataset is exit 66; SIGTERM writes the trajectory so far and exits 75") {
  TempDir dir("nsr-sig");
  CHECK(run_tool("nice-slam-run", {"run", "--dataset", (dir / "none").string(), "--out", (dir / "r0").string()})
            .exit_code == 66);
  const auto run = (dir / "r1").string();
  auto r = run_tool_signalled("nice-slam-run",
                              {"run", "--config", (source_dir() / "configs/nice-slam-run/tiny.yaml").string(),
                               "synth.frames=200", "--out", run},
                              SIGTERM, std::chrono::seconds(3), std::chrono::seconds(120),
                              file_has_lines(fs::path(run) / "command.txt"));  // started: signals are handled
  CHECK(r.ended_in_time);
  CHECK(r.exit_code == 75);
  CHECK(fs::exists(fs::path(run) / "trajectory.txt"));
  const auto j = json::parse(r.out);
  CHECK(j["stopped"] == true);
  CHECK(j["frames"].get<int>() < 200);
}

TEST_CASE("run device=cuda: runs where a device answers, otherwise exit 2 naming what is missing") {
  TempDir dir("nsr-cuda");
  const auto tiny = (source_dir() / "configs/nice-slam-run/tiny.yaml").string();
  auto r = run_tool("nice-slam-run", {"run", "--config", tiny, "synth.frames=3", "device=cuda", "--out",
                                      (dir / "r").string()});
  if (r.exit_code == 0) {
    CHECK(json::parse(r.out)["device"] == "cuda");
  } else {
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("device=cuda") != std::string::npos);
    CHECK(r.err.find("CUDA") != std::string::npos);
  }
  // What the device path does not support is refused on any machine, naming the key.
  auto wide = run_tool("nice-slam-run", {"run", "--config", tiny, "device=cuda", "model.hidden=128", "--out",
                                         (dir / "w").string()});
  CHECK(wide.exit_code == 2);
  CHECK(wide.err.find("model.hidden") != std::string::npos);
  auto dec = run_tool("nice-slam-run", {"run", "--config", tiny, "device=cuda", "mapping.decoder_lr=0.01", "--out",
                                        (dir / "d").string()});
  CHECK(dec.exit_code == 2);
  CHECK(dec.err.find("mapping.decoder_lr") != std::string::npos);
  auto ba = run_tool("nice-slam-run", {"run", "--config", tiny, "device=cuda", "mapping.refine_poses=true", "--out",
                                       (dir / "b").string()});
  CHECK(ba.exit_code == 2);
  CHECK(ba.err.find("mapping.refine_poses") != std::string::npos);
}
