// SIGTERM/SIGUSR1 only set the stop flag (a job checkpoints at its next step boundary); a second
// signal while the flag is set ends the process.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <initializer_list>

#include "common/signals.hpp"

TEST_CASE("SIGUSR1 and SIGTERM request a stop instead of killing the process") {
  core::install_stop_signals();
  core::clear_stop_request();
  CHECK_FALSE(core::stop_requested());
  std::raise(SIGUSR1);
  CHECK(core::stop_requested());
  CHECK(core::stop_signal() == SIGUSR1);
  core::clear_stop_request();
  std::raise(SIGTERM);
  CHECK(core::stop_signal() == SIGTERM);
  core::clear_stop_request();
}

TEST_CASE("a second stop signal ends the process with that signal") {
  for (const int sig : {SIGTERM, SIGUSR1}) {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // the child exits 0 only when it outlives both signals
      core::install_stop_signals();
      core::clear_stop_request();
      std::raise(sig);
      if (!core::stop_requested()) _exit(1);
      std::raise(sig);
      _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CAPTURE(sig);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
  }
}
