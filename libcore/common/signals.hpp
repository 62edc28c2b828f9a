// Cooperative stop on SIGTERM/SIGUSR1 (Slurm preemption): the handler only sets a flag; a long
// job checks stop_requested() at step boundaries, checkpoints and exits with ExitCode::interrupted.
#pragma once

namespace core {

void install_stop_signals();
bool stop_requested();
int stop_signal();            // the signal that asked to stop, 0 if none
void request_stop_for_test();  // sets the flag as a signal would
void clear_stop_request();

}  // namespace core
