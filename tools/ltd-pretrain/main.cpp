// ltd-pretrain: GPT / BERT pretraining with random layerwise token dropping (random-LTD) and the
// LayerToken learning-rate schedule, over zpp-train's training core.
//   ltd-pretrain train [--config FILE] [key=value ...] [--resume] --out DIR   (default command)
//   mpirun -np N ltd-pretrain train zero_optimization.stage=3 ...           data parallel, as zpp-train
//   ltd-pretrain train device=cuda ...                                     one CUDA device, tokens routed there
//   ltd-pretrain finetune --checkpoint RUN [key=value ...] [--resume] --out DIR GPT: causal LM; BERT: GLUE classification
//   ltd-pretrain schedule [--config FILE] [key=value ...] --steps K           kept counts, LayerTokens, lr
#include "comm/rank.hpp"
#include "comm/world.hpp"
#include "common/cli.hpp"
#include "common/errors.hpp"
#include "ltd/finetune.hpp"
#include "ltd/pretrain.hpp"

namespace {

int run_train(core::RunContext& ctx, const core::ltd::LtdTrainOptions& o) {
  const core::comm::RankInfo ranks = core::comm::discover_ranks(std::nullopt, std::nullopt);
  const auto outcome = core::ltd::run_ltd_training(o, ctx.rundir.get(), ranks);
  ctx.emit_result(outcome.summary);
  return static_cast<int>(outcome.interrupted ? core::ExitCode::interrupted : core::ExitCode::ok);
}

int run_finetune(core::RunContext& ctx, const core::ltd::FinetuneOptions& o) {
  const core::comm::RankInfo ranks = core::comm::discover_ranks(std::nullopt, std::nullopt);
  const auto outcome = core::ltd::run_finetune(o, ctx.rundir.get(), ranks);
  ctx.emit_result(outcome.summary);
  return static_cast<int>(outcome.interrupted ? core::ExitCode::interrupted : core::ExitCode::ok);
}

int run_schedule(core::RunContext& ctx, const core::ltd::ScheduleOptions& o) {
  ctx.emit_result(core::ltd::schedule_table(o, o.steps > 0 ? o.steps : o.train_iters, o.ranks));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  core::App app("ltd-pretrain", "Transformer pretraining with random layerwise token dropping (random-LTD)");
  app.use_ranks(
      [] {  // under mpirun/srun only rank 0 writes the run directory and the result
        const core::comm::RankInfo r = core::comm::discover_ranks(std::nullopt, std::nullopt);
        return std::pair{r.rank, r.world_size};
      },
      core::comm::abort_job);
  app.command<core::ltd::LtdTrainOptions>("train", "Train a GPT or BERT with random-LTD and the LayerToken lr schedule",
                                          run_train, /*is_default=*/true)
      .switch_flag("--resume", "resume", "continue from the newest checkpoint in --out")
      .stops_at_signal();
  app.command<core::ltd::FinetuneOptions>("finetune",
                                          "Finetune a checkpoint with random-LTD: GPT causal LM, or BERT classification "
                                          "(GLUE TSV, e.g. SST-2)",
                                          run_finetune)
      .flag("--checkpoint", "checkpoint", "run directory or checkpoints/step_N folder of the pretrained model")
      .switch_flag("--resume", "resume", "continue from the newest checkpoint in --out")
      .stops_at_signal();
  app.command<core::ltd::ScheduleOptions>("schedule", "Per-step kept tokens, LayerTokens and lr of a run, without training",
                                          run_schedule)
      .flag("--steps", "steps", "steps to tabulate (default: train_iters)")
      .without_rundir();
  return app.main(argc, argv);
}
