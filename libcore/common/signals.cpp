// SIGTERM/SIGUSR1 set a flag that long jobs poll at step boundaries (see signals.hpp); a second
// one while the flag is set takes the signal's default action (the process ends at once).
#include "common/signals.hpp"

#include <csignal>

namespace core {

static volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void core_stop_handler(int sig) {
  if (g_stop_signal != 0) {  // signal() and raise() are async-signal-safe
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = core_stop_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

bool stop_requested() { return g_stop_signal != 0; }
int stop_signal() { return g_stop_signal; }
void request_stop_for_test() { g_stop_signal = SIGUSR1; }
void clear_stop_request() { g_stop_signal = 0; }

}  // namespace core
