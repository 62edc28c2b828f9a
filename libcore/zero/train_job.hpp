// `zpp-train train` on one rank of a job (mpirun / srun, or a single process): DeepSpeed-style
// options (the training keys of core::train plus zero_optimization, bf16 and distributed), the
// world communicator and topology of the job, and the ZeRO engine driving core::train's loop.
#pragma once
#include <functional>

#include "comm/rank.hpp"
#include "common/rundir.hpp"
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

// A single process at stage 0 without ZeRO++ runs the one-rank loop unchanged (unless it resumes a
// sharded checkpoint); anything else runs the engine over the job's communicator (MPI across
// processes). `rundir` is null except on rank 0.
train::TrainOutcome run_zero_training(const ZeroTrainOptions& options, RunDir* rundir, const comm::RankInfo& ranks,
                                      const train::StepHook& hook = {}, const ExtensionFactory& extension = {});

}  // namespace core::zero
