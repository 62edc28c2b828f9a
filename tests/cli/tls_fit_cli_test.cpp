// tls-fit end to end: the command-line contract, exit codes, outputs and bad input.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using namespace core::test;
using nlohmann::json;

TEST_CASE("gen then fit: certified JSON on stdout, run directory with artifacts") {
  TempDir dir("tls-cli");
  const auto csv = (dir / "p.csv").string();
  auto gen = run_tool("tls-fit", {"gen", "--n", "300", "--seed", "5", "--noise", "0.1", "--output", csv});
  REQUIRE(gen.exit_code == 0);
  CHECK(json::parse(gen.out)["n"] == 300);

  const auto run = (dir / "run").string();
  auto fit = run_tool("tls-fit", {"fit", "--input", csv, "--out", run});
  REQUIRE(fit.exit_code == 0);
  const auto r = json::parse(fit.out);  // stdout is exactly one JSON object
  for (const char* key : {"a", "b", "c", "cost", "dual", "certified"}) CHECK(r.contains(key));
  CHECK(r["certified"] == true);
  CHECK(r["n"] == 300);
  for (const char* f : {"manifest.json", "config.resolved.yaml", "command.txt", "result.json",
                        "artifacts/residuals.npy", "artifacts/points.npy"})
    CHECK(fs::exists(fs::path(run) / f));
  const auto manifest = json::parse(read_text(fs::path(run) / "manifest.json"));
  CHECK(manifest["exit_code"] == 0);
  CHECK(manifest["status"] == "finished");

  // The plot script draws the run to PNG (where Debian's python3-matplotlib is installed).
  if (std::system("/usr/bin/python3 -c 'import matplotlib, numpy' 2>/dev/null") == 0) {
    const std::string cmd = (source_dir() / "scripts/plot/tls_fit.py").string() + " " + run + " >/dev/null";
    CHECK(std::system(cmd.c_str()) == 0);
    CHECK(fs::file_size(fs::path(run) / "artifacts/fit.png") > 1000);
  } else {
    MESSAGE("python3-matplotlib absent: plot script not exercised");
  }

  // The perpendicular line through the data is not certified: exit 3.
  const double a = r["a"], b = r["b"];
  const std::string worst = std::to_string(-b) + "," + std::to_string(a) + ",0";
  auto bad = run_tool("tls-fit", {"fit", "--input", csv, "--candidate", worst, "--out", (dir / "r2").string()});
  CHECK(bad.exit_code == 3);
  CHECK(json::parse(bad.out)["certified"] == false);
}

