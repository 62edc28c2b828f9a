// zpp-train: transformer training (CPU path; GPT and BERT also on one CUDA device with --device cuda), on
// one rank or data parallel with ZeRO stages 0-3 and ZeRO++ under mpirun / srun (libcore/zero).
//   zpp-train prepare --input TEXT [--format jsonl] --tokenizer bytes|gpt2:DIR --out DIR   -> llm.c token shards
//   zpp-train train [--config FILE] [key=value ...] [--resume] [--device cuda] --out DIR  train GPT/BERT (default)
//   mpirun -np N zpp-train train zero_optimization.stage=3 ...   ZeRO / ZeRO++ across N ranks
//   zpp-train train --device cuda distributed.backend=shared_gpu distributed.thread_ranks=N ...  N ranks on one GPU
//   zpp-train sample --checkpoint DIR [--prompt TEXT] [temperature=.. top_k=.. --seed N]
//   zpp-train export --checkpoint DIR --format hf|llmc --out DIR   for transformers / llm.c
//   zpp-train eval --checkpoint DIR [--input DATA] [data.split=val|train|all seq_len=.. stride=..]  loss over a split
//   zpp-train consolidate RUN [--out DIR]   a ZeRO run's sharded checkpoint as one full checkpoint in DIR
//   zpp-train simulate [nodes=24 ranks_per_node=16 inter_node.bandwidth_gbs=..] [--format table]  ZeRO++ at scale
//   zpp-train quantize-speed [n=.. block=2048] [device=cuda]  int8/int4 round trips against memcpy (GB/s);
//                                               cuda: each device kernel against a device-to-device copy
//   zpp-train peak [n=2048] [device=cuda]        float32 GEMM GFLOP/s (cpu) or bf16 cuBLASLt TFLOP/s (cuda)
#include <iostream>

#include "comm/rank.hpp"
#include "comm/world.hpp"
#include "common/cli.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "text/prepare.hpp"
#include "train/evaluate.hpp"
#include "train/export.hpp"
#include "train/gemm.hpp"
#include "train/transformer_cuda.hpp"
#include "train/sample.hpp"
#include "train/trainer.hpp"
#include "zero/quantize.hpp"
#ifdef TOOLKIT_HAVE_CUDA
#include "zero/quantize_cuda.hpp"
#endif
#include "zero/sharded_checkpoint.hpp"
#include "zero/simulate.hpp"
#include "zero/train_job.hpp"

