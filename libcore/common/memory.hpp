// Memory figures of this process and machine for the tools' summaries and resource guards
// (POSIX getrusage; Linux /proc/meminfo).
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

namespace core {

// Peak resident set size of this process so far, in MiB (Linux reports ru_maxrss in KiB).
inline double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

// Memory the machine can still give this process, in bytes: MemAvailable of /proc/meminfo (else the
// free physical pages), capped by what its cgroup's limit leaves (as under Slurm or in a container);
// 0 when nothing is known.
inline std::uint64_t available_memory_bytes() {
  std::uint64_t avail = 0;
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    std::uint64_t kib = 0;
    while (meminfo >> key >> kib >> unit)
      if (key == "MemAvailable:") {
        avail = kib * 1024;
        break;
      }
  }
  if (avail == 0) {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) avail = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  }
  // The cgroup's limit left: v2 ("0::/path": memory.max - memory.current) or v1 ("N:memory:/path":
  // memory.limit_in_bytes - memory.usage_in_bytes); "max" (no limit) does not parse and is skipped.
  auto cap = [&avail](const std::string& dir, const char* limit_file, const char* usage_file) {
    std::uint64_t limit = 0, usage = 0;
    if ((std::ifstream(dir + limit_file) >> limit) && (std::ifstream(dir + usage_file) >> usage)) {
      const std::uint64_t left = limit > usage ? limit - usage : 0;
      avail = avail == 0 ? left : std::min(avail, left);
    }
  };
  std::string line;
  for (std::ifstream cg("/proc/self/cgroup"); std::getline(cg, line);) {
    if (line.rfind("0::", 0) == 0) cap("/sys/fs/cgroup" + line.substr(3), "/memory.max", "/memory.current");
    const auto v1 = line.find(":memory:");
    if (v1 != std::string::npos)
      cap("/sys/fs/cgroup/memory" + line.substr(v1 + 8), "/memory.limit_in_bytes", "/memory.usage_in_bytes");
  }
  return avail;
}

}  // namespace core