// The GM certificate's multiplier searches and constraint graphs from the command line: the O(N)
// sparse SDP (default), the chordal ADMM and the dense SDP agree on a clean line; a block escalation
// is reported; a shifted (non-stationary) candidate and a planted local minimum are rejected with exit 3.
TEST_CASE("gm certificate: --multipliers sparse_sdp | chordal | stationary_sdp, --graph, --block") {
  TempDir dir("tls-cli-gm");
  const auto csv = (dir / "p.csv").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "60", "--seed", "2", "--output", csv}).exit_code == 0);
  std::vector<json> runs;
  for (const char* m : {"sparse_sdp", "chordal", "stationary_sdp"}) {
    CAPTURE(m);
    auto fit = run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--solver", "irls", "--multipliers", m,
                                    "--out", (dir / m).string()});
    CHECK(fit.exit_code == 0);
    const auto r = json::parse(fit.out);
    CHECK(r["certified"] == true);
    CHECK(r["multipliers"] == m);
    CHECK(r["graph"]["name"].get<std::string>().find("balanced chain") == 0);
    CHECK(r["graph"]["tried"].size() == 1);
    CHECK(r.contains("multiplier_sdp"));
    runs.push_back(r);
  }
  CHECK(runs[0]["multiplier_sdp"]["status"] == "above_target");
  CHECK(runs[1]["multiplier_sdp"]["proven"] == true);
  CHECK(runs[0]["dual"].get<double>() == doctest::Approx(runs[2]["dual"].get<double>()).epsilon(1e-9));

  // Data-order blocks of 2 as asked; a candidate shifted off the optimum is rejected.
  const double a = runs[0]["a"], b = runs[0]["b"], c = runs[0]["c"];
  const std::string shifted = std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c + 1.0);
  // The solver follows the mode: --mode gm --candidate needs no --solver (it was exit 2, "eig is plain TLS only").
  auto off = run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--candidate", shifted,
                                  "--graph", "data", "--block", "2", "--out", (dir / "off").string()});
  CHECK(off.exit_code == 3);
  const auto o = json::parse(off.out);
  CHECK(o["certified"] == false);
  CHECK(o["graph"]["name"] == "blocks of 2 (data order)");
  CHECK(o["multiplier_sdp"]["status"] == "below_target");

  // Outliers: the chain fails, larger blocks are tried in turn.
  const auto outl = (dir / "o.csv").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "40", "--seed", "1", "--outliers", "0.2", "--angle", "52", "--output", outl})
              .exit_code == 0);
  auto esc = run_tool("tls-fit", {"fit", "--input", outl, "--mode", "gm", "--solver", "irls", "--out", (dir / "esc").string()});
  const auto e = json::parse(esc.out);
  REQUIRE(e["graph"]["tried"].size() >= 2);
  CHECK(e["graph"]["tried"][0]["certified"] == false);
  CHECK((esc.exit_code == 0) == e["certified"].get<bool>());

  // A planted local minimum (single start, beaten by the exhaustive search) is rejected at once: multi-start
  // IRLS finds a cheaper line, so no larger graph is tried.
  const auto hard = (dir / "h.csv").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "200", "--seed", "7", "--outliers", "0.3", "--output", hard}).exit_code == 0);
  auto local = run_tool("tls-fit", {"fit", "--input", hard, "--mode", "gm", "--sigma", "0.2", "--solver", "irls",
                                    "--init-angle", "0", "--verify", "--out", (dir / "local").string()});
  CHECK(local.exit_code == 3);
  const auto l = json::parse(local.out);
  REQUIRE(l["cost"].get<double>() > l["global_cost"].get<double>() * (1 + 1e-6));
  CHECK(l["certified"] == false);
  CHECK(l["better_line"]["cost"].get<double>() < l["cost"].get<double>());
  CHECK(l["graph"]["tried"].size() == 1);
  CHECK(l["certificate_detail"].get<std::string>().find("lower cost") != std::string::npos);

  CHECK(run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--solver", "irls", "--graph", "star"}).exit_code == 2);
  CHECK(run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--solver", "irls", "--block", "-1"}).exit_code == 2);
}

TEST_CASE("bare run works on generated data, --print-config matches configs/tls-fit/default.yaml") {
  TempDir dir("tls-cli");
  auto bare = run_tool("tls-fit", {}, dir.path());
  CHECK(bare.exit_code == 0);
  CHECK(json::parse(bare.out)["certified"] == true);
  auto printed = run_tool("tls-fit", {"fit", "--print-config"});
  auto with_default = run_tool(
      "tls-fit", {"fit", "--config", (source_dir() / "configs/tls-fit/default.yaml").string(), "--print-config"});
  CHECK(printed.exit_code == 0);
  CHECK(printed.out == with_default.out);

  // Each --config takes one file: the positional override after it stays an override, a second --config wins.
  write_text(dir / "sigma.yaml", "sigma: 3\n");
  auto layered = run_tool("tls-fit", {"fit", "--config", (source_dir() / "configs/tls-fit/default.yaml").string(),
                                      "--config", (dir / "sigma.yaml").string(), "starts=5", "--print-config"});
  CHECK(layered.exit_code == 0);
  CHECK(layered.out.find("sigma: 3\n") != std::string::npos);
  CHECK(layered.out.find("starts: 5\n") != std::string::npos);

  // Overrides without a command go to the default command; a word that is neither is a usage error.
  auto implicit = run_tool("tls-fit", {"starts=3", "--print-config"});
  CHECK(implicit.exit_code == 0);
  CHECK(implicit.out.find("starts: 3\n") != std::string::npos);
  auto typo = run_tool("tls-fit", {"fti"});
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.find("'fti' is neither a command (fit, sdp, gen)") != std::string::npos);
}

// Sets (or, with nullptr, unsets) an environment variable for its lifetime; the tools run meanwhile inherit it.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    if (value) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

