// SIGTERM/SIGUSR1 only set the stop flag (a job checkpoints at its next step boundary).
#include <doctest/doctest.h>

#include <csignal>

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
