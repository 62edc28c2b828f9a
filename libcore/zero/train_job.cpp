// One rank of a data-parallel zpp-train run (see train_job.hpp).
#include "zero/train_job.hpp"

#include <string>

#include "comm/world.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "zero/engine.hpp"

namespace core::zero {

void check_zero_job(const ZeroTrainOptions& o, const comm::RankInfo& ranks) {
  validate(o.zero_optimization, o.bf16, o.distributed);
  check_hpz_size(o.zero_optimization.zero_hpz_partition_size, discover_topology(ranks, o.distributed.ranks_per_node));
}

namespace {

// A one-rank stage-0 run continues a sharded checkpoint through the engine, which re-shards it.
bool resumes_sharded(const ZeroTrainOptions& o, RunDir* rundir) {
  if (!o.resume || !rundir) return false;
  const auto ckpt = train::latest_checkpoint(rundir->checkpoints());
  return ckpt && train::read_checkpoint_state(*ckpt).contains(train::kShardManifestKey);
}

}  // namespace

train::TrainOutcome run_zero_training(const ZeroTrainOptions& o, RunDir* rundir, const comm::RankInfo& ranks,
                                      const train::StepHook& hook, const train::TrainExtension& extension) {
  check_zero_job(o, ranks);
  const ZeroOptions& z = o.zero_optimization;
  if (ranks.world_size == 1 && z.stage == 0 && !resumes_sharded(o, rundir)) {
    if (!rundir) throw Error(ExitCode::internal, "a one-rank run needs its run directory");
    return train::run_training(o, *rundir, hook, extension);
  }
  if (o.device != "cpu")
    throw UsageError("device=cuda trains on one rank; zero_optimization.stage > 0 and runs of several ranks use "
                     "device=cpu here (the NCCL and shared-GPU communicators exist, but the ZeRO engine does not run on "
                     "device buffers yet)");
  const Topology topo = discover_topology(ranks, o.distributed.ranks_per_node);
  auto world = comm::make_world_communicator(ranks, comm::Seconds(o.distributed.timeout_s));
  EngineOptions eo;
  eo.zero = z;
  eo.bf16 = o.bf16.enabled;
  eo.block = std::size_t(o.distributed.quantization_block_size);
  Engine engine(std::move(world), topo, eo);
  log::info("ZeRO stage {}{}{}{} on {} ranks ({} nodes of {}), {}", z.stage,
            z.zero_quantized_weights ? " + qwZ" : "",
            z.zero_hpz_partition_size > 1 ? " + hpZ(" + std::to_string(z.zero_hpz_partition_size) + ")" : "",
            z.zero_quantized_gradients ? " + qgZ" : "", topo.world_size, topo.nodes, topo.ranks_per_node,
            engine.groups().world->backend());
  try {
    return train::run_training(o, rundir, &engine, hook, extension);
  } catch (const std::exception& e) {
    // Across processes a failure on one rank ends the whole job at once, before unwinding frees the
    // communicators (which would wait for the others) and instead of leaving them in a collective
    // until the timeout. Thread ranks abort their group themselves (run_thread_ranks).
    if (std::string(engine.groups().world->backend()) != "mpi") throw;
    const auto* err = dynamic_cast<const Error*>(&e);
    log::error("{}{}", err ? "" : "internal error: ", e.what());
    comm::abort_job(static_cast<int>(err ? err->code() : ExitCode::internal));
  }
}

}  // namespace core::zero