TEST_CASE("threads: one rule for every command, the count in the log and the manifest") {
  TempDir dir("tls-cli-threads");
  const auto csv = (dir / "p.csv").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "50", "--output", csv}).exit_code == 0);
  auto manifest_threads = [&](const char* run) {
    return json::parse(read_text(dir / run / "manifest.json"))["threads"];
  };
  {
    const ScopedEnv env("OMP_NUM_THREADS", "3");
    const auto from_env = run_tool("tls-fit", {"fit", "--input", csv, "--out", (dir / "env").string()});
    REQUIRE(from_env.exit_code == 0);
    CHECK(manifest_threads("env") == 3);
    CHECK(from_env.err.find("threads: 3 (OMP_NUM_THREADS=3)") != std::string::npos);
    CHECK(read_text(dir / "env" / "config.resolved.yaml").find("threads: 0\n") != std::string::npos);
    const auto flag = run_tool("tls-fit", {"fit", "--input", csv, "--threads", "2", "--out", (dir / "flag").string()});
    REQUIRE(flag.exit_code == 0);
    CHECK(manifest_threads("flag") == 2);
  }
  {
    const ScopedEnv env("OMP_NUM_THREADS", "many");
    const auto bad_env = run_tool("tls-fit", {"fit", "--input", csv, "--out", (dir / "bad").string()});
    CHECK(bad_env.exit_code == 2);
    CHECK(bad_env.err.find("OMP_NUM_THREADS='many'") != std::string::npos);
  }
  {
    const ScopedEnv env("OMP_NUM_THREADS", nullptr);
    const auto all = run_tool("tls-fit", {"fit", "--input", csv, "threads=0", "--out", (dir / "all").string()});
    REQUIRE(all.exit_code == 0);
    CHECK(manifest_threads("all") == static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
  const auto negative = run_tool("tls-fit", {"sdp", "threads=-1"});
  CHECK(negative.exit_code == 2);
  CHECK(negative.err.find("threads must be >= 0") != std::string::npos);
}

TEST_CASE("a result with a file name that is not UTF-8 is still printed (invalid bytes replaced)") {
  TempDir dir("tls-cli");
  const auto csv = dir / "pts\xff.csv";
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "20", "--output", csv.string()}).exit_code == 0);
  auto r = run_tool("tls-fit", {"fit", "--input", csv.string(), "--out", (dir / "r\xff").string()});
  CHECK(r.exit_code == 0);
  const auto j = json::parse(r.out);
  CHECK(j["source"].get<std::string>().find("pts\xEF\xBF\xBD.csv") != std::string::npos);
  CHECK(json::parse(read_text(dir / "r\xff" / "result.json"))["source"] == j["source"]);
}

TEST_CASE("bad input: exit codes and messages") {
  TempDir dir("tls-cli");
  write_text(dir / "bad.csv", "x,y\n1,2\n3,4\n5,6\n1,2\n3,4\n7,abc\n");
  auto r = run_tool("tls-fit", {"fit", "--input", (dir / "bad.csv").string(), "--out", (dir / "r").string()});
  CHECK(r.exit_code == 65);
  CHECK(r.err.find("bad.csv:7") != std::string::npos);
  CHECK(r.out.empty());
  // A non-UTF-8 byte quoted in the error message: still exit 65, and the manifest closes (it stayed "running"
  // with exit 1 when its JSON could not be written).
  write_text(dir / "latin1.csv", "x,y\n1,2\n3,\xe9\xff\n");
  r = run_tool("tls-fit", {"fit", "--input", (dir / "latin1.csv").string(), "--out", (dir / "rl").string()});
  CHECK(r.exit_code == 65);
  const auto failed = json::parse(read_text(dir / "rl" / "manifest.json"));
  CHECK(failed["status"] == "failed");
  CHECK(failed["exit_code"] == 65);
  // --config naming a folder is a usage error, as is a complex YAML key.
  CHECK(run_tool("tls-fit", {"fit", "--config", dir.path().string()}).exit_code == 2);
  write_text(dir / "complex.yaml", "? [a, b]\n: 1\n");
  CHECK(run_tool("tls-fit", {"fit", "--config", (dir / "complex.yaml").string()}).exit_code == 2);

  write_text(dir / "one.csv", "1,2\n");
  CHECK(run_tool("tls-fit", {"fit", "--input", (dir / "one.csv").string(), "--dry-run"}).exit_code == 0);
  CHECK(run_tool("tls-fit", {"fit", "--input", (dir / "one.csv").string(), "--out", (dir / "r1").string()})
            .exit_code == 65);
  write_text(dir / "same.csv", "1,2\n1,2\n1,2\n");
  CHECK(run_tool("tls-fit", {"fit", "--input", (dir / "same.csv").string(), "--out", (dir / "r2").string()})
            .exit_code == 65);
  write_text(dir / "nan.csv", "1,2\nnan,2\n3,4\n");
  auto nan = run_tool("tls-fit", {"fit", "--input", (dir / "nan.csv").string(), "--out", (dir / "r3").string()});
  CHECK(nan.exit_code == 65);
  CHECK(nan.err.find("nan.csv:2") != std::string::npos);

  CHECK(run_tool("tls-fit", {"fit", "--input", (dir / "absent.csv").string(), "--out", (dir / "r4").string()})
            .exit_code == 66);

  write_text(dir / "cfg.yaml", "tol: 1e-9\nsigmaa: 2\n");
  auto key = run_tool("tls-fit", {"fit", "--config", (dir / "cfg.yaml").string()});
  CHECK(key.exit_code == 2);
  CHECK(key.err.find("sigmaa") != std::string::npos);
  CHECK(key.err.find("cfg.yaml:2") != std::string::npos);

  CHECK(run_tool("tls-fit", {"fit", "no.such.key=1"}).exit_code == 2);
  CHECK(run_tool("tls-fit", {"fit", "--candidate", "1,2"}).exit_code == 2);
  CHECK(run_tool("tls-fit", {"--no-such-flag"}).exit_code == 2);
}

