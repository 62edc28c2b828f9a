// The one thread rule (common/threads.hpp): threads = N, else OMP_NUM_THREADS, else every core.
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "common/threads.hpp"

using core::resolve_threads;

TEST_CASE("threads: an explicit count wins over OMP_NUM_THREADS and the cores") {
  CHECK(resolve_threads(3, "7", 16).count == 3);
  CHECK(resolve_threads(3, nullptr, 16).source == "threads=3");
}

TEST_CASE("threads = 0: OMP_NUM_THREADS when set (its first value), else every core") {
  CHECK(resolve_threads(0, "5", 16).count == 5);
  CHECK(resolve_threads(0, " 6", 16).count == 6);
  CHECK(resolve_threads(0, "4,2", 16).count == 4);  // a nested list: the outer level
  CHECK(resolve_threads(0, "5", 16).source == "OMP_NUM_THREADS=5");
  CHECK(resolve_threads(0, nullptr, 16).count == 16);
  CHECK(resolve_threads(0, "", 16).count == 16);  // set but empty: as unset
  CHECK(resolve_threads(0, nullptr, 16).source == "all cores");
  CHECK(resolve_threads(0, nullptr, 0).count == 1);  // unknown core count
}

TEST_CASE("threads: a negative count or a malformed OMP_NUM_THREADS is a usage error") {
  CHECK_THROWS_AS(resolve_threads(-1, nullptr, 4), core::UsageError);
  for (const char* bad : {"0", "-2", "x", "3x", "2.5", "99999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(resolve_threads(0, bad, 4), core::UsageError);
  }
}

TEST_CASE("threads: set_thread_count is what thread_count reports") {
  core::set_thread_count(2);
  CHECK(core::thread_count() == 2);
  core::set_thread_count(1);
  CHECK(core::thread_count() == 1);
  CHECK_THROWS_AS(core::set_thread_count(0), core::UsageError);
}
