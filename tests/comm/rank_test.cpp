// Rank discovery: source precedence, local ranks, SLURM task lists, and bad values named in the
// error, all with fake environments.
#include <doctest/doctest.h>

#include <map>

#include "common/log.hpp"
#include "comm/rank.hpp"
#include "test_support.hpp"

using namespace core::comm;

namespace {

EnvGetter fake(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

const std::map<std::string, std::string> kAll = {
    {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"},     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"PMI_RANK", "2"},          {"PMI_SIZE", "6"},
    {"SLURM_PROCID", "3"},          {"SLURM_NTASKS", "7"},          {"SLURM_LOCALID", "0"},
    {"SLURM_TASKS_PER_NODE", "3(x2),1"}, {"SLURM_NODEID", "1"},
};

std::map<std::string, std::string> without(std::map<std::string, std::string> m, const std::string& prefix) {
  std::erase_if(m, [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
  return m;
}

std::string usage_message(std::optional<int> rank, std::optional<int> size, const EnvGetter& env) {
  try {
    discover_ranks(rank, size, env);
  } catch (const core::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("precedence: flags > OpenMPI > PMI > SLURM > single process") {
  auto info = discover_ranks(1, 2, fake(kAll));
  CHECK(info.source == "flags");
  CHECK(info.rank == 1);
  CHECK(info.world_size == 2);
  CHECK(info.local_rank == 1);
  CHECK(info.local_size == 2);

  info = discover_ranks(std::nullopt, std::nullopt, fake(kAll));
  CHECK(info.source == "OMPI_COMM_WORLD");
  CHECK(info.rank == 5);
  CHECK(info.world_size == 8);
  CHECK(info.local_rank == 1);
  CHECK(info.local_size == 4);
  CHECK(core::log_rank() == 5);  // logging knows the rank

  info = discover_ranks(std::nullopt, std::nullopt, fake(without(kAll, "OMPI_")));
  CHECK(info.source == "PMI");
  CHECK(info.rank == 2);
  CHECK(info.world_size == 6);
  CHECK(info.local_rank == 2);  // no local values: one node
  CHECK(info.local_size == 6);

  info = discover_ranks(std::nullopt, std::nullopt, fake(without(without(kAll, "OMPI_"), "PMI_")));
  CHECK(info.source == "SLURM");
  CHECK(info.rank == 3);
  CHECK(info.world_size == 7);
  CHECK(info.local_rank == 0);
  CHECK(info.local_size == 3);

  info = discover_ranks(std::nullopt, std::nullopt, fake({}));
  CHECK(info.source == "single");
  CHECK(info.rank == 0);
  CHECK(info.world_size == 1);
  CHECK(info.local_size == 1);
  CHECK(core::log_rank() == 0);
}

TEST_CASE("SLURM local size comes from the compressed tasks-per-node list at this node") {
  std::map<std::string, std::string> env = {{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "7"}, {"SLURM_LOCALID", "0"},
                                            {"SLURM_NODEID", "3"}, {"SLURM_TASKS_PER_NODE", "2(x3),1"}};
  auto info = discover_ranks(std::nullopt, std::nullopt, fake(env));
  CHECK(info.local_rank == 0);
  CHECK(info.local_size == 1);
  env.insert_or_assign("SLURM_NODEID", std::string("1"));
  env.insert_or_assign("SLURM_PROCID", std::string("3"));
  env.insert_or_assign("SLURM_LOCALID", std::string("1"));
  env.insert_or_assign("SLURM_STEP_TASKS_PER_NODE", std::string("4,3"));  // the step's list wins over the job's
  info = discover_ranks(std::nullopt, std::nullopt, fake(env));
  CHECK(info.local_size == 3);
  env.insert_or_assign("SLURM_NODEID", std::string("2"));
  CHECK(usage_message(std::nullopt, std::nullopt, fake(env)).find("SLURM_STEP_TASKS_PER_NODE") != std::string::npos);
}

TEST_CASE("bad values are usage errors naming the flag or variable") {
  CHECK(usage_message(2, 2, fake({})).find("--rank=2 is not below --world-size=2") != std::string::npos);
  CHECK(usage_message(-1, 2, fake({})).find("--rank") != std::string::npos);
  CHECK(usage_message(0, 0, fake({})).find("--world-size=0") != std::string::npos);
  CHECK(usage_message(1, std::nullopt, fake({})).find("--rank given without --world-size") != std::string::npos);

  auto env = kAll;
  env.insert_or_assign("OMPI_COMM_WORLD_RANK", std::string("8"));
  CHECK(usage_message(std::nullopt, std::nullopt, fake(env)).find("OMPI_COMM_WORLD_RANK=8 is not below OMPI_COMM_WORLD_SIZE=8") !=
        std::string::npos);
  env.insert_or_assign("OMPI_COMM_WORLD_RANK", std::string("x1"));
  CHECK(usage_message(std::nullopt, std::nullopt, fake(env)).find("OMPI_COMM_WORLD_RANK='x1'") != std::string::npos);
  env.insert_or_assign("OMPI_COMM_WORLD_RANK", std::string("-3"));
  CHECK(usage_message(std::nullopt, std::nullopt, fake(env)).find("OMPI_COMM_WORLD_RANK='-3'") != std::string::npos);
  env.insert_or_assign("OMPI_COMM_WORLD_RANK", std::string("1"));
  env.insert_or_assign("OMPI_COMM_WORLD_LOCAL_RANK", std::string("4"));
  CHECK(usage_message(std::nullopt, std::nullopt, fake(env)).find("OMPI_COMM_WORLD_LOCAL_RANK=4") != std::string::npos);
  env.insert_or_assign("OMPI_COMM_WORLD_LOCAL_RANK", std::string("0"));
  env.insert_or_assign("OMPI_COMM_WORLD_LOCAL_SIZE", std::string("9"));
  CHECK(usage_message(std::nullopt, std::nullopt, fake(env)).find("OMPI_COMM_WORLD_LOCAL_SIZE=9 exceeds") != std::string::npos);

  CHECK(usage_message(std::nullopt, std::nullopt, fake({{"PMI_RANK", "0"}})).find("PMI_RANK is set but PMI_SIZE is not") !=
        std::string::npos);
  CHECK(usage_message(std::nullopt, std::nullopt, fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2 "}}))
            .find("SLURM_NTASKS='2 '") != std::string::npos);
  CHECK(usage_message(std::nullopt, std::nullopt,
                      fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_TASKS_PER_NODE", "2(x"}}))
            .find("SLURM_TASKS_PER_NODE") != std::string::npos);
  CHECK(usage_message(std::nullopt, std::nullopt, fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}}))
            .find("SLURM_LOCALID is set but SLURM_TASKS_PER_NODE is not") != std::string::npos);
  core::set_log_rank(0, 1);
}