TEST_CASE("settings that make no sense are usage errors naming the key, not data errors") {
  TempDir dir("tls-cli-settings");
  const std::string csv = (dir / "p.csv").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "50", "--output", csv}).exit_code == 0);
  // .inf passed at_least/positive: gen wrote no file and failed with 65 ("cannot be read back").
  for (const char* key : {"offset=.inf", "noise=.inf", "extent=.inf"}) {
    CAPTURE(key);
    const auto r = run_tool("tls-fit", {"gen", "--output", (dir / "g.csv").string(), key});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(std::string(key).substr(0, std::string(key).find('='))) != std::string::npos);
  }
  auto fit = run_tool("tls-fit", {"fit", "--input", csv, "synthetic.offset=.inf", "--out", (dir / "r0").string()});
  CHECK(fit.exit_code == 2);
  // A start angle of .inf made a NaN line (65: "line (-nan, ...) is not a line").
  fit = run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--solver", "irls", "--init-angle", ".inf",
                             "--out", (dir / "r1").string()});
  CHECK(fit.exit_code == 2);
  CHECK(fit.err.find("init_angle") != std::string::npos);
  // sigma whose square underflows: every weight 0 (65: "weighted TLS: all weights are zero").
  fit = run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--solver", "irls", "--sigma", "1e-200",
                             "--out", (dir / "r2").string()});
  CHECK(fit.exit_code == 2);
  CHECK(fit.err.find("sigma") != std::string::npos);
  CHECK(run_tool("tls-fit", {"gen", "--n", "10"}).exit_code == 2);  // no --output
  auto out = run_tool("tls-fit", {"gen", "--n", "10", "--output", (dir / "g.csv").string(), "--out", (dir / "o").string()});
  CHECK(out.exit_code == 2);  // gen writes no run directory: --out would be silently ignored
  CHECK(out.err.find("--out does not apply to 'gen'") != std::string::npos);
  CHECK(run_tool("tls-fit", {"gen", "--device", "cuda", "--output", "x"}).exit_code == 2);
}

TEST_CASE("help and version") {
  auto help = run_tool("tls-fit", {"fit", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("Exit codes") != std::string::npos);
  CHECK(help.out.find("--candidate") != std::string::npos);
  auto version = run_tool("tls-fit", {"--version"});
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("git") != std::string::npos);
}

TEST_CASE("SIGTERM ends a long solve at once (timeout, kill, scancel)") {
  TempDir dir("tls-cli-sigterm");
  const std::string csv = (dir / "p.csv").string(), sdpa = (dir / "gm.dat-s").string();
  REQUIRE(run_tool("tls-fit", {"gen", "--n", "200", "--seed", "1", "--output", csv}).exit_code == 0);
  REQUIRE(run_tool("tls-fit", {"fit", "--input", csv, "--mode", "gm", "--solver", "irls", "--multipliers",
                               "closed_form", "--export-sdpa", sdpa, "--out", (dir / "r").string()})
              .exit_code != 1);
  // Solving this relaxation takes minutes (csdp too); the flag-only handler let it run to the end.
  const auto r = run_tool_signalled("tls-fit", {"sdp", "--input", sdpa, "-q"}, SIGTERM, std::chrono::milliseconds(500));
  CHECK(r.ended_in_time);
  CHECK(r.exit_code == 128 + SIGTERM);
}
