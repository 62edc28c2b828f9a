// ltd-pretrain finetune (see finetune.hpp): GPT through train's loop, BERT classification here.
#include "ltd/finetune.hpp"

#include <cmath>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/memory.hpp"
#include "common/progress.hpp"
#include "common/rng.hpp"
#include "common/signals.hpp"
#include "common/timer.hpp"
#include "ltd/pretrain.hpp"
#include "ltd/sampler.hpp"
#include "ltd/schedule.hpp"
#include "train/checkpoint.hpp"
#include "train/gemm.hpp"
#include "train/model.hpp"
#include "train/model_source.hpp"
#include "train/optimizer.hpp"

namespace core::ltd {

using train::Batch;
using train::Model;
using train::Task;

void FinetuneOptions::validate() const {
  if (checkpoint.empty()) throw UsageError("checkpoint: give the pretrained model (--checkpoint RUN)");
}

namespace {

// Examples of a GLUE TSV as fixed-length rows: [CLS] + tokens, padded with id 0 under mask 0.
struct Examples {
  std::vector<std::int32_t> tokens;
  std::vector<std::uint8_t> mask;
  std::vector<std::int32_t> labels;
  std::size_t size() const { return labels.size(); }
};

Examples read_glue(const std::string& path, const text::Tokenizer& tok, std::int32_t cls, int T, int num_labels,
                   std::int64_t max_examples) {
  std::ifstream in(path);
  if (!in) throw InputMissingError(path + ": cannot open (a GLUE TSV: sentence<TAB>label with a header line)");
  Examples e;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1) continue;  // header
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto tab = line.rfind('\t');
    const std::string where = path + ":" + std::to_string(lineno);
    if (tab == std::string::npos) throw DataError(where + ": expected sentence<TAB>label");
    int label = -1;
    try {
      std::size_t used = 0;
      label = std::stoi(line.substr(tab + 1), &used);
      if (used != line.size() - tab - 1) label = -1;
    } catch (const std::exception&) {
      label = -1;
    }
    if (label < 0 || label >= num_labels)
      throw DataError(where + ": label '" + line.substr(tab + 1) + "' is not an integer in [0, " +
                      std::to_string(num_labels) + ") (model.num_labels)");
    const std::vector<std::int32_t> ids = tok.encode(std::string_view(line).substr(0, tab));
    e.tokens.push_back(cls);
    e.mask.push_back(1);
    for (int t = 1; t < T; ++t) {
      const bool real = std::size_t(t - 1) < ids.size();
      e.tokens.push_back(real ? ids[t - 1] : 0);
      e.mask.push_back(real ? 1 : 0);
    }
    e.labels.push_back(label);
    if (max_examples > 0 && std::int64_t(e.size()) == max_examples) break;
  }
  if (e.size() == 0) throw DataError(path + ": no examples");
  return e;
}

struct Scored {
  double loss = 0, accuracy = 0;
};

// Mean loss and accuracy over every example, in batches of B, on every token.
Scored score(Model<float>& model, const Examples& ex, int B, int T) {
  Scored s;
  std::int64_t correct = 0;
  const int K = model.config().num_labels;
  for (std::size_t i0 = 0; i0 < ex.size(); i0 += B) {
    const int b = int(std::min<std::size_t>(B, ex.size() - i0));
    Batch batch;
    batch.B = b;
    batch.T = T;
    batch.tokens = ex.tokens.data() + i0 * T;
    batch.attention_mask = ex.mask.data() + i0 * T;
    batch.labels = ex.labels.data() + i0;
    s.loss += double(model.forward(batch, Task::classify)) * b;
    // forward() turned the logits into probabilities: the argmax is the prediction.
    for (int r = 0; r < b; ++r) {
      const float* p = model.logits() + std::size_t(r) * K;
      correct += int(std::max_element(p, p + K) - p) == ex.labels[i0 + r];
    }
  }
  s.loss /= double(ex.size());
  s.accuracy = double(correct) / double(ex.size());
  return s;
}

