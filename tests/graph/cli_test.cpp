// graphzero-mine end to end: JSON results, known counts on the shared graphs, motifs, plan and
// list commands, and the exit codes of bad inputs (65 with the line, 66, 2).
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "brute_force.hpp"
#include "graph/graph_io.hpp"
#include "test_support.hpp"

using core::test::run_tool;
using core::test::TempDir;
using core::test::write_text;
using nlohmann::json;

namespace {

// The tool's default graph cache ("auto") is $XDG_CACHE_HOME/toolkit/graphs: every run in this binary
// (children inherit the environment) keeps it in a temporary folder, never in the user's ~/.cache.
struct PrivateCacheHome {
  TempDir dir{"gz-cli-xdg"};
  PrivateCacheHome() { ::setenv("XDG_CACHE_HOME", dir.path().c_str(), 1); }
};
const PrivateCacheHome private_cache_home;

const char* kGraph = "0 1\n0 2\n1 2\n1 3\n2 3\n3 4\n4 5\n5 3\n0 5\n2 4\n";

json last_json_line(const std::string& out) {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return json::parse(last);
}

}  // namespace

TEST_CASE("count prints one JSON object with the exact count and timings") {
  TempDir dir("gz-cli-count");
  write_text(dir / "g.el", kGraph);
  const auto g = core::graph::read_edge_list(dir / "g.el");
  for (const char* pattern : {"triangle", "diamond", "4-cycle", "0-1,1-2,2-3,3-0,0-4,1-4"}) {
    for (const char* mode : {"edge", "vertex"}) {
      for (const char* backend : {"interp", "jit"}) {
        if (std::string(backend) == "jit" && std::string(pattern) != "diamond") continue;
        const auto r = run_tool("graphzero-mine",
                                {"count", "--graph", (dir / "g.el").string(), "--pattern", pattern, "--induced", mode,
                                 "--threads", "2", "--backend", backend, "--jit-cache", (dir / "jit").string(),
                                 "--out", (dir / "run").string(), "-q"});
        CAPTURE(pattern);
        CAPTURE(r.err);
        REQUIRE(r.exit_code == 0);
        const json j = json::parse(r.out);
        const auto p = core::graph::parse_pattern(pattern);
        CHECK(j["count"].get<std::uint64_t>() == core::graph::test::brute_force_count(g, p, std::string(mode) == "vertex"));
        CHECK(j.contains("time_s"));
        CHECK(j.contains("plan_time_s"));
        CHECK(j["load_cpu_s"].get<double>() >= 0);    // the process's CPU seconds of loading ...
        CHECK(j["orient_cpu_s"].get<double>() >= 0);  // ... and of relabelling (none when the cache is mapped)
        CHECK(j["graph"]["vertices"] == 6);
      }
    }
  }
  CHECK(std::filesystem::exists(dir / "run" / "artifacts" / "plan.txt"));
  CHECK(std::filesystem::exists(dir / "run" / "artifacts" / "kernel.cpp"));
}

TEST_CASE("--backend auto: the interpreter for short counts and local-graph cliques, the JIT once its kernels are cached") {
  TempDir dir("gz-cli-backend");
  write_text(dir / "g.el", kGraph);
  const auto count = [&](const char* pattern, const char* backend) {
    const auto r = run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--pattern", pattern,
                                               "--backend", backend, "--jit-cache", (dir / "jit").string(), "-q",
                                               "--out", (dir / "run").string()});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  const json clique = count("4-clique", "auto");
  CHECK(clique["backend"] == "interp");
  CHECK(clique["backend_choice"].get<std::string>().find("local graphs") != std::string::npos);
  const json first = count("diamond", "auto");  // a tiny graph: predicted far below a compile's worth
  CHECK(first["backend"] == "interp");
  CHECK(first["backend_choice"].get<std::string>().find("predicted") != std::string::npos);
  const json jit = count("diamond", "jit");
  CHECK(jit["backend_choice"] == "requested");
  const json cached = count("diamond", "auto");
  CHECK(cached["backend"] == "jit");
  CHECK(cached["backend_choice"] == "kernels cached");
  CHECK(cached["jit_cached"] == true);
  CHECK(cached["count"] == first["count"]);
}

