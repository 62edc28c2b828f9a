// The thread rule (see threads.hpp).
#include "common/threads.hpp"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <string_view>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "common/errors.hpp"

namespace core {

ThreadChoice resolve_threads(int requested, const char* omp_num_threads, unsigned cores) {
  if (requested < 0) throw UsageError("threads must be >= 0 (0: all cores, or OMP_NUM_THREADS), got " + std::to_string(requested));
  if (requested > 0) return {requested, "threads=" + std::to_string(requested)};
  if (omp_num_threads && *omp_num_threads) {
    std::string_view v(omp_num_threads);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    int n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    const std::string_view rest(end, v.data() + v.size() - end);
    const bool list_or_blank = rest.empty() || rest.front() == ',' || rest.front() == ' ' || rest.front() == '\t';
    if (ec != std::errc() || n < 1 || !list_or_blank)
      throw UsageError("OMP_NUM_THREADS='" + std::string(omp_num_threads).substr(0, 40) +
                       "' is not a positive thread count (unset it, or give threads=N)");
    return {n, "OMP_NUM_THREADS=" + std::string(omp_num_threads)};
  }
  return {static_cast<int>(cores > 0 ? cores : 1), "all cores"};
}

ThreadChoice resolve_threads(int requested) {
  return resolve_threads(requested, std::getenv("OMP_NUM_THREADS"), std::thread::hardware_concurrency());
}

namespace {
std::atomic<int> g_thread_count{0};
}

void set_thread_count(int count) {
  if (count < 1) throw UsageError("thread count must be >= 1, got " + std::to_string(count));
  g_thread_count = count;
#if defined(_OPENMP)
  omp_set_num_threads(count);
#endif
}

int thread_count() {
  if (const int n = g_thread_count.load(); n > 0) return n;
  return resolve_threads(0).count;
}

}  // namespace core
