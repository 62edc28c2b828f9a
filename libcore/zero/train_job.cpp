// One rank of a data-parallel zpp-train run (see train_job.hpp).
#include "zero/train_job.hpp"

#include <string>

#include "comm/thread_comm.hpp"
#include "comm/world.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "train/transformer_cuda.hpp"
#include "zero/engine.hpp"
#ifdef TOOLKIT_HAVE_CUDA
#include "comm/shared_gpu_comm.hpp"
#include "zero/device_engine.hpp"
#endif

namespace core::zero {

namespace {

bool thread_backend(const std::string& backend) { return backend == "threads" || backend == "shared_gpu"; }

// distributed.backend with auto resolved: the launcher's processes (mpi on the host, nccl on devices),
// else ranks of this process (threads on the host, shared_gpu on a device).
std::string resolve_backend(const ZeroTrainOptions& o, const comm::RankInfo& ranks) {
  const bool cuda = o.device == "cuda";
  if (o.distributed.backend != "auto") return o.distributed.backend;
  if (ranks.world_size > 1) return cuda ? "nccl" : "mpi";
  return cuda ? "shared_gpu" : "threads";
}

}  // namespace

void check_zero_job(const ZeroTrainOptions& o, const comm::RankInfo& ranks) {
  validate(o.zero_optimization, o.bf16, o.distributed);
  const std::string backend = resolve_backend(o, ranks);
  const std::string key = "distributed.backend = " + backend;
  const bool cuda = o.device == "cuda";
  if ((backend == "mpi" || backend == "threads") && cuda)
    throw UsageError(key + " moves host buffers, but device=cuda keeps the model on the GPU; use shared_gpu (ranks "
                     "of one process on one GPU) or nccl (one process per GPU)");
  if ((backend == "nccl" || backend == "shared_gpu") && !cuda)
    throw UsageError(key + " moves device buffers: it needs device=cuda (with device=cpu use mpi or threads)");
  if (backend == "shared_gpu" && !train::kCudaBuild)
    throw UsageError(key + ": this build has no CUDA (configure with -DTOOLKIT_CUDA=ON on a machine with nvcc)");
  if (backend == "nccl" && !comm::have_nccl())
    throw UsageError(key + ": this build has no NCCL; use distributed.backend = shared_gpu to run the ranks on one GPU");
  if (thread_backend(backend) && ranks.world_size > 1)
    throw UsageError(key + " runs the ranks as threads of one process, but the launcher started " +
                     std::to_string(ranks.world_size) + " processes (" + ranks.source +
                     "); use mpi or nccl, or start one process");
  if (!thread_backend(backend) && o.distributed.thread_ranks > 1)
    throw UsageError("distributed.thread_ranks = " + std::to_string(o.distributed.thread_ranks) +
                     " is for the threads and shared_gpu backends; " + key + " takes its ranks from the launcher");
  if (thread_backend(backend)) {
    const int n = o.distributed.thread_ranks;
    check_hpz_size(o.zero_optimization.zero_hpz_partition_size,
                   Topology::make(n, 0, o.distributed.ranks_per_node > 0 ? o.distributed.ranks_per_node : n,
                                  "distributed.ranks_per_node"));
  } else {
    check_hpz_size(o.zero_optimization.zero_hpz_partition_size,
                   discover_topology(ranks, o.distributed.ranks_per_node));
  }
}

namespace {

// A one-rank stage-0 run continues a sharded checkpoint through the engine, which re-shards it.
bool resumes_sharded(const ZeroTrainOptions& o, RunDir* rundir) {
  if (!o.resume || !rundir) return false;
  const auto ckpt = train::latest_checkpoint(rundir->checkpoints());
  return ckpt && train::read_checkpoint_state(*ckpt).contains(train::kShardManifestKey);
}

EngineOptions engine_options(const ZeroTrainOptions& o) {
  EngineOptions eo;
  eo.zero = o.zero_optimization;
  eo.bf16 = o.bf16.enabled;
  eo.block = std::size_t(o.distributed.quantization_block_size);
  return eo;
}

// The engine of one rank: on host buffers over `host`, or (device=cuda) on device buffers over `device`
// with `host` for control traffic.
std::unique_ptr<train::DataParallel> make_engine(const ZeroTrainOptions& o, const Topology& topo,
                                                 std::unique_ptr<comm::Communicator> host,
                                                 std::unique_ptr<comm::Communicator> device) {
  const ZeroOptions& z = o.zero_optimization;
  std::unique_ptr<train::DataParallel> engine;
  const char* backend = nullptr;
  if (device) {
#ifdef TOOLKIT_HAVE_CUDA
    auto e = std::make_unique<DeviceEngine>(std::move(device), std::move(host), topo, engine_options(o));
    backend = e->groups().world->backend();
    engine = std::move(e);
#endif
  } else {
    auto e = std::make_unique<Engine>(std::move(host), topo, engine_options(o));
    backend = e->groups().world->backend();
    engine = std::move(e);
  }
  if (!engine) throw Error(ExitCode::internal, "a device engine in a build without CUDA");
  log::info("ZeRO stage {}{}{}{} on {} ranks ({} nodes of {}), {}{}", z.stage, z.zero_quantized_weights ? " + qwZ" : "",
            z.zero_hpz_partition_size > 1 ? " + hpZ(" + std::to_string(z.zero_hpz_partition_size) + ")" : "",
            z.zero_quantized_gradients ? " + qgZ" : "", topo.world_size, topo.nodes, topo.ranks_per_node, backend,
            o.device == "cuda" ? " (device buffers)" : "");
  return engine;
}

// threads / shared_gpu: distributed.thread_ranks ranks of this process, each running `loop`; rank 0 gets the
// run directory. A rank that fails aborts the group (the others stop at once).
train::TrainOutcome run_thread_ranks_job(const ZeroTrainOptions& o, RunDir* rundir, const std::string& backend,
                                         const RankLoop& loop) {
  const int n = o.distributed.thread_ranks;
  const comm::Seconds timeout(o.distributed.timeout_s);
  std::vector<std::unique_ptr<comm::Communicator>> device(n);
#ifdef TOOLKIT_HAVE_CUDA
  if (backend == "shared_gpu") device = comm::make_shared_gpu_communicators(n);
#endif
  for (auto& d : device)
    if (d) d->set_timeout(timeout);
  train::TrainOutcome out;
  comm::run_thread_ranks(n, [&](comm::Communicator& host) {
    const int r = host.rank();
    const int alpha = o.distributed.ranks_per_node > 0 ? o.distributed.ranks_per_node : n;
    const Topology topo = Topology::make(n, r, alpha, "distributed.ranks_per_node");
    auto engine = make_engine(o, topo, host.split(0, r), std::move(device[r]));
    train::TrainOutcome mine = loop(r == 0 ? rundir : nullptr, engine.get(), r, n);
    if (r == 0) out = std::move(mine);
  }, timeout);
  return out;
}

}  // namespace

train::TrainOutcome run_data_parallel(const ZeroTrainOptions& o, RunDir* rundir, const comm::RankInfo& ranks,
                                      const RankLoop& loop) {
  check_zero_job(o, ranks);
  if (o.device == "cuda") train::require_cuda_device();  // exit 2 before a device communicator touches the GPU
  const ZeroOptions& z = o.zero_optimization;
  const std::string backend = resolve_backend(o, ranks);
  const int n = thread_backend(backend) ? o.distributed.thread_ranks : ranks.world_size;
  if (n == 1 && z.stage == 0 && !resumes_sharded(o, rundir)) {
    if (!rundir) throw Error(ExitCode::internal, "a one-rank run needs its run directory");
    return loop(rundir, nullptr, 0, 1);
  }
  if (thread_backend(backend)) return run_thread_ranks_job(o, rundir, backend, loop);
  const Topology topo = discover_topology(ranks, o.distributed.ranks_per_node);
  const comm::Seconds timeout(o.distributed.timeout_s);
  auto world = comm::make_world_communicator(ranks, timeout);
  std::unique_ptr<comm::Communicator> device;
  if (backend == "nccl") device = comm::make_nccl_world_communicator(ranks, *world, timeout);
  auto engine = make_engine(o, topo, std::move(world), std::move(device));
  try {
    return loop(rundir, engine.get(), ranks.rank, ranks.world_size);
  } catch (const std::exception& e) {
    if (ranks.world_size == 1) throw;
    // Across processes a failure on one rank ends the whole job at once, before unwinding frees the
    // communicators (which would wait for the others) and instead of leaving them in a collective
    // until the timeout.
    const auto* err = dynamic_cast<const Error*>(&e);
    log::error("{}{}", err ? "" : "internal error: ", e.what());
    comm::abort_job(static_cast<int>(err ? err->code() : ExitCode::internal));
  }
}

train::TrainOutcome run_zero_training(const ZeroTrainOptions& o, RunDir* rundir, const comm::RankInfo& ranks,
                                      const train::StepHook& hook, const ExtensionFactory& extension) {
  return run_data_parallel(o, rundir, ranks, [&](RunDir* rd, train::DataParallel* engine, int rank, int world) {
    const train::TrainExtension ext = extension ? extension(rank, world) : train::TrainExtension{};
    if (!engine) return train::run_training(o, *rd, hook, ext);
    return train::run_training(o, rd, engine, rank == 0 ? hook : train::StepHook{}, ext);
  });
}

}  // namespace core::zero