TEST_CASE("a dear enumeration reports its race against the counting-tail plan; the count stays the same") {
  // The triangular prism on R-MAT scale 10: the by-cost plan enumerates (predicted above the race's 3e7
  // units), so it races the pair plan (and the same with tables) on sampled roots; with --formula on nothing is
  // raced.
  TempDir dir("gz-cli-race");
  const auto count = [&](const char* pattern, const char* formula) {
    const auto r = run_tool("graphzero-mine", {"count", "--graph", "rmat:10:8", "--pattern", pattern, "--formula", formula,
                                               "--threads", "2", "-q", "--out", (dir / "run").string()});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  };
  const char* prism = "0-1,0-2,0-3,1-2,1-4,2-5,3-4,3-5,4-5";
  const json raced = count(prism, "auto");
  const json& race = raced["plan"]["race"];
  REQUIRE(race.is_object());
  // The pair plan, merging its sets or looking their sizes up in tables (Plan::tabled_pairs, interpreter only).
  const bool tabled = race["challenger_formula"] == "tabled pairs";
  CHECK((tabled || race["challenger_formula"] == "pairs"));
  CHECK(raced["plan"]["tabled_pairs"] == (tabled && race["challenger_won"].get<bool>()));
  // Task seconds, the calls' set-up taken off (0 where the sample is set-up alone), on 1/256 to 1/32 of the tasks.
  CHECK(race["incumbent_sample_s"].get<double>() >= 0);
  CHECK(race["challenger_sample_s"].get<double>() >= 0);
  CHECK(race["sample_share"].get<double>() >= 1.0 / 256);
  CHECK(race["sample_share"].get<double>() <= 1.0 / 32);
  CHECK(race["challenger_won"].is_boolean());
  CHECK(raced["plan"]["formula"] == (race["challenger_won"].get<bool>() ? "pairs" : "none"));
  const json fixed = count(prism, "on");
  CHECK(fixed["plan"]["race"].is_null());
  CHECK(fixed["count"] == raced["count"]);
  CHECK(count("triangle", "auto")["plan"]["race"].is_null());
}

TEST_CASE("--local-graph and --split-roots change how cliques are counted, never the count") {
  TempDir dir("gz-cli-local");
  std::string edges;  // K7 plus a tail: 35 4-cliques
  for (int u = 0; u < 7; ++u)
    for (int v = u + 1; v < 7; ++v) edges += std::to_string(u) + " " + std::to_string(v) + "\n";
  write_text(dir / "g.el", edges + "6 7\n7 8\n");
  for (const char* local : {"auto", "on", "off"}) {
    for (const char* split : {"true", "false"}) {
      const auto r = run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--pattern", "4-clique",
                                                 "--threads", "2", "--local-graph", local, "--split-roots", split,
                                                 "--graph-cache", "off", "-q"});
      CAPTURE(local);
      CAPTURE(r.err);
      REQUIRE(r.exit_code == 0);
      const json j = json::parse(r.out);
      CHECK(j["count"] == 35);
      if (std::string(local) != "auto") CHECK(j["plan"]["local_graph"] == (std::string(local) == "on"));
      CHECK(j["idle_tail_s"].get<double>() >= 0);
      CHECK(j["largest_task_cpu_s"].get<double>() >= 0);
    }
  }
  const auto bad = run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--local-graph", "maybe", "-q"});
  CHECK(bad.exit_code == 2);
}

