// Rank discovery: which process of a parallel job this is. Precedence: explicit flags >
// OpenMPI (OMPI_COMM_WORLD_*) > PMI (PMI_RANK/PMI_SIZE, Hydra's MPI_LOCALRANKID/MPI_LOCALNRANKS)
// > SLURM (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, local size from SLURM_STEP_TASKS_PER_NODE or
// SLURM_TASKS_PER_NODE at SLURM_NODEID) > a single process. When a source gives no local
// (per-node) values, all ranks are taken to share one node (local = global).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "common/errors.hpp"

namespace core::comm {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // index among the ranks on this node
  int local_size = 1;  // ranks on this node
  std::string source = "single";  // "flags", "OMPI_COMM_WORLD", "PMI", "SLURM" or "single"
};

// Reads one environment variable; std::nullopt when it is not set.
using EnvGetter = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_env(const std::string& name);

// Discovers the rank from explicit flags (both or neither: --rank/--world-size) or the
// environment, then calls core::set_log_rank. Throws core::UsageError naming the flag or
// variable on a missing partner value, a non-numeric or negative value, or rank >= size.
RankInfo discover_ranks(std::optional<int> rank, std::optional<int> world_size,
                        const EnvGetter& env = process_env);

}  // namespace core::comm
