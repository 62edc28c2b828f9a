// nxm-compress: N:M semi-structured sparsity (ADMM) and quantization-aware training of the BERT/GPT
// models of core::train, with a packed artifact and CPU kernels that run it.
//   nxm-compress ratio --layers L --hidden H --ffn F --plan qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B
//   nxm-compress unpack PACKED --output FILE.safetensors
//   nxm-compress finetune [teacher.init_from=PRETRAINED] [task.train=TSV task.test=TSV]   dense teacher
//                         (a GPT: task.train=TEXT, next-token loss; validation = its last task.val_fraction)
//   nxm-compress eval --model PACKED|RUN [task.test=TSV] [baselines=true]   accuracy (GPT: validation loss), size, latency
//   nxm-compress bench [layers=12 hidden=768 settings=2:4:8,2:4:4 seq=1,16,128]   kernel latency, random weights
//   nxm-compress search --target-ratio R [compress.teacher=RUN]   probes + the plan landing on R, then compress with it
//   nxm-compress compress [teacher=FINETUNE_RUN|ZPP_GPT_RUN] [plan=...] [method=admm|magnitude|srste] [qat=joint|finetune|none]
//                         [distill.alpha=A distill.temperature=T distill.hidden_weight=BETA]
#include "common/cli.hpp"
#include "nxm/bench.hpp"
#include "nxm/evaluate.hpp"
#include "nxm/packed.hpp"
#include "nxm/pipeline.hpp"
#include "nxm/plan.hpp"
#include "nxm/search.hpp"
#include "train/checkpoint.hpp"
#include "train/gemm.hpp"

namespace {

struct RatioOptions {
  int layers = 12;
  int hidden = 768;
  int ffn = 3072;
  std::string plan = "qkv=2:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8";
  template <class V>
  void visit(V& v) {
    v("layers", layers, "transformer blocks", core::positive<int>());
    v("hidden", hidden, "model width H", core::positive<int>());
    v("ffn", ffn, "FFN width F", core::positive<int>());
    v("plan", plan, "qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B with S dense or keep:group, B 32, 16, 8 or 4");
  }
};

int run_ratio(core::RunContext& ctx, const RatioOptions& o) {
  const core::nxm::Plan plan = core::nxm::parse_plan(o.plan);
  nlohmann::json r = core::nxm::compression_ratio(o.layers, o.hidden, o.ffn, plan).to_json();
  r["plan"] = plan.to_string();
  ctx.emit_result(r);
  return 0;
}

struct UnpackOptions {
  std::string model;
  std::string output;
  template <class V>
  void visit(V& v) {
    v("model", model, "packed model (.safetensors written by compress)");
    v("output", output, "dense fp32 safetensors to write (same tensor names as the model's checkpoints)");
  }
};

int run_unpack(core::RunContext& ctx, const UnpackOptions& o) {
  if (o.model.empty()) throw core::UsageError("unpack: give the packed model (unpack PACKED --output FILE)");
  if (o.output.empty()) throw core::UsageError("unpack: give --output FILE.safetensors");
  const core::nxm::PackedModel m = core::nxm::read_packed(o.model);
  const core::train::ParamLayout layout(m.config);
  core::train::FlatBuffers<float> params(layout);
  m.unpack_into(params);
  nlohmann::json meta = m.info;
  meta["plan"] = m.plan.to_string();
  meta["model"] = core::train::model_state_json(m.config);
  core::train::save_weights(o.output, params, {{"nxm_unpacked", meta.dump()}});
  ctx.emit_result({{"output", o.output}, {"plan", m.plan.to_string()}, {"parameters", layout.parameter_count()}});
  return 0;
}

int run_finetune(core::RunContext& ctx, const core::nxm::FinetuneOptions& o) {
  ctx.emit_result(core::nxm::train_teacher(o.teacher, o.task, o.seed, ctx.rundir->path(), ctx.rundir->metrics()));
  return 0;
}

int run_compress(core::RunContext& ctx, const core::nxm::CompressOptions& o) {
  core::nxm::parse_plan(o.plan);  // a bad plan fails before any training
  ctx.emit_result(core::nxm::run_compress(o, *ctx.rundir));
  return 0;
}

int run_eval(core::RunContext& ctx, const core::nxm::EvalOptions& o) {
  ctx.emit_result(core::nxm::run_eval(o));
  return 0;
}

int run_bench(core::RunContext& ctx, const core::nxm::BenchOptions& o) {
  ctx.emit_result(core::nxm::run_bench(o, *ctx.rundir));
  return 0;
}

int run_search(core::RunContext& ctx, const core::nxm::SearchOptions& o) {
  ctx.emit_result(core::nxm::run_search(o, *ctx.rundir));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  core::App app("nxm-compress", "N:M sparsity (ADMM) and quantization-aware training with packed output");
  app.command<core::nxm::CompressOptions>(
         "compress", "N:M sparsity by ADMM (or magnitude, SR-STE) with quantization-aware training; packed output",
         run_compress, /*is_default=*/true)
      .flag("--teacher", "teacher", "dense teacher: an nxm-compress finetune run")
      .flag("--plan", "plan", "qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B")
      .flag("--method", "method", "admm, magnitude or srste");
  app.command<core::nxm::FinetuneOptions>("finetune", "Fine-tune the dense teacher: a BERT classifier on a task, or a GPT on a text",
                                          run_finetune)
      .flag("--init-from", "teacher.init_from", "pretrained BERT or GPT (zpp-train run or checkpoint)");
  app.command<core::nxm::EvalOptions>("eval", "Accuracy (GPT: validation loss), size on disk and batch-1 latency of a packed model or a run",
                                      run_eval)
      .flag("--model", "model", "packed model or run / checkpoint folder")
      .without_rundir();
  app.command<core::nxm::SearchOptions>("search", "Sensitivity probes (accuracy; GPT: LM loss), then the per-component plan of least predicted damage with "
                                        "target <= cr_paper <= (closest reachable >= target) + ratio_tolerance, then compress",
                                        run_search)
      .flag("--target-ratio", "target_ratio", "cr_paper in percent (e.g. 87.5) the plan must reach, and lands on")
      .flag("--teacher", "compress.teacher", "dense teacher: an nxm-compress finetune run (BERT or GPT) or a zpp-train GPT run");
  app.command<core::nxm::BenchOptions>(
         "bench", "Batch-1 latency of packed BERT linears and forwards (random weights) against dense fp32 and int8",
         run_bench)
      .flag("--layers", "layers", "transformer blocks")
      .flag("--hidden", "hidden", "model width")
      .flag("--settings", "settings", "packed settings, comma-separated (e.g. 2:4:8,2:4:4)")
      .flag("--seq", "seq", "sequence lengths, comma-separated");
  app.command<RatioOptions>("ratio", "Compression ratio of a plan: cr_paper (weights only) and cr_hardware (percent)",
                            run_ratio)
      .flag("--layers", "layers", "transformer blocks")
      .flag("--hidden", "hidden", "model width")
      .flag("--ffn", "ffn", "FFN width")
      .flag("--plan", "plan", "qkv=S:B,ao=S:B,ffn1=S:B,ffn2=S:B")
      .without_rundir();
  app.command<UnpackOptions>("unpack", "Decode a packed model to dense fp32 safetensors", run_unpack)
      .positional("model", "the packed model")
      .flag("--model", "model", "the packed model")
      .flag("--output", "output", "dense safetensors file to write")
      .without_rundir();
  return app.main(argc, argv);
}