TEST_CASE("known triangle counts of the shared graphs") {
  TempDir dir("gz-cli-known");
  for (const auto& [name, triangles] : {std::pair<const char*, std::uint64_t>{"wiki-Vote.el", 608389},
                                        {"email-Enron.el", 727044}}) {
    if (!core::test::have_dataset(std::string("graphs/") + name)) {
      MESSAGE("dataset missing: ", name);
      continue;
    }
    const auto r = run_tool("graphzero-mine", {"count", "--graph", (core::test::datasets_dir() / "graphs" / name).string(),
                                               "--pattern", "triangle", "--threads", "2", "--graph-cache",
                                               (dir / "cache").string(), "--out", (dir / name).string(), "-q"});
    REQUIRE(r.exit_code == 0);
    CHECK(json::parse(r.out)["count"].get<std::uint64_t>() == triangles);
  }
}

TEST_CASE("motifs, plan and list") {
  TempDir dir("gz-cli-more");
  write_text(dir / "g.el", kGraph);
  const auto g = core::graph::read_edge_list(dir / "g.el");
  const auto m = run_tool("graphzero-mine", {"motifs", "--graph", (dir / "g.el").string(), "--size", "4", "--induced",
                                             "vertex", "--out", (dir / "m").string(), "-q"});
  REQUIRE(m.exit_code == 0);
  const json mj = json::parse(m.out);
  REQUIRE(mj["patterns"].size() == 6);
  for (const auto& e : mj["patterns"]) {
    const auto p = core::graph::parse_pattern(e["pattern"].get<std::string>());
    CHECK(e["count"].get<std::uint64_t>() == core::graph::test::brute_force_count(g, p, true));
  }
  const auto pl = run_tool("graphzero-mine", {"plan", "--graph", (dir / "g.el").string(), "--pattern", "house", "-q"});
  REQUIRE(pl.exit_code == 0);
  const json pj = json::parse(pl.out);
  CHECK(pj["plan"]["order"].size() == 5);
  CHECK(pj["plan"]["restrictions"].size() == 1);
  CHECK(pj["text"].get<std::string>().find("predicted cost") != std::string::npos);
  // plan writes no run directory, so --help does not list --out (and --out is refused).
  const auto help = run_tool("graphzero-mine", {"plan", "--help"});
  CHECK(help.out.find("--formula") != std::string::npos);
  CHECK(help.out.find("--out") == std::string::npos);
  CHECK(run_tool("graphzero-mine", {"plan", "--graph", (dir / "g.el").string(), "--out", (dir / "p").string(), "-q"})
            .exit_code == 2);
  // The counting formula: the plan JSON names it; on and off count the same (a 5-star's 4 leaves).
  const auto star = run_tool("graphzero-mine", {"plan", "--graph", (dir / "g.el").string(), "--pattern", "5-star",
                                                "--formula", "on", "-q"});
  REQUIRE(star.exit_code == 0);
  CHECK(json::parse(star.out)["plan"]["formula"] == "inclusion-exclusion");
  CHECK(json::parse(star.out)["plan"]["iep"]["levels"] == 4);
  CHECK(json::parse(star.out)["plan"]["iep"]["redundancy"] == 24);
  std::set<std::uint64_t> counts;
  for (const char* f : {"on", "off", "auto"}) {
    const auto c = run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--pattern", "5-star",
                                               "--formula", f, "--out", (dir / (std::string("f") + f)).string(), "-q"});
    REQUIRE(c.exit_code == 0);
    counts.insert(json::parse(c.out)["count"].get<std::uint64_t>());
    CHECK(json::parse(c.out)["pattern_vertices"] == 5);
  }
  CHECK(counts.size() == 1);
  CHECK(*counts.begin() == core::graph::test::brute_force_count(g, core::graph::named_pattern("5-star"), false));
  CHECK(run_tool("graphzero-mine", {"plan", "--graph", (dir / "g.el").string(), "--formula", "maybe", "-q"}).exit_code == 2);
  // Pattern decomposition: the dumbbell's plan names its cut and quotients; on, off and auto count
  // the brute-force number, and the run directory's plan.json records the decomposition.
  const auto db = run_tool("graphzero-mine", {"plan", "--graph", (dir / "g.el").string(), "--pattern", "dumbbell",
                                              "--formula", "on", "-q"});
  REQUIRE(db.exit_code == 0);
  CHECK(json::parse(db.out)["plan"]["formula"] == "decomposition");
  CHECK(!json::parse(db.out)["plan"]["decomposition"]["cut"].empty());
  CHECK(json::parse(db.out)["text"].get<std::string>().find("quotient patterns") != std::string::npos);
  std::set<std::uint64_t> dumbbells;
  for (const char* f : {"on", "off", "auto"}) {
    const auto c = run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--pattern", "dumbbell",
                                               "--formula", f, "--out", (dir / (std::string("d") + f)).string(), "-q"});
    REQUIRE(c.exit_code == 0);
    dumbbells.insert(json::parse(c.out)["count"].get<std::uint64_t>());
    if (std::string(f) != "auto")  // auto: the cost model's choice on this small graph
      CHECK((json::parse(c.out)["plan"]["formula"] == "decomposition") == (std::string(f) == "on"));
  }
  CHECK(dumbbells.size() == 1);
  CHECK(*dumbbells.begin() == core::graph::test::brute_force_count(g, core::graph::named_pattern("dumbbell"), false));
  CHECK(!json::parse(core::test::read_text(dir / "don" / "artifacts" / "plan.json"))["decomposition"]["quotients"].empty());
  const auto ls = run_tool("graphzero-mine", {"list", "--graph", (dir / "g.el").string(), "--pattern", "triangle",
                                              "--limit", "3", "-q"});
  REQUIRE(ls.exit_code == 0);
  std::istringstream in(ls.out);
  std::string line;
  int rows = 0;
  while (std::getline(in, line) && line.front() == '[') ++rows;
  CHECK(rows == 3);
  CHECK(last_json_line(ls.out)["listed"] == 3);
  CHECK(last_json_line(ls.out)["complete"] == false);
}