train::TrainOutcome finetune_classifier(const FinetuneOptions& o, const train::ModelSource& src, RunDir& rundir) {
  const auto tok = src.make_tokenizer(o.data.tokenizer, "finetune",
                                      "data.tokenizer");
  const std::int32_t mask_id = tok->vocab_size(), cls = mask_id + 1;
  if (o.model.vocab_size <= cls)
    throw UsageError("finetune: the checkpoint's model.vocab_size = " + std::to_string(o.model.vocab_size) +
                     " has no id for [CLS] (" + std::to_string(cls) + ", after the tokenizer's " +
                     std::to_string(mask_id) + " ids and [MASK]): pretrain the BERT with model.vocab_size >= " +
                     std::to_string(cls + 1));
  const int B = o.train_micro_batch_size_per_gpu, T = o.data.seq_len, accum = o.gradient_accumulation_steps;
  const Examples train_set = read_glue(o.glue.train_file, *tok, cls, T, o.model.num_labels, o.glue.max_train_examples);
  const Examples eval_set = read_glue(o.glue.eval_file, *tok, cls, T, o.model.num_labels, 0);
  log::info("finetune: {} training / {} eval examples of {} tokens ([CLS] = {})", train_set.size(), eval_set.size(), T,
            cls);

  Model<float> model(o.model);
  train::init_parameters(model.params(), o.seed);
  src.load_weights_into(model.params());
  train::AdamWHyper hyper;
  hyper.beta1 = o.optimizer.params.betas[0];
  hyper.beta2 = o.optimizer.params.betas[1];
  hyper.eps = o.optimizer.params.eps;
  hyper.weight_decay = o.optimizer.params.weight_decay;
  train::AdamW<float> opt(model.layout(), hyper);
  const LtdSchedule sched(o);
  const RoutingPlan& plan = sched.plan();
  const Rng rng(o.seed);

  LtdCounters counters;
  const nlohmann::json run_state = {{"tokenizer", tok->spec()}, {"model", train::model_state_json(o.model)},
                                    {"seq_len", T}, {"seed", o.seed}, {"task", "classify"}};
  std::int64_t start = 0;
  if (const auto point = train::find_resume_point(rundir, o.resume, o.train_iters, "finetune")) {
    for (const char* key : {"model", "seq_len", "seed", "task"})
      if (point->state.value(key, nlohmann::json()) != run_state[key])
        throw UsageError(std::string("--resume: ") + key + " differs from checkpoint " + point->dir.string() +
                         ": resume with the run's config or finetune into another --out");
    train::load_checkpoint(point->dir, model.params(), opt);
    start = point->step;
    counters.from_json(point->state.value("extension", nlohmann::json::object()));
    if (counters.layer_tokens != sched.consumed_before(start))
      throw UsageError("--resume: the checkpoint consumed " + std::to_string(counters.layer_tokens) +
                       " LayerTokens, the configured random-LTD schedule gives " +
                       std::to_string(sched.consumed_before(start)) + " at step " + std::to_string(start));
    log::info("resumed from {} at step {}", point->dir.string(), start);
  }
  train::trim_metrics(rundir.path() / "metrics.jsonl", start);
  std::string ckpt;
  const auto checkpoint = [&](std::int64_t step) {
    nlohmann::json state = run_state;
    state["threads"] = train::num_threads();
    state["extension"] = counters.to_json();
    ckpt = train::save_checkpoint(rundir.checkpoints(), step, model.params(), opt, state, o.keep_checkpoints).string();
  };

  std::vector<std::int32_t> tokens(std::size_t(B) * T), labels(B);
  std::vector<std::uint8_t> mask(std::size_t(B) * T);
  double last_loss = std::nan(""), time_sum = 0;
  Scored last_eval{std::nan(""), std::nan("")};
  Progress progress("finetune", static_cast<std::uint64_t>(o.train_iters));
  train::TrainOutcome out;
  std::int64_t step = start;
  for (; step < o.train_iters; ++step) {
    if (stop_requested()) {
      checkpoint(step);
      log::warn("stop requested (signal {}): checkpoint {} written at step {}", stop_signal(), ckpt, step);
      out.interrupted = true;
      break;
    }
    Timer timer;
    const std::clock_t cpu0 = std::clock();
    model.grads().zero();
    const std::uint64_t flops0 = train::gemm_flops_counted();
    const int kept = sched.kept(step);
    double loss = 0;
    for (int micro = 0; micro < accum; ++micro) {
      Rng draw = rng.split(train::batch_stream(step, micro, accum));
      for (int b = 0; b < B; ++b) {
        const std::size_t i = draw.below(train_set.size());
        std::copy_n(train_set.tokens.begin() + i * T, T, tokens.begin() + std::size_t(b) * T);
        std::copy_n(train_set.mask.begin() + i * T, T, mask.begin() + std::size_t(b) * T);
        labels[b] = train_set.labels[i];
      }
      Batch batch;
      batch.B = B;
      batch.T = T;
      batch.tokens = tokens.data();
      batch.attention_mask = mask.data();
      batch.labels = labels.data();
      model.set_token_subsets(draw_token_subsets(plan, kept, step, /*rank=*/0, micro, B));
      loss += model.forward(batch, Task::classify);
      model.backward(1.0f / float(accum));
      model.set_token_subsets({});
    }
    loss /= accum;
    const double norm = train::global_grad_norm(model.grads());
    if (!std::isfinite(loss) || !std::isfinite(norm))
      throw DataError("finetuning diverged at step " + std::to_string(step + 1) + "; lower optimizer.params.lr");
    const double clip = (o.gradient_clipping > 0 && norm > o.gradient_clipping) ? o.gradient_clipping / norm : 1.0;
    const double lr = sched.lr(step, counters.layer_tokens);
    opt.step(model.params(), model.grads(), lr, clip);
    const double secs = timer.seconds();
    time_sum += secs;
    const double measured = double(train::gemm_flops_counted() - flops0);
    counters.add(sched.layer_tokens(step), measured,
                 full_length_flops(measured, sched, o.model, step, sched.sequences_per_step()),
                 double(std::clock() - cpu0) / CLOCKS_PER_SEC);
    last_loss = loss;
    nlohmann::json rec = {{"step", step + 1}, {"loss", loss}, {"lr", lr}, {"grad_norm", norm}, {"step_s", secs},
                          {"kept_tokens", kept}, {"layer_tokens", sched.layer_tokens(step)},
                          {"cumulative_layer_tokens", counters.layer_tokens}, {"gemm_flops", measured}};
    if ((step + 1) % o.eval_interval == 0 || step + 1 == o.train_iters) {
      last_eval = score(model, eval_set, B, T);
      rec["val_loss"] = last_eval.loss;
      rec["accuracy"] = last_eval.accuracy;
    }
    rundir.metrics().write(rec);
    progress.update(static_cast<std::uint64_t>(step + 1), "loss " + std::to_string(loss).substr(0, 6));
    if (o.save_interval > 0 && (step + 1) % o.save_interval == 0 && step + 1 < o.train_iters) checkpoint(step + 1);
  }
  progress.finish();
  if (!out.interrupted) checkpoint(o.train_iters);
  const double mean_step = step > start ? time_sum / double(step - start) : 0.0;
  out.summary = {{"steps", step},
                 {"final_loss", last_loss},
                 {"val_loss", last_eval.loss},
                 {"accuracy", last_eval.accuracy},
                 {"eval_examples", eval_set.size()},
                 {"tokens_per_s", mean_step > 0 ? double(B) * T * accum / mean_step : 0.0},
                 {"mean_step_s", mean_step},
                 {"parameters", model.layout().parameter_count()},
                 {"threads", train::num_threads()},
                 {"peak_rss_mib", peak_rss_mib()},
                 {"tokenizer", tok->spec()},
                 {"interrupted", out.interrupted},
                 {"checkpoint", ckpt},
                 {"device", "cpu"}};
  counters.summarise(out.summary, sched, step);
  return out;
}

}  // namespace

