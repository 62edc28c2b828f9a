// Logging to stderr through spdlog, with a rank-aware pattern; ranks other than 0 print only
// warnings and errors. -v/-q map to debug/warn.
#pragma once
#include <spdlog/spdlog.h>

namespace core {

// verbosity: -1 quiet (warnings and errors), 0 info, 1 debug, 2 trace.
void setup_logging(int verbosity);
// Called by the comm module once the rank is known.
void set_log_rank(int rank, int world_size);
int log_rank();

namespace log = spdlog;  // core::log::info("...{}", x)

}  // namespace core
