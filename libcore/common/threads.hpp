// The one thread rule of every command of every tool: the `threads` key (or --threads N) asks for N CPU threads;
// 0 means OMP_NUM_THREADS when that is set (its first value, as OpenMP reads a nested list), else every core.
// App resolves it once per command, before the command runs, applies it to OpenMP and to thread_count() (the
// worker pools that are not OpenMP's), and writes the count to the log and the run manifest.
#pragma once
#include <string>

namespace core {

struct ThreadChoice {
  int count = 1;
  std::string source;  // "threads=N", "OMP_NUM_THREADS=..." or "all cores" (for the log)
};

// `omp_num_threads` is the variable's value or null when unset; `cores` the hardware's thread count (0: unknown,
// taken as 1). UsageError for requested < 0 or an OMP_NUM_THREADS that does not start with a positive integer.
ThreadChoice resolve_threads(int requested, const char* omp_num_threads, unsigned cores);
// The same with the process's environment and std::thread::hardware_concurrency().
ThreadChoice resolve_threads(int requested);

// Sets the process-wide count: OpenMP's team size (where the build has OpenMP) and thread_count().
void set_thread_count(int count);
// The count set_thread_count() last set (before any: resolve_threads(0)).
int thread_count();

}  // namespace core
