// Rank discovery from flags or the launcher's environment (OpenMPI, PMI/Hydra, SLURM), with
// every value checked: integers only, non-negative, rank < size, local rank < local size.
#include "comm/rank.hpp"

#include <charconv>
#include <cstdlib>
#include <vector>

#include "common/errors.hpp"
#include "common/log.hpp"

namespace core::comm {

std::optional<std::string> process_env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return std::string(v);
}

namespace {

int parse_count(const std::string& name, const std::string& text) {
  int value = -1;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0)
    throw UsageError("comm: " + name + "='" + text + "' is not a non-negative integer");
  return value;
}

std::optional<int> read_int(const EnvGetter& env, const std::string& name) {
  const auto v = env(name);
  if (!v) return std::nullopt;
  return parse_count(name, *v);
}

// Checks 0 <= index < size (size >= 1) and names both values in the message.
void check_index(const std::string& index_name, int index, const std::string& size_name, int size) {
  if (size < 1) throw UsageError("comm: " + size_name + "=" + std::to_string(size) + " must be at least 1");
  if (index < 0 || index >= size)
    throw UsageError("comm: " + index_name + "=" + std::to_string(index) + " is not below " +
                     size_name + "=" + std::to_string(size));
}

// The task count on node `node` from SLURM's compressed list, e.g. "2(x3),1" = 2,2,2,1.
std::optional<int> slurm_tasks_on_node(const std::string& name, const std::string& list, int node) {
  std::size_t pos = 0;
  int index = 0;
  while (pos <= list.size()) {
    std::size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(pos, comma - pos);
    const std::size_t paren = item.find("(x");
    int count, repeat = 1;
    if (paren == std::string::npos) {
      count = parse_count(name, item);
    } else {
      if (item.back() != ')') throw UsageError("comm: " + name + "='" + list + "' is not a SLURM task list");
      count = parse_count(name, item.substr(0, paren));
      repeat = parse_count(name, item.substr(paren + 2, item.size() - paren - 3));
    }
    if (node < index + repeat) return count;
    index += repeat;
    pos = comma + 1;
  }
  return std::nullopt;
}

struct EnvSource {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // nullptr: computed separately (SLURM)
};

constexpr EnvSource kSources[] = {
    {"OMPI_COMM_WORLD", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"SLURM", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

std::optional<int> slurm_local_size(const EnvGetter& env) {
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    const auto list = env(name);
    if (!list) continue;
    const int node = read_int(env, "SLURM_NODEID").value_or(0);
    const auto n = slurm_tasks_on_node(name, *list, node);
    if (!n) throw UsageError("comm: " + std::string(name) + "='" + *list + "' lists no node " + std::to_string(node) + " (SLURM_NODEID)");
    return n;
  }
  return std::nullopt;
}

std::optional<RankInfo> from_env(const EnvGetter& env, const EnvSource& s) {
  const auto rank = read_int(env, s.rank);
  const auto size = read_int(env, s.size);
  if (!rank && !size) return std::nullopt;
  if (!rank || !size)
    throw UsageError(std::string("comm: ") + (rank ? s.rank : s.size) + " is set but " +
                     (rank ? s.size : s.rank) + " is not");
  check_index(s.rank, *rank, s.size, *size);
  RankInfo info{*rank, *size, *rank, *size, s.source};
  const auto local_rank = read_int(env, s.local_rank);
  const auto local_size = s.local_size ? read_int(env, s.local_size) : slurm_local_size(env);
  const std::string local_size_name = s.local_size ? s.local_size : "SLURM_TASKS_PER_NODE";
  if (local_rank || local_size) {
    if (!local_rank || !local_size)
      throw UsageError(std::string("comm: ") + (local_rank ? s.local_rank : local_size_name) +
                       " is set but " + (local_rank ? local_size_name : s.local_rank) + " is not");
    check_index(s.local_rank, *local_rank, local_size_name, *local_size);
    if (*local_size > *size)
      throw UsageError("comm: " + local_size_name + "=" + std::to_string(*local_size) +
                       " exceeds " + s.size + "=" + std::to_string(*size));
    info.local_rank = *local_rank;
    info.local_size = *local_size;
  }
  return info;
}

}  // namespace

RankInfo discover_ranks(std::optional<int> rank, std::optional<int> world_size, const EnvGetter& env) {
  RankInfo info;
  if (rank || world_size) {
    if (!rank || !world_size)
      throw UsageError(std::string("comm: ") + (rank ? "--rank" : "--world-size") + " given without " +
                       (rank ? "--world-size" : "--rank"));
    check_index("--rank", *rank, "--world-size", *world_size);
    info = RankInfo{*rank, *world_size, *rank, *world_size, "flags"};
  } else {
    for (const EnvSource& s : kSources) {
      if (auto found = from_env(env, s)) {
        info = *found;
        break;
      }
    }
  }
  set_log_rank(info.rank, info.world_size);
  return info;
}

}  // namespace core::comm