namespace {

int run_train(core::RunContext& ctx, const core::zero::ZeroTrainOptions& o) {
  const core::comm::RankInfo ranks = core::comm::discover_ranks(std::nullopt, std::nullopt);
  const auto outcome = core::zero::run_zero_training(o, ctx.rundir.get(), ranks);
  ctx.emit_result(outcome.summary);
  return static_cast<int>(outcome.interrupted ? core::ExitCode::interrupted : core::ExitCode::ok);
}

int run_simulate(core::RunContext& ctx, const core::zero::SimulateOptions& o) {
  const nlohmann::json p = core::zero::simulate(o);
  if (o.format == "table") std::cout << core::zero::simulation_table(p) << std::flush;
  else ctx.emit_result(p);
  return 0;
}

int run_eval(core::RunContext& ctx, const core::train::EvalOptions& o) {
  const nlohmann::json r = core::train::evaluate(o);
  ctx.emit_result(r);
  if (r.value("passed", true)) return 0;
  core::log::error("eval: loss {} exceeds max_loss = {}", r["loss"].dump(), o.max_loss);
  return static_cast<int>(core::ExitCode::negative);
}

int run_export(core::RunContext& ctx, const core::train::ExportOptions& o) {
  ctx.emit_result(core::train::export_model(o, ctx.rundir->path()));
  return 0;
}

int run_sample(core::RunContext& ctx, const core::train::SampleOptions& o) {
  ctx.emit_result(core::train::generate(o));
  return 0;
}

struct ConsolidateOptions {
  std::string run;
  template <class V>
  void visit(V& v) {
    v("run", run, "run directory or checkpoint folder of a data-parallel (ZeRO) run: its newest complete checkpoint");
  }
};

int run_consolidate(core::RunContext& ctx, const ConsolidateOptions& o) {
  if (o.run.empty()) throw core::UsageError("consolidate: give the run directory (zpp-train consolidate RUN --out DIR)");
  ctx.emit_result(core::zero::consolidate(o.run, ctx.rundir->checkpoints()));
  return 0;
}

struct QuantizeSpeedOptions {
  std::int64_t n = 1 << 24;
  int block = 2048;
  int reps = 5;
  std::string device = "cpu";
  template <class V>
  void visit(V& v) {
    v("n", n, "floats per round trip (64 MiB by default: larger than the caches)", core::positive<std::int64_t>());
    v("block", block, "elements per fp32 scale (even)", core::positive<int>());
    v("reps", reps, "timed round trips (the best counts)", core::positive<int>());
    v("device", device, "cpu: round trips against memcpy; cuda: each kernel's bytes moved per second against a "
      "device-to-device copy's", core::one_of({"cpu", "cuda"}));
  }
};

// The device kernels' bandwidth (bytes read + written per second) and its share of a device copy's.
nlohmann::json device_quantize_speed(const QuantizeSpeedOptions& o) {
  const std::string name = core::train::require_cuda_device();
#ifdef TOOLKIT_HAVE_CUDA
  const auto t = core::zero::device::measure_device_quantize_throughput(std::size_t(o.n), std::size_t(o.block), o.reps);
  nlohmann::json out = {{"device", name}, {"n", o.n}, {"block", o.block}, {"copy_gbs", t.copy_gbs},
                        {"dequantize_sum_int4_inputs", t.sum_inputs}};
  for (const auto& [key, gbs] : {std::pair{"quantize_int8", t.quantize_int8_gbs},
                                 {"dequantize_int8", t.dequantize_int8_gbs},
                                 {"quantize_int4", t.quantize_int4_gbs},
                                 {"dequantize_int4", t.dequantize_int4_gbs},
                                 {"dequantize_sum_int4", t.dequantize_sum_int4_gbs}}) {
    out[std::string(key) + "_gbs"] = gbs;
    out[std::string(key) + "_vs_copy"] = gbs / t.copy_gbs;
  }
  return out;
#else
  return {{"device", name}};  // not reached: require_cuda_device refuses a build without CUDA
#endif
}

int run_quantize_speed(core::RunContext& ctx, const QuantizeSpeedOptions& o) {
  if (o.block % 2 != 0) throw core::UsageError("block = " + std::to_string(o.block) + ": must be even");
  if (o.device == "cuda") {
    ctx.emit_result(device_quantize_speed(o));
    return 0;
  }
  const auto t = core::zero::measure_quantize_throughput(std::size_t(o.n), std::size_t(o.block), o.reps);
  ctx.emit_result({{"int8_gbs", t.int8_gbs}, {"int4_gbs", t.int4_gbs}, {"memcpy_gbs", t.memcpy_gbs},
                   {"int8_vs_memcpy", t.int8_gbs / t.memcpy_gbs}, {"int4_vs_memcpy", t.int4_gbs / t.memcpy_gbs},
                   {"n", o.n}, {"block", o.block}});
  return 0;
}

struct PeakOptions {
  int n = 2048;
  int reps = 5;
  int threads = 0;
  std::string device = "cpu";
  template <class V>
  void visit(V& v) {
    v("n", n, "square matrix size (>= 1024 for a peak figure; 8192 on a GPU)", core::positive<int>());
    v("reps", reps, "timed products (the best one counts)", core::positive<int>());
    v("threads", threads, "CPU threads (0: OpenMP default)", core::at_least(0));
    v("device", device, "cpu: float32 through the trainer's GEMM; cuda: bf16 through cuBLASLt (the MFU baseline)",
      core::one_of({"cpu", "cuda"}));
  }
};

int run_peak(core::RunContext& ctx, const PeakOptions& o) {
  if (o.device == "cuda") {
    const std::string name = core::train::require_cuda_device();
    ctx.emit_result({{"bf16_gemm_tflops_per_s", core::train::measure_cuda_gemm_tflops(o.n, o.reps)}, {"n", o.n},
                     {"device", name}});
    return 0;
  }
  if (o.threads > 0) core::train::set_num_threads(o.threads);
  const double g = core::train::measure_gemm_gflops(o.n, o.reps);
  ctx.emit_result({{"gemm_gflops_per_s", g}, {"n", o.n}, {"threads", core::train::num_threads()}});
  return 0;
}

int run_prepare(core::RunContext& ctx, const core::text::PrepareOptions& o) {
  core::text::PrepareOptions opts = o;
  if (opts.out.empty()) opts.out = ctx.rundir->path().string();  // the shards go into the run directory
  ctx.emit_result(core::text::prepare(opts).to_json());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  core::App app("zpp-train", "Transformer (GPT/BERT) training: one rank, or ZeRO-3 / ZeRO++ data parallel under mpirun/srun");
  app.use_ranks(
      [] {  // under mpirun/srun only rank 0 writes the run directory and the result
        const core::comm::RankInfo r = core::comm::discover_ranks(std::nullopt, std::nullopt);
        return std::pair{r.rank, r.world_size};
      },
      core::comm::abort_job);  // a rank that fails before the engine exists (a missing file) ends the job too
  app.command<core::zero::ZeroTrainOptions>("train",
                                            "Train a GPT (next-token loss) or a BERT encoder (masked-LM loss); "
                                            "zero_optimization.* as DeepSpeed's under mpirun/srun",
                                            run_train, /*is_default=*/true)
      .switch_flag("--resume", "resume", "continue from the newest checkpoint in --out")
      .stops_at_signal();
  app.command<core::train::SampleOptions>("sample", "Generate text from a checkpoint", run_sample)
      .flag("--checkpoint", "checkpoint", "run directory, checkpoint folder, llm.c .bin or HF .safetensors")
      .flag("--prompt", "prompt", "text to continue")
      .without_rundir();
  app.command<core::train::EvalOptions>("eval", "Loss, perplexity and bits per byte of a model over a whole data split",
                                        run_eval)
      .flag("--checkpoint", "checkpoint", "run directory, checkpoint folder, llm.c .bin or HF .safetensors")
      .flag("--input", "data.input", "text file, shard folder, shard file or glob")
      .rundir_with_out();
  app.command<core::train::ExportOptions>("export", "Write a GPT model for Hugging Face transformers (hf) or llm.c (llmc)",
                                          run_export)
      .flag("--checkpoint", "checkpoint", "run directory, checkpoint folder, llm.c .bin or HF .safetensors")
      .flag("--format", "format", "hf or llmc");
  app.command<core::text::PrepareOptions>("prepare", "Tokenize a text file into train/val shards", run_prepare)
      .flag("--input", "input", "text file, or - for standard input")
      .flag("--format", "format", "text (one document) or jsonl (a {\"text\": ...} document per line)")
      .flag("--tokenizer", "tokenizer", "bytes or gpt2:DIR");
  app.command<ConsolidateOptions>("consolidate",
                                  "Write the newest sharded checkpoint of a ZeRO run as one full checkpoint in --out "
                                  "(for eval, export, sample and one-rank runs)",
                                  run_consolidate)
      .positional("run", "run directory or checkpoint folder");
  app.command<core::zero::SimulateOptions>(
         "simulate", "Predict ZeRO-3 and ZeRO++ step times at scale (alpha-beta model over the real byte volumes)",
         run_simulate)
      .flag("--format", "format", "json or table")
      .without_rundir();
  app.command<QuantizeSpeedOptions>(
         "quantize-speed", "Measure qwZ/qgZ's int8 and int4 quantize + dequantize throughput against memcpy",
         run_quantize_speed)
      .without_rundir();
  app.command<PeakOptions>("peak", "Measure the GEMM peak of the library the trainer uses (float32 CPU, bf16 GPU)", run_peak)
      .without_rundir();
  return app.main(argc, argv);
}
