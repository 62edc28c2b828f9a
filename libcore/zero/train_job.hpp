// `zpp-train train` on one rank of a job (mpirun / srun, or a single process): DeepSpeed-style
// options (the training keys of core::train plus zero_optimization, bf16 and distributed), the
// world communicator and topology of the job, and the ZeRO engine driving core::train's loop.
#pragma once
#include <functional>

#include "comm/rank.hpp"
#include "common/rundir.hpp"
#include "train/data_parallel.hpp"
#include "train/trainer.hpp"
#include "zero/options.hpp"

namespace core::zero {

struct ZeroTrainOptions : train::TrainOptions {
  ZeroOptions zero_optimization;
  Bf16Options bf16;
  DistributedOptions distributed;
  template <class V>
  void visit(V& v) {
    train::TrainOptions::visit(v);
    v.section("zero_optimization", zero_optimization);
    v.section("bf16", bf16);
    v.section("distributed", distributed);
  }
};

// The checks that give the same answer on every rank without communicating (keys, topology, hpZ
// group size): UsageError naming the key, thrown normally on every rank.
void check_zero_job(const ZeroTrainOptions& options, const comm::RankInfo& ranks);

// A tool's per-step behaviour (ltd-pretrain's token dropping) for rank `rank` of `world_size`: made once
// for every rank this process runs (each thread rank of the threads / shared_gpu backends gets its own,
// on its own thread, before its training starts).
using ExtensionFactory = std::function<train::TrainExtension(int rank, int world_size)>;

// One rank's training loop: `rundir` is null except on rank 0; `engine` is null for a one-rank run without
// the engine (then rank = 0, world_size = 1).
using RankLoop =
    std::function<train::TrainOutcome(RunDir* rundir, train::DataParallel* engine, int rank, int world_size)>;

// Runs `loop` on every rank of the job and returns rank 0's outcome: a single process at stage 0 without
// ZeRO++ runs it without an engine (unless it resumes a sharded checkpoint); anything else gives each rank
// the engine over the job's communicator (MPI across processes, or distributed.thread_ranks threads of this
// process). After check_zero_job.
train::TrainOutcome run_data_parallel(const ZeroTrainOptions& options, RunDir* rundir, const comm::RankInfo& ranks,
                                      const RankLoop& loop);

// core::train's loop under run_data_parallel (zpp-train train, ltd-pretrain train).
train::TrainOutcome run_zero_training(const ZeroTrainOptions& options, RunDir* rundir, const comm::RankInfo& ranks,
                                      const train::StepHook& hook = {}, const ExtensionFactory& extension = {});

}  // namespace core::zero
