// Cooperative stop on SIGTERM/SIGUSR1 (Slurm preemption): the handler only sets a flag; a long
// job checks stop_requested() at step boundaries, checkpoints and exits with ExitCode::interrupted.
// A second signal before the job has stopped ends the process at once (the signal's default action).
// Installed only for commands that poll the flag (core::Command::stops_at_signal); the others keep
// the default action, so kill / scancel end them.
#pragma once

namespace core {

void install_stop_signals();
bool stop_requested();
int stop_signal();            // the signal that asked to stop, 0 if none
void request_stop_for_test();  // sets the flag as a signal would
void clear_stop_request();

}  // namespace core
