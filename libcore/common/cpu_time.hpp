// CPU time of the whole process (every thread), for result JSON beside wall times: on a shared machine wall
// time overstates the work, and CPU time / threads is the best an idle machine's wall time could be.
#pragma once
#include <ctime>

namespace core {

// CPU seconds of this process so far (POSIX CLOCK_PROCESS_CPUTIME_ID).
inline double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace core
