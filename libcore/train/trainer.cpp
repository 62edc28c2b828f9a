// Single-rank training loop (see trainer.hpp). One optimizer step: zero grads; for each micro
// step forward + backward(1/accum); global grad norm; clip factor; AdamW at the scheduled lr.
#include "train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/fmt/fmt.h>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/memory.hpp"
#include "common/progress.hpp"
#include "common/signals.hpp"
#include "common/timer.hpp"
#include "io/jsonl.hpp"
#ifdef TOOLKIT_HAVE_CUDA
#include "kernels/gemm.hpp"
#include "kernels/runtime.hpp"
#endif
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "train/gemm.hpp"
#include "train/transformer_cuda.hpp"
#include "train/model_source.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"

namespace core::train {

void TrainOptions::validate() const {
  model.validate();
  // The key checks take .inf (>= 0, > 0); a step with an infinite lr, eps, decay or clip is not defined.
  for (const auto& [key, value] : {std::pair<const char*, double>{"optimizer.params.lr", optimizer.params.lr},
                                   {"optimizer.params.eps", optimizer.params.eps},
                                   {"optimizer.params.weight_decay", optimizer.params.weight_decay},
                                   {"gradient_clipping", gradient_clipping}})
    if (!std::isfinite(value)) throw UsageError(std::string(key) + " = " + std::to_string(value) + ": must be finite");
  if (data.seq_len > model.n_positions)
    throw UsageError("data.seq_len = " + std::to_string(data.seq_len) + " exceeds the position table model.n_positions = " +
                     std::to_string(model.n_positions));
  if (optimizer.params.betas.size() != 2 || !(optimizer.params.betas[0] >= 0 && optimizer.params.betas[0] < 1) ||
      !(optimizer.params.betas[1] >= 0 && optimizer.params.betas[1] < 1))
    throw UsageError("optimizer.params.betas: expected two values in [0, 1)");
}

std::string require_cuda_device() {
#ifdef TOOLKIT_HAVE_CUDA
  if (kernels::cuda_device_count() == 0)
    throw UsageError("device=cuda: no CUDA device answers (driver missing or no GPU visible); use device=cpu");
  return kernels::cuda_device_name(0);
#else
  throw UsageError("device=cuda: this build has no CUDA (configure with -DTOOLKIT_CUDA=ON on a machine with nvcc); "
                   "use device=cpu");
#endif
}

double measure_cuda_gemm_tflops(int n, int reps) {
  require_cuda_device();
#ifdef TOOLKIT_HAVE_CUDA
  kernels::Blas blas;
  return kernels::measure_gemm_tflops(blas, n, reps);
#else
  (void)n, (void)reps;
  return 0.0;  // not reached: require_cuda_device throws in a build without CUDA
#endif
}

namespace {

// UsageError unless the configured model has the shape of the one init_from holds, listing the model.*
// overrides that describe it.
void check_init_from_model(const TrainOptions& o, const ModelSource& src) {
  const ModelConfig &have = src.config, &want = o.model;
  std::string all, differing;
  const auto key = [&](const char* name, const std::string& from, const std::string& configured) {
    all += std::string(" model.") + name + "=" + from;
    if (from != configured) differing += std::string(" model.") + name + " (" + configured + ")";
  };
  key("arch", have.arch, want.arch);
  key("n_layer", std::to_string(have.n_layer), std::to_string(want.n_layer));
  key("n_head", std::to_string(have.n_head), std::to_string(want.n_head));
  key("n_embd", std::to_string(have.n_embd), std::to_string(want.n_embd));
  key("n_positions", std::to_string(have.n_positions), std::to_string(want.n_positions));
  key("vocab_size", std::to_string(have.vocab_size), std::to_string(want.vocab_size));
  if (have.padded_vocab() != want.padded_vocab())
    key("vocab_pad_to", std::to_string(have.vocab_pad_to), std::to_string(want.vocab_pad_to));
  if (have.architecture() == Arch::bert) {
    key("type_vocab_size", std::to_string(have.type_vocab_size), std::to_string(want.type_vocab_size));
    key("num_labels", std::to_string(have.num_labels), std::to_string(want.num_labels));
  }
  key("layer_norm_eps", fmt::format("{}", have.layer_norm_eps), fmt::format("{}", want.layer_norm_eps));
  if (!differing.empty())
    throw UsageError("init_from " + src.path.string() + " holds another model than the configured one, which differs in" +
                     differing + "; configure the model it holds:" + all);
}

// The state a run starts from, one parameter group at a time: a full checkpoint's weights and AdamW moments
// (its step count is set at once), else the initial weights, overwritten by those of `init_from` when given.
// Files are read a group at a time, so a data-parallel start-up never holds more than the group it hands on.
std::function<void(int)> start_state_reader(const TrainOptions& o, const std::string& full_checkpoint,
                                            const std::string& init_from, FlatBuffers<float>& params,
                                            AdamW<float>& opt) {
  if (!full_checkpoint.empty()) {
    opt.set_steps_taken(checkpoint_adam_steps(full_checkpoint));
    return [dir = fs::path(full_checkpoint), &params, &opt](int g) { load_checkpoint(dir, params, opt, g); };
  }
  std::optional<ModelSource> src;
  if (!init_from.empty()) {
    src = find_model(init_from);
    check_init_from_model(o, *src);
    log::info("weights from {}", src->path.string());
  }
  return [seed = o.seed, src, &params](int g) {
    init_parameter_group(params, g, seed);
    if (src) src->load_weights_into(params, g);
  };
}

// Device memory in use (MiB); 0 without CUDA. All device buffers are allocated before the first
// step ends, so sampling after each step gives the peak.
double device_used_mib() {
#ifdef TOOLKIT_HAVE_CUDA
  return double(kernels::device_memory_used()) / (1024.0 * 1024.0);
#else
  return 0.0;
#endif
}

Task task_of(const TrainOptions& o) { return o.model.architecture() == Arch::bert ? Task::mlm : Task::lm; }

// Makes the MLM batch of a bert model from the next-token windows (fixed masks per (step, micro)).
void maybe_mask(const TrainOptions& o, const TokenData& data, std::vector<std::int32_t>& tok,
                std::vector<std::int32_t>& tgt, std::uint64_t stream) {
  if (task_of(o) == Task::mlm)
    apply_mlm_mask(tok, tgt, data.vocab_size, data.vocab_size, o.mlm_probability, o.seed, stream);
}

// The model's forward (and backward) on the host, or on the device when gpu is set.
double validation_loss(Model<float>& model, TransformerCuda* gpu, const TokenData& data, const TrainOptions& o) {
  std::vector<std::int32_t> tok, tgt;
  double sum = 0;
  for (int i = 0; i < o.eval_iters; ++i) {
    val_batch(data, o.train_micro_batch_size_per_gpu, o.data.seq_len, i, tok, tgt);
    maybe_mask(o, data, tok, tgt, ~std::uint64_t(i));
    Batch b;
    b.B = o.train_micro_batch_size_per_gpu;
    b.T = o.data.seq_len;
    b.tokens = tok.data();
    b.targets = tgt.data();
    if constexpr (kCudaBuild) {
      if (gpu) {
        sum += gpu->step(b, task_of(o), false);
        continue;
      }
    }
    sum += model.forward(b, task_of(o));
  }
  return sum / o.eval_iters;
}

// Refuses a run whose host buffers (weights, gradients, two AdamW moments; on the CPU path the
// activations of a micro batch) exceed the memory this process can get: a UsageError naming the
// sizes instead of an out-of-memory kill part way through allocating.
// `state_bytes` per parameter: 16 (fp32 weights, gradients, AdamW moments) unless a data-parallel
// engine partitions them.
void check_host_memory(const TrainOptions& o, bool cuda, double state_bytes) {
  const std::uint64_t avail = available_memory_bytes();
  if (avail == 0) return;  // unknown
  // Parameters of the configured depth from layouts of one and two blocks (every block is alike),
  // so that a huge n_layer is refused without building its layout.
  ModelConfig one = o.model, two = o.model;
  one.n_layer = 1;
  two.n_layer = 2;
  const double p1 = double(ParamLayout(one).parameter_count()), p2 = double(ParamLayout(two).parameter_count());
  const double params = state_bytes * (p1 + (p2 - p1) * double(o.model.n_layer - 1));
  const double acts = cuda ? 0.0
                           : double(Model<float>::activation_bytes(o.model, o.train_micro_batch_size_per_gpu,
                                                                   o.data.seq_len));
  if (params + acts <= double(avail)) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  throw UsageError(fmt::format(
      "the run needs about {:.1f} GiB of host memory (weights, gradients and AdamW moments {:.1f} GiB; activations "
      "of a micro batch of {} x {} tokens {:.1f} GiB) but {:.1f} GiB are available: {}",
      (params + acts) / gib, params / gib, o.train_micro_batch_size_per_gpu, o.data.seq_len, acts / gib,
      double(avail) / gib,
      params > 0.5 * double(avail)
          ? "configure a smaller model (model.n_layer, model.n_embd, model.vocab_size, model.n_positions)"
          : "lower train_micro_batch_size_per_gpu (gradient_accumulation_steps keeps the tokens per step) or "
            "data.seq_len"));
}

// The token counts of the data, recorded in checkpoints: a resumed run on data of other sizes (a
// new prepare, an edited text) is told that its batches are not those of the run it continues.
nlohmann::json data_state(const TokenData& data) { return {{"train", data.train.size()}, {"val", data.val.size()}}; }

// --resume continues a checkpoint only with the model and the kind of tokenizer it was written
// with: a difference is a UsageError naming the keys (not a tensor-shape DataError, nor a silent
// change of tokenizer under the same vocabulary size).
void check_resume_matches(const nlohmann::json& state, const fs::path& ckpt, const TrainOptions& o,
                          const TokenData& data) {
  const std::string& tokenizer = data.tokenizer;
  if (const auto it = state.find("data_tokens"); it != state.end() && *it != data_state(data))
    log::warn("--resume: data.input {} has {} train / {} val tokens, the run checkpoint {} continues had {} / {}: "
              "it does not see the batches that run would have", o.data.input, data.train.size(), data.val.size(),
              ckpt.string(), it->value("train", std::int64_t(-1)), it->value("val", std::int64_t(-1)));
  std::string diff;
  const nlohmann::json want = model_state_json(o.model);
  const nlohmann::json have = state.value("model", nlohmann::json::object());
  for (auto it = want.begin(); it != want.end(); ++it)
    if (have.contains(it.key()) && have[it.key()] != it.value())
      diff += "; model." + it.key() + " = " + io::json_excerpt(it.value()) + " (checkpoint: " + io::json_excerpt(have[it.key()]) + ")";
  // The kind of tokenizer must match; the folder of a GPT-2 tokenizer may move (a copy on scratch,
  // or a relative path an older checkpoint recorded).
  const std::string had = state.value("tokenizer", tokenizer);
  const auto kind = [](const std::string& spec) { return spec.substr(0, spec.find(':')); };
  if (kind(had) != kind(tokenizer))
    diff += "; tokenizer " + tokenizer + " (checkpoint: " + had + ")";
  else if (had != tokenizer)
    log::warn("--resume: tokenizer {} (the checkpoint was written with {})", tokenizer, had);
  if (!diff.empty())
    throw UsageError("--resume: the config differs from checkpoint " + ckpt.string() + ": " + diff.substr(2) +
                     "; resume with the run's config or train into another --out");
}

}  // namespace

TrainOutcome run_training(const TrainOptions& o, RunDir& rundir, const StepHook& hook) {
  return run_training(o, &rundir, nullptr, hook, TrainExtension{});
}

TrainOutcome run_training(const TrainOptions& o, RunDir& rundir, const StepHook& hook, const TrainExtension& ext) {
  return run_training(o, &rundir, nullptr, hook, ext);
}

TrainOutcome run_training(const TrainOptions& o, RunDir* rundir, DataParallel* dp, const StepHook& hook,
                          const TrainExtension& ext) {
  o.validate();
  if (dp && (o.device != "cpu") != dp->on_device())
    throw UsageError("device=" + o.device + ": the data-parallel engine keeps its state on the " +
                     (dp->on_device() ? "device" : "host"));
  const int world = dp ? dp->world_size() : 1, rank = dp ? dp->rank() : 0;
  const bool cuda = o.device == "cuda";
  if (cuda && ext.before_micro && !ext.before_device_micro)
    throw UsageError("device=cuda: this command runs on the host only (its extension of the training step has no "
                     "device path); use device=cpu");
  if (cuda) log::info("device: {}", require_cuda_device());
  if (o.threads > 0) set_num_threads(o.threads);
  const TokenData data = load_token_data(o.data);
  check_model_vocabulary(data, o.model);
  log::info("data: {} ({}): {} train / {} val tokens, vocabulary {}", data.source, data.tokenizer, data.train.size(),
            data.val.size(), data.vocab_size);

  AdamWHyper hyper;
  hyper.beta1 = o.optimizer.params.betas[0];
  hyper.beta2 = o.optimizer.params.betas[1];
  hyper.eps = o.optimizer.params.eps;
  hyper.weight_decay = o.optimizer.params.weight_decay;

  // Where the run starts (rank 0 reads the run directory; the other ranks of a data-parallel run are
  // told): a fresh start, a full checkpoint, or a data-parallel engine's shards.
  std::int64_t start = 0;
  std::string ckpt_dir;  // the checkpoint that holds the state at `saved_step`
  std::int64_t saved_step = -1;
  bool sharded = false;  // ckpt_dir holds a data-parallel engine's shards (read after attach)
  nlohmann::json extension_state;  // what the checkpoint keeps of the extension's state (every rank is told)
  const auto point = rundir ? find_resume_point(*rundir, o.resume, o.train_iters, "train") : std::nullopt;
  if (point) {
    check_resume_matches(point->state, point->dir, o, data);
    sharded = point->state.contains(kShardManifestKey);
    if (sharded && !dp)
      throw UsageError("--resume: checkpoint " + point->dir.string() + " holds the shards of a data-parallel run; "
                       "resume it with the engine (zpp-train train), or write one full checkpoint with "
                       "`zpp-train consolidate`");
    start = saved_step = point->step;
    extension_state = point->state.value("extension", nlohmann::json::object());
    ckpt_dir = point->dir.string();
    log::info("resumed from {} at step {}", ckpt_dir, start);
    if (!o.init_from.empty())
      log::info("init_from {} is not read: the checkpoint holds the weights the run continues", o.init_from);
    if (point->state.value("threads", num_threads()) != num_threads())
      log::warn("the checkpoint was written with {} threads, this run uses {}: the continuation is not "
                "bit-identical (the GEMM blocks depend on the thread count)", point->state.value("threads", 0),
                num_threads());
  }
  // A full checkpoint or init_from is read on rank 0 one group at a time (attach broadcasts each group); a fresh
  // run or a sharded resume starts from the initial weights on every rank. Either way an engine that
  // partitions the state, or keeps it on the device, builds it group by group and no rank ever holds all of it
  // on the host.
  const bool full_checkpoint = !ckpt_dir.empty() && !sharded;  // (rank 0's: only rank 0 reads files)
  bool whole_model_read = full_checkpoint || (ckpt_dir.empty() && !o.init_from.empty());
  bool deferred = false;
  if (dp) {
    const auto where = dp->broadcast({{"start", start}, {"saved_step", saved_step}, {"checkpoint", ckpt_dir},
                                      {"sharded", sharded}, {"whole_model_read", whole_model_read},
                                      {"extension", extension_state}});
    start = where.at("start").get<std::int64_t>();
    saved_step = where.at("saved_step").get<std::int64_t>();
    ckpt_dir = where.at("checkpoint").get<std::string>();
    sharded = where.at("sharded").get<bool>();
    whole_model_read = where.at("whole_model_read").get<bool>();
    deferred = dp->partitions_state() || dp->on_device();
    extension_state = where.at("extension");
  }
  // One rank on the device keeps no host copy of the state either: it is read and uploaded a group at a time
  // and checkpoints are written from the device.
  const bool device_state = cuda && !dp;
  if (device_state) deferred = true;
  // Every rank's extension continues from the checkpoint's state (ltd-pretrain: its LayerTokens set the lr).
  if (saved_step >= 0 && ext.on_resume) ext.on_resume(extension_state, start);
  check_host_memory(o, cuda, device_state ? 0.0 : deferred ? dp->state_bytes_per_parameter() : 16.0);
  const Allocation allocation = deferred ? Allocation::deferred : Allocation::eager;
  Model<float> model(o.model, allocation);
  const ParamLayout& layout = model.layout();
  AdamW<float> opt(layout, hyper, allocation);
  // (read_group stays empty on the other ranks of a whole model's read: the engine calls it on rank 0 only)
  std::function<void(int)> read_group;
  if (rank == 0 || !whole_model_read)
    read_group = start_state_reader(o, full_checkpoint ? ckpt_dir : "", ckpt_dir.empty() ? o.init_from : "",
                                    model.params(), opt);
  if (dp && deferred && !whole_model_read)
    dp->attach_fresh(model, opt, read_group);  // every rank its initial weights
  else if (dp)
    dp->attach(model, opt, read_group);  // rank 0's state (initial, resumed, init_from) on every rank
  else if (!device_state)  // (one rank on the device reads into the device model, below)
    for (int g = 0; g < layout.num_groups(); ++g) read_group(g);
  std::shared_ptr<TransformerCuda> gpu_owner;  // (an empty shared_ptr needs no ~TransformerCuda without CUDA)
  if constexpr (kCudaBuild) {
    if (cuda) {
      gpu_owner = std::make_shared<TransformerCuda>(o.model, dp ? dp->device_parts_held() : 0u);
      if (dp) {
        dp->attach_device(*gpu_owner);  // (uploads the host state itself)
      } else {  // each group read, uploaded and freed before the next
        for (int g = 0; g < layout.num_groups(); ++g) {
          for (auto* buffers : {&model.params(), &opt.m(), &opt.v()}) buffers->allocate(g);
          read_group(g);
          gpu_owner->upload_group(g, model.params().group(g), opt.m().group(g), opt.v().group(g));
          for (auto* buffers : {&model.params(), &opt.m(), &opt.v()}) buffers->release(g);
        }
        gpu_owner->set_steps_taken(opt.steps_taken());
        kernels::synchronize();
      }
    }
  }
  if (dp && sharded) dp->load_checkpoint(ckpt_dir);
  TransformerCuda* gpu = gpu_owner.get();
  log::info("model: {} parameters ({} layers, {} heads, width {}), {} threads", layout.parameter_count(),
            o.model.n_layer, o.model.n_head, o.model.n_embd, num_threads());

  const int B = o.train_micro_batch_size_per_gpu, T = o.data.seq_len, accum = o.gradient_accumulation_steps;
  const std::int64_t total = o.scheduler.params.total_num_steps > 0 ? o.scheduler.params.total_num_steps : o.train_iters;
  const Task task = task_of(o);
  const LrSchedule schedule = parse_lr_schedule(o.scheduler.type);
  // The host runs a BERT's MLM head on the masked rows only (mlm_probability of them, expected).
  const double head_rows = task == Task::mlm && !cuda ? std::max(1.0, o.mlm_probability * B * T) : -1.0;
  const double flops = model.flops_per_step(B, T, task, head_rows) * accum * world;  // all ranks together
  const double tokens_per_step = double(B) * T * accum * world;

  auto checkpoint_state = [&](std::int64_t at) {
    nlohmann::json s;
    if (ext.checkpoint_state) s["extension"] = ext.checkpoint_state(at);
    s["tokenizer"] = data.tokenizer;
    s["data_tokens"] = data_state(data);
    s["model"] = model_state_json(o.model);
    s["seq_len"] = o.data.seq_len;
    s["seed"] = o.seed;
    s["threads"] = num_threads();
    return s;
  };
  // Saves the state after `at` steps unless a checkpoint of this run already holds it.
  auto checkpoint = [&](std::int64_t at) {
    if (at == saved_step) return;
    if (dp) {
      ckpt_dir = dp->save_checkpoint(rundir ? rundir->checkpoints() : fs::path(), at, checkpoint_state(at),
                                     o.keep_checkpoints).string();
    } else if (rundir && device_state) {  // one tensor at a time from the device
      if constexpr (kCudaBuild)
        ckpt_dir = save_checkpoint(
                       rundir->checkpoints(), at, layout, gpu->steps_taken(),
                       [&](char kind, int g, std::size_t offset, std::size_t n, float* dst) {
                         gpu->download_range(kind, g, offset, n, dst);
                       },
                       checkpoint_state(at), o.keep_checkpoints)
                       .string();
    } else if (rundir) {
      ckpt_dir = save_checkpoint(rundir->checkpoints(), at, model.params(), opt, checkpoint_state(at),
                                 o.keep_checkpoints).string();
    }
    saved_step = at;
  };
  if (rundir) trim_metrics(rundir->path() / "metrics.jsonl", start);
  bool stop_agreed = false;  // data-parallel runs stop together, on the step after any rank was asked

  std::vector<std::int32_t> tok, tgt;
  double last_loss = std::nan(""), last_val = std::nan(""), time_sum = 0, device_peak_mib = 0;
  double first_step_s = std::nan("");
  std::int64_t timed_steps = 0;
  Progress progress("train", static_cast<std::uint64_t>(o.train_iters));
  TrainOutcome out;
  // data.order sequential / llmc: llm.c's loader order, fast-forwarded past the batches of the steps before `start`.
  std::optional<BatchOrder> order;
  if (o.data.order != "random") {
    order.emplace(data.train, B, T, o.data.order == "llmc", rank, world);
    order->skip(start * accum);
  }
  if (o.eval_at_start && start == 0) {
    last_val = validation_loss(model, gpu, data, o);
    log::info("validation loss before the first step: {:.6f}", last_val);
    if (rundir) rundir->metrics().write({{"step", 0}, {"val_loss", last_val}});
  }
  std::int64_t step = start;
  for (; step < o.train_iters; ++step) {
    if (dp ? stop_agreed : stop_requested()) {
      checkpoint(step);
      log::warn("stop requested (signal {}): checkpoint {} written at step {}", stop_signal(), ckpt_dir, step);
      out.interrupted = true;
      break;
    }
    Timer timer;
    if constexpr (kCudaBuild)
      if (gpu) gpu->zero_grads();
    if (!gpu) model.grads().zero();
    if (dp) dp->begin_step();
    double loss = 0;
    for (int micro = 0; micro < accum; ++micro) {
      const std::uint64_t stream = batch_stream(step, micro * world + rank, accum * world);
      if (order) chunk_batch(data, B, T, order->next(), tok, tgt);
      else sample_train_batch(data, B, T, o.seed, stream, tok, tgt);
      maybe_mask(o, data, tok, tgt, stream);
      Batch b;
      b.B = B;
      b.T = T;
      b.tokens = tok.data();
      b.targets = tgt.data();
      if constexpr (kCudaBuild) {
        if (gpu) {
          if (ext.before_device_micro) ext.before_device_micro(*gpu, step, micro);
          loss += gpu->step(b, task, true, 1.0f / float(accum));
          if (ext.before_device_micro) gpu->set_token_routing({});
          continue;
        }
      }
      if (ext.before_micro) ext.before_micro(model, step, micro);
      loss += model.forward(b, task);
      model.backward(1.0f / float(accum));
      if (ext.before_micro) model.set_token_subsets({});
    }
    loss /= accum;
    double norm = 0;
    if constexpr (kCudaBuild)
      if (gpu && !dp) norm = gpu->grad_norm();
    if (dp) {
      const DataParallel::Totals totals = dp->finish_gradients(loss, stop_requested());
      loss = totals.loss;
      norm = totals.grad_norm;
      stop_agreed = totals.stop;
    } else if (!gpu) {
      norm = global_grad_norm(model.grads());
    }
    if (!std::isfinite(loss) || !std::isfinite(norm))
      throw DataError("training diverged at step " + std::to_string(step + 1) + " (loss " + std::to_string(loss) +
                      ", grad norm " + std::to_string(norm) + "); lower optimizer.params.lr");
    const double clip = (o.gradient_clipping > 0 && norm > o.gradient_clipping) ? o.gradient_clipping / norm : 1.0;
    const double lr = ext.lr ? ext.lr(step)
                             : scheduled_lr(schedule, step, o.optimizer.params.lr, o.scheduler.params.warmup_num_steps,
                                            total, o.scheduler.params.cos_min_ratio);
    if constexpr (kCudaBuild)
      if (gpu && !dp) gpu->adamw(hyper, lr, clip);
    if (dp) dp->optimizer_step(lr, clip);
    else if (!gpu) opt.step(model.params(), model.grads(), lr, clip);
    const double secs = timer.seconds();  // the GPU step ended with the loss download and the norm (both wait)
    if (step > start) {  // the first step pays for allocations
      time_sum += secs;
      ++timed_steps;
    } else {
      first_step_s = secs;
    }
    last_loss = loss;
    nlohmann::json rec = {{"step", step + 1},           {"loss", loss},
                          {"lr", lr},                   {"grad_norm", norm},
                          {"step_s", secs},             {"tokens_per_s", tokens_per_step / secs},
                          {"gflops_per_s", flops / secs / 1e9}, {"peak_rss_mib", peak_rss_mib()}};
    if (dp) rec.update(dp->step_metrics());
    if (gpu) {
      rec["mfu"] = flops / secs / (kCudaPeakTflops * 1e12);
      rec["peak_device_mib"] = device_peak_mib = std::max(device_peak_mib, device_used_mib());
    }
    if (ext.on_step) ext.on_step(step, rec);
    if ((step + 1) % o.eval_interval == 0 || step + 1 == o.train_iters) {
      last_val = validation_loss(model, gpu, data, o);
      rec["val_loss"] = last_val;
    }
    if (rundir) rundir->metrics().write(rec);
    progress.update(static_cast<std::uint64_t>(step + 1), "loss " + std::to_string(loss).substr(0, 6));
    if (hook) hook(rec);
    if (o.save_interval > 0 && (step + 1) % o.save_interval == 0 && step + 1 < o.train_iters) checkpoint(step + 1);
  }
  progress.finish();
  if (!out.interrupted) checkpoint(step);
  if (timed_steps == 0 && std::isfinite(first_step_s)) {  // a single step: its time, allocations included
    time_sum = first_step_s;
    timed_steps = 1;
  }
  const double mean_step = timed_steps > 0 ? time_sum / double(timed_steps) : std::nan("");
  out.summary = {{"steps", step},
                 {"final_loss", last_loss},
                 {"val_loss", last_val},
                 {"tokens_per_s", timed_steps > 0 ? tokens_per_step / mean_step : 0.0},
                 {"gflops_per_s", timed_steps > 0 ? flops / mean_step / 1e9 : 0.0},
                 {"flops_per_step", flops},
                 {"mean_step_s", timed_steps > 0 ? mean_step : 0.0},
                 {"parameters", layout.parameter_count()},
                 {"threads", num_threads()},
                 {"peak_rss_mib", peak_rss_mib()},
                 {"tokenizer", data.tokenizer},
                 {"interrupted", out.interrupted},
                 {"checkpoint", ckpt_dir}};
  out.summary["device"] = o.device;
  if (gpu) {
    out.summary["mfu"] = timed_steps > 0 ? flops / mean_step / (kCudaPeakTflops * 1e12) : 0.0;
    out.summary["peak_device_mib"] = device_peak_mib;
  }
  if (ext.on_summary) ext.on_summary(out.summary);
  if (dp) out.summary.update(dp->summary());
  if (!std::isfinite(last_loss)) out.summary["final_loss"] = nullptr;
  if (!std::isfinite(last_val)) out.summary["val_loss"] = nullptr;
  return out;
}

}  // namespace core::train
