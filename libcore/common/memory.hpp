// Memory figures of this process for the tools' summaries (POSIX getrusage).
#pragma once
#include <sys/resource.h>

namespace core {

// Peak resident set size of this process so far, in MiB (Linux reports ru_maxrss in KiB).
inline double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace core
