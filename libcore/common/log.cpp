// stderr logging with a rank-aware pattern (see log.hpp).
#include "common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <string>

namespace core {

static std::atomic<int> g_rank{0}, g_world{1}, g_verbosity{0};

static spdlog::level::level_enum level_for(int verbosity, int rank) {
  if (rank != 0) return spdlog::level::warn;
  if (verbosity < 0) return spdlog::level::warn;
  if (verbosity == 0) return spdlog::level::info;
  if (verbosity == 1) return spdlog::level::debug;
  return spdlog::level::trace;
}

static void apply() {
  const int rank = g_rank, world = g_world;
  const std::string where = world > 1 ? " [rank " + std::to_string(rank) + "/" + std::to_string(world) + "]" : "";
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$]" + where + " %v");
  spdlog::set_level(level_for(g_verbosity, rank));
}

void setup_logging(int verbosity) {
  static bool installed = false;
  if (!installed) {
    auto logger = spdlog::stderr_color_mt("toolkit");
    spdlog::set_default_logger(logger);
    installed = true;
  }
  g_verbosity = verbosity;
  apply();
}

void set_log_rank(int rank, int world_size) {
  g_rank = rank;
  g_world = world_size;
  apply();
}

int log_rank() { return g_rank; }

}  // namespace core
