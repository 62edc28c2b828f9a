// Run directory files: atomic writes leave no partial file, metrics lines are flushed JSON.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

TEST_CASE("a run directory has one holder at a time; an ended holder's lock is taken over") {
  test::TempDir dir("rundir");
  {
    RunDir first("tool", dir / "run");
    CHECK(test::read_text(dir / "run" / ".lock").find("pid " + std::to_string(::getpid())) != std::string::npos);
    const std::string holder = "is in use by another run (pid " + std::to_string(::getpid());
    CHECK_THROWS_WITH_AS(RunDir("tool", dir / "run"), doctest::Contains(holder.c_str()), UsageError);
  }
  CHECK_NOTHROW(RunDir("tool", dir / "run"));  // released with its holder
  // Another process holds it until it is killed (-9): refused while it lives, taken over after.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RunDir held("tool", dir / "run");
    const char c = 'x';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  const std::string holder = "(pid " + std::to_string(child);
  CHECK_THROWS_WITH_AS(RunDir("tool", dir / "run"), doctest::Contains(holder.c_str()), UsageError);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(test::read_text(dir / "run" / ".lock").find("pid " + std::to_string(child)) != std::string::npos);
  RunDir again("tool", dir / "run");
  CHECK(test::read_text(dir / "run" / ".lock").find("pid " + std::to_string(::getpid())) != std::string::npos);
  ::close(ready[0]);
  ::close(ready[1]);
}