train::TrainOutcome run_finetune(const FinetuneOptions& options, RunDir& rundir) {
  options.validate();
  const train::ModelSource src = train::find_model(options.checkpoint);
  if (src.format != train::ModelSource::Format::checkpoint)
    throw UsageError("checkpoint: " + options.checkpoint + " is not a run or checkpoint folder of this toolkit");
  FinetuneOptions o = options;
  o.model = src.config;
  if (o.data.tokenizer.empty() && !src.tokenizer.empty()) o.data.tokenizer = src.tokenizer;
  o.LtdTrainOptions::validate();  // random-LTD against the checkpoint's model
  log::info("finetune: {} model of {} layers from {}", o.model.arch, o.model.n_layer, src.path.string());
  if (o.threads > 0) train::set_num_threads(o.threads);
  if (o.model.architecture() == train::Arch::bert) {
    if (o.device != "cpu")
      throw UsageError("device=cuda: BERT classification finetuning runs on the host; use device=cpu (GPT "
                       "finetuning and pretraining run on the device)");
    if (o.zero_optimization.stage != 0)
      throw UsageError("zero_optimization.stage: BERT classification finetuning runs on one rank (stage 0)");
    return finetune_classifier(o, src, rundir);
  }
  o.init_from = options.checkpoint;
  return run_ltd_training(o, rundir);
}

}  // namespace core::ltd
