// Run directory files: atomic writes leave no partial file, metrics lines are flushed JSON.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "test_support.hpp"

using namespace core;

TEST_CASE("AtomicFile appears only on commit") {
  test::TempDir dir("rundir");
  {
    AtomicFile f(dir / "a.txt");
    f.stream() << "hello";
    CHECK(!fs::exists(dir / "a.txt"));
  }
  CHECK(!fs::exists(dir / "a.txt"));
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 0);
  write_file_atomic(dir / "b.txt", "data");
  CHECK(test::read_text(dir / "b.txt") == "data");
  CHECK_THROWS_AS(write_file_atomic(dir / "missing" / "c.txt", "x"), IoError);
}

TEST_CASE("RunDir lays out the folder and metrics are one JSON object per line") {
  test::TempDir dir("rundir");
  RunDir run("tool", dir / "run");
  CHECK(fs::is_directory(dir / "run" / "artifacts"));
  CHECK(fs::is_directory(dir / "run" / "checkpoints"));
  run.metrics().write({{"step", 1}, {"loss", 2.5}});
  run.metrics().write({{"step", 2}, {"loss", 2.0}, {"time_s", 9.0}});
  const std::string text = test::read_text(dir / "run" / "metrics.jsonl");
  const auto nl = text.find('\n');
  const auto first = nlohmann::json::parse(text.substr(0, nl));
  const auto second = nlohmann::json::parse(text.substr(nl + 1));
  CHECK(first["step"] == 1);
  CHECK(first.contains("time_s"));
  CHECK(second["time_s"] == 9.0);
  run.write_manifest({{"status", "running"}});
  CHECK(nlohmann::json::parse(test::read_text(dir / "run" / "manifest.json"))["status"] == "running");
}

TEST_CASE("a run directory is reused only by the command that made it") {
  test::TempDir dir("rundir");
  CHECK_NOTHROW(check_run_dir_reuse(dir / "absent", "zpp-train", "export"));
  CHECK_NOTHROW(check_run_dir_reuse(dir.path(), "zpp-train", "export"));  // a folder without manifest.json
  test::write_text(dir / "manifest.json", R"({"tool": "zpp-train", "command": "train", "status": "finished"})");
  CHECK_NOTHROW(check_run_dir_reuse(dir.path(), "zpp-train", "train"));  // --resume, or the same run again
  CHECK_THROWS_WITH_AS(check_run_dir_reuse(dir.path(), "zpp-train", "export"),
                       doctest::Contains("holds a run of 'zpp-train train'; 'zpp-train export' would overwrite"),
                       UsageError);
  CHECK_THROWS_AS(check_run_dir_reuse(dir.path(), "tls-fit", "train"), UsageError);
  test::write_text(dir / "manifest.json", "{\"tool\": ");
  CHECK_THROWS_WITH_AS(check_run_dir_reuse(dir.path(), "zpp-train", "train"),
                       doctest::Contains("a manifest.json that cannot be read"), UsageError);
}