TEST_CASE("list: a limit equal to the number of matches is a complete list") {
  TempDir dir("gz-cli-list");
  write_text(dir / "g.el", kGraph);  // 4 triangles
  for (int limit : {3, 4, 5}) {
    CAPTURE(limit);
    const auto ls = run_tool("graphzero-mine", {"list", "--graph", (dir / "g.el").string(), "--pattern", "triangle",
                                                "--limit", std::to_string(limit), "--threads", "2", "-q"});
    REQUIRE(ls.exit_code == 0);
    std::istringstream in(ls.out);
    std::string line;
    int rows = 0;
    while (std::getline(in, line) && line.front() == '[') ++rows;
    CHECK(rows == std::min(limit, 4));
    CHECK(last_json_line(ls.out)["listed"] == std::min(limit, 4));
    CHECK(last_json_line(ls.out)["complete"] == (limit >= 4));  // limit 4 said "false"
  }
}

TEST_CASE("bad inputs exit with the conventions' codes") {
  TempDir dir("gz-cli-bad");
  write_text(dir / "bad.el", "0 1\n1 2\n2 two\n");
  auto r = run_tool("graphzero-mine", {"count", "--graph", (dir / "bad.el").string(), "--pattern", "triangle",
                                       "--graph-cache", "off", "--out", (dir / "r1").string()});
  CHECK(r.exit_code == 65);
  CHECK(r.err.find("bad.el:3") != std::string::npos);
  CHECK(r.out.empty());
  r = run_tool("graphzero-mine", {"count", "--graph", (dir / "none.el").string(), "--out", (dir / "r2").string()});
  CHECK(r.exit_code == 66);
  r = run_tool("graphzero-mine", {"count", "--graph", "rmat:6", "--pattern", "dodecahedron", "--out", (dir / "r3").string()});
  CHECK(r.exit_code == 2);
  r = run_tool("graphzero-mine", {"count", "--graph", "rmat:6", "--induced", "both", "--out", (dir / "r4").string()});
  CHECK(r.exit_code == 2);
  // The CSR cache: written, then mapped (the same count); truncated, exit 65 naming it and no result.
  write_text(dir / "g.el", kGraph);
  const auto cached = [&](const char* run) {
    return run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--pattern", "triangle",
                                       "--graph-cache", (dir / "cache").string(), "--out", (dir / run).string(), "-q"});
  };
  const auto first = cached("r5"), second = cached("r6");
  REQUIRE(first.exit_code == 0);
  REQUIRE(second.exit_code == 0);
  const json a = json::parse(first.out), b = json::parse(second.out);
  CHECK_FALSE(a["graph"]["from_cache"].get<bool>());
  CHECK(b["graph"]["from_cache"].get<bool>());
  CHECK(a["count"] == b["count"]);
  const std::string file = b["graph"]["cache"];
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 4);
  r = cached("r7");
  CHECK(r.exit_code == 65);
  CHECK(r.err.find(file) != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("the default graph cache follows XDG_CACHE_HOME, then HOME") {
  TempDir dir("gz-cli-default-cache");
  write_text(dir / "g.el", kGraph);
  const auto run = [&](const char* name) {
    const auto r = run_tool("graphzero-mine", {"count", "--graph", (dir / "g.el").string(), "--pattern", "triangle",
                                               "--out", (dir / name).string(), "-q"});
    REQUIRE(r.exit_code == 0);
    return std::filesystem::path(json::parse(r.out)["graph"]["cache"].get<std::string>());
  };
  const auto in_folder = [](const std::filesystem::path& file, const std::filesystem::path& folder) {
    return file.parent_path().lexically_normal() == folder.lexically_normal();
  };
  const std::filesystem::path xdg_file = run("x");
  CHECK(in_folder(xdg_file, private_cache_home.dir / "toolkit" / "graphs"));
  CHECK(std::filesystem::exists(xdg_file));
  // Without XDG_CACHE_HOME: $HOME/.cache (HOME pointed at a scratch folder too).
  const std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", (dir / "home").c_str(), 1);
  const std::filesystem::path home_file = run("h");
  if (saved_home.empty()) ::unsetenv("HOME");
  else ::setenv("HOME", saved_home.c_str(), 1);
  ::setenv("XDG_CACHE_HOME", private_cache_home.dir.path().c_str(), 1);
  CHECK(in_folder(home_file, dir / "home" / ".cache" / "toolkit" / "graphs"));
  CHECK(std::filesystem::exists(home_file));
  CHECK(home_file.filename() == xdg_file.filename());  // the same input, the same name in either folder
}

TEST_CASE("the CI config runs the default command on a generated graph") {
  TempDir dir("gz-cli-tiny");
  const auto r = run_tool("graphzero-mine", {"--config", (core::test::source_dir() / "configs" / "graphzero-mine" / "tiny.yaml").string(),
                                             "--out", (dir / "run").string(), "-q"});
  CAPTURE(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out)["count"].get<std::uint64_t>() > 0);
}

TEST_CASE("SIGTERM stops a count inside one huge root (exit 75, no result)") {
  TempDir dir("gz-cli-sigterm");
  std::string star;
  for (int i = 1; i <= 3000; ++i) star += "0 " + std::to_string(i) + "\n";
  write_text(dir / "star.el", star);
  // Every 10-star has the hub as its root: one chunk, hours of enumeration. Stops were polled only
  // between chunks, so SIGTERM (timeout, kill, scancel) did nothing.
  const auto r = core::test::run_tool_signalled(
      "graphzero-mine", {"count", "--graph", (dir / "star.el").string(), "--pattern", "10-star", "--threads", "1",
                         "--graph-cache", "off", "--out", (dir / "run").string(), "-q"},
      SIGTERM, std::chrono::milliseconds(300), std::chrono::seconds(5),
      core::test::file_has_lines(dir / "run" / "command.txt"));  // the run (and its signal handling) has started
  CHECK(r.ended_in_time);
  CHECK(r.exit_code == 75);
  CHECK_FALSE(std::filesystem::exists(dir / "run" / "result.json"));
}
