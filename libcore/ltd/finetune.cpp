// ltd-pretrain finetune (see finetune.hpp): GPT through train's loop, BERT classification here.
#include "ltd/finetune.hpp"

#include <cmath>
#include <ctime>
#include <span>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/memory.hpp"
#include "common/progress.hpp"
#include "common/signals.hpp"
#include "common/timer.hpp"
#include "ltd/pretrain.hpp"
#include "ltd/sampler.hpp"
#include "ltd/schedule.hpp"
#include "train/checkpoint.hpp"
#include "train/classify_batches.hpp"
#include "train/classify_data.hpp"
#include "train/data_parallel.hpp"
#include "train/gemm.hpp"
#include "train/length_batches.hpp"
#include "train/model.hpp"
#include "train/model_source.hpp"
#include "train/optimizer.hpp"
#include "zero/train_job.hpp"

namespace core::ltd {

using train::Batch;
using train::Model;
using train::Task;

void FinetuneOptions::validate() const {
  if (checkpoint.empty()) throw UsageError("checkpoint: give the pretrained model (--checkpoint RUN)");
}

namespace {

// The examples of a GLUE TSV (the first max_examples; 0: all) as [CLS] + tokens cut to T.
train::EncodedSet read_glue(const std::string& path, const text::Tokenizer& tok, std::int32_t cls, int T,
                            int num_labels, std::int64_t max_examples) {
  std::vector<train::LabelledText> examples = train::read_tsv(path, num_labels);
  if (max_examples > 0 && std::int64_t(examples.size()) > max_examples) examples.resize(std::size_t(max_examples));
  return train::encode_examples(examples, tok, cls, T);
}

struct Scored {
  double loss = 0, accuracy = 0;
};

// Mean loss and accuracy over every example, on every token, in batches of B of similar lengths, each padded
// to its own longest example.
Scored score(Model<float>& model, const train::EncodedSet& set, int B) {
  Scored s;
  std::int64_t correct = 0;
  const int K = model.config().num_labels, n = set.size();
  const std::vector<int> order = train::length_order(set);
  train::BatchRows rows;
  for (int i0 = 0; i0 < n; i0 += B) {
    const std::span<const int> idx(order.data() + i0, std::size_t(std::min(B, n - i0)));
    const Batch batch = rows.gather(set, idx, train::padded_length(set, idx));
    s.loss += double(model.forward(batch, Task::classify)) * batch.B;
    // forward() turned the logits into probabilities: the argmax is the prediction.
    for (int r = 0; r < batch.B; ++r) {
      const float* p = model.logits() + std::size_t(r) * K;
      correct += int(std::max_element(p, p + K) - p) == batch.labels[r];
    }
  }
  s.loss /= double(n);
  s.accuracy = double(correct) / double(n);
  return s;
}

// One rank's classification finetuning (rundir: rank 0's, else null; dp: the engine (stages 0-2) of a run on several
// ranks, else null). Rank r of W takes micro batch k = (step x accum + micro) x W + r, so a step consumes the
// same accum x W batches for any split of them into ranks and micro steps, and a micro batch's token subsets are
// keyed on k's place in the step (micro x W + r), not on the rank.
train::TrainOutcome finetune_classifier(const FinetuneOptions& o, const train::ModelSource& src, RunDir* rundir,
                                        train::DataParallel* dp) {
  const int rank = dp ? dp->rank() : 0, world = dp ? dp->world_size() : 1;
  const auto tok = src.make_tokenizer(o.data.tokenizer, "finetune",
                                      "data.tokenizer");
  const std::int32_t mask_id = tok->vocab_size(), cls = mask_id + 1;
  if (o.model.vocab_size <= cls)
    throw UsageError("finetune: the checkpoint's model.vocab_size = " + std::to_string(o.model.vocab_size) +
                     " has no id for [CLS] (" + std::to_string(cls) + ", after the tokenizer's " +
                     std::to_string(mask_id) + " ids and [MASK]): pretrain the BERT with model.vocab_size >= " +
                     std::to_string(cls + 1));
  const int B = o.train_micro_batch_size_per_gpu, T = o.data.seq_len, accum = o.gradient_accumulation_steps;
  const train::EncodedSet train_set =
      read_glue(o.glue.train_file, *tok, cls, T, o.model.num_labels, o.glue.max_train_examples);
  const train::EncodedSet eval_set = read_glue(o.glue.eval_file, *tok, cls, T, o.model.num_labels, 0);
  if (rank == 0)
    log::info("finetune: {} training / {} eval examples of at most {} tokens ([CLS] = {})", train_set.size(),
            eval_set.size(), T, cls);

  Model<float> model(o.model);
  train::init_parameters(model.params(), o.seed);
  src.load_weights_into(model.params());  // (every rank: the engine's attach then broadcasts rank 0's state)
  train::AdamWHyper hyper;
  hyper.beta1 = o.optimizer.params.betas[0];
  hyper.beta2 = o.optimizer.params.betas[1];
  hyper.eps = o.optimizer.params.eps;
  hyper.weight_decay = o.optimizer.params.weight_decay;
  train::AdamW<float> opt(model.layout(), hyper);
  const LtdSchedule sched(o, world);  // B counts every rank's sequences
  const RoutingPlan& plan = sched.plan();
  // Micro batch k = step x accum + micro of length-bucketed epochs: a function of (seed, k) only.
  train::LengthBatches batches(train_set.lengths, B, o.seed);
  train::PaddingCount padding;

  LtdCounters counters;
  // "batches": how micro batch k is drawn; a checkpoint of the uniform draws (before length-bucketed batches,
  // without the key) would not continue the same run, so it is refused. "batches_per_step" (accum x ranks):
  // the batches a step consumes, so a resume on other ranks continues the same batches when it is equal.
  const nlohmann::json run_state = {{"tokenizer", tok->spec()}, {"model", train::model_state_json(o.model)},
                                    {"seq_len", T},
                                    {"seed", o.seed},
                                    {"task", "classify"},
                                    {"batches", "length_bucketed"},
                                    {"batches_per_step", accum * world}};
  std::int64_t start = 0;
  std::string resume_dir;
  bool sharded = false;  // resume_dir holds the engine's shards (read after attach)
  nlohmann::json resumed;  // the checkpoint's counters (every rank is told)
  const auto point = rundir ? train::find_resume_point(*rundir, o.resume, o.train_iters, "finetune") : std::nullopt;
  if (point) {
    for (const char* key : {"model", "seq_len", "seed", "task", "batches", "batches_per_step"})
      if (point->state.value(key, nlohmann::json()) != run_state[key])
        throw UsageError(std::string("--resume: ") + key + " differs from checkpoint " + point->dir.string() +
                         ": resume with the run's config or finetune into another --out");
    sharded = point->state.contains(train::kShardManifestKey);
    if (!sharded) train::load_checkpoint(point->dir, model.params(), opt);
    start = point->step;
    resume_dir = point->dir.string();
    resumed = {{"extension", point->state.value("extension", nlohmann::json::object())},
               {"train_padding", point->state.value("train_padding", nlohmann::json::object())}};
    log::info("resumed from {} at step {}", resume_dir, start);
  }
  if (dp) {
    const auto where = dp->broadcast({{"start", start}, {"checkpoint", resume_dir}, {"sharded", sharded},
                                      {"resumed", resumed}});
    start = where.at("start").get<std::int64_t>();
    resume_dir = where.at("checkpoint").get<std::string>();
    sharded = where.at("sharded").get<bool>();
    resumed = where.at("resumed");
    // rank 0's weights and moments (checkpoint's or pretrained, already whole in memory) on every rank
    dp->attach(model, opt, [](int) {});
    if (sharded) dp->load_checkpoint(resume_dir);
  }
  if (!resume_dir.empty()) {
    counters.from_json(resumed.at("extension"));
    padding = train::PaddingCount::from_json(resumed.at("train_padding"));
    if (counters.layer_tokens != sched.consumed_before(start))
      throw UsageError("--resume: the checkpoint consumed " + std::to_string(counters.layer_tokens) +
                       " LayerTokens, the configured random-LTD schedule gives " +
                       std::to_string(sched.consumed_before(start)) + " at step " + std::to_string(start));
  }
  if (rundir) train::trim_metrics(rundir->path() / "metrics.jsonl", start);
  std::string ckpt;
  const auto checkpoint = [&](std::int64_t step) {
    nlohmann::json state = run_state;
    state["threads"] = train::num_threads();
    state["extension"] = counters.to_json();
    state["train_padding"] = padding.to_json();
    if (dp)
      ckpt = dp->save_checkpoint(rundir ? rundir->checkpoints() : std::filesystem::path(), step, state,
                                   o.keep_checkpoints)
                 .string();
    else
      ckpt = train::save_checkpoint(rundir->checkpoints(), step, model.params(), opt, state, o.keep_checkpoints)
                 .string();
  };
  bool stop_agreed = false;  // ranks stop together, on the step after any rank was asked

  train::BatchRows rows;
  double last_loss = std::nan(""), time_sum = 0;
  const std::int64_t batch_tokens_before = padding.batch_tokens;
  Scored last_eval{std::nan(""), std::nan("")};
  Progress progress("finetune", static_cast<std::uint64_t>(o.train_iters));
  train::TrainOutcome out;
  std::int64_t step = start;
  for (; step < o.train_iters; ++step) {
    if (dp ? stop_agreed : stop_requested()) {
      checkpoint(step);
      log::warn("stop requested (signal {}): checkpoint {} written at step {}", stop_signal(), ckpt, step);
      out.interrupted = true;
      break;
    }
    Timer timer;
    const std::clock_t cpu0 = std::clock();
    model.grads().zero();
    if (dp) dp->begin_step();
    const std::uint64_t flops0 = train::thread_gemm_flops();
    const int kept = sched.kept(step);
    const train::PaddingCount padding0 = padding;
    double loss = 0, undropped = 0;
    std::vector<int> lengths;  // each micro batch's padded length, every rank's (k order)
    for (int micro = 0; micro < accum; ++micro) {
      const std::int64_t k0 = (step * accum + micro) * world;
      for (int r = 0; r < world; ++r) {  // the step's padding counts every rank's batch (lengths only)
        const std::span<const int> idx = batches.batch(k0 + r);
        lengths.push_back(train::padded_length(train_set, idx));
        padding.add(train_set, idx, lengths.back());
      }
      const std::span<const int> idx = batches.batch(k0 + rank);
      const int n = lengths[lengths.size() - std::size_t(world - rank)];
      const Batch batch = rows.gather(train_set, idx, n);
      const std::uint64_t micro_flops0 = train::thread_gemm_flops();
      // At most `kept` tokens per sequence in the random-LTD layers; a batch no longer runs whole.
      model.set_token_subsets(draw_token_subsets(plan, kept, step, /*rank=*/0, micro * world + rank, batch.B, n));
      loss += model.forward(batch, Task::classify);
      model.backward(1.0f / float(accum));
      model.set_token_subsets({});
      undropped += undropped_flops(double(train::thread_gemm_flops() - micro_flops0), plan, o.model,
                                   std::uint64_t(batch.B), n, kept);
    }
    loss /= accum;
    double norm = 0;
    if (dp) {
      const train::DataParallel::Totals totals = dp->finish_gradients(loss, stop_requested());
      loss = totals.loss;
      norm = totals.grad_norm;
      stop_agreed = totals.stop;
    } else {
      norm = train::global_grad_norm(model.grads());
    }
    if (!std::isfinite(loss) || !std::isfinite(norm))
      throw DataError("finetuning diverged at step " + std::to_string(step + 1) + "; lower optimizer.params.lr");
    const double clip = (o.gradient_clipping > 0 && norm > o.gradient_clipping) ? o.gradient_clipping / norm : 1.0;
    const double lr = sched.lr(step, counters.layer_tokens);
    if (dp) dp->optimizer_step(lr, clip);
    else opt.step(model.params(), model.grads(), lr, clip);
    const double secs = timer.seconds();
    time_sum += secs;
    last_loss = loss;
    nlohmann::json rec = {{"step", step + 1},
                          {"loss", loss},
                          {"lr", lr},
                          {"grad_norm", norm},
                          {"step_s", secs},
                          {"example_tokens", padding.example_tokens - padding0.example_tokens},
                          {"batch_tokens", padding.batch_tokens - padding0.batch_tokens},
                          {"batch_lengths", lengths}};
    if (dp) rec.update(dp->step_metrics());
    counters.record(rec, sched, step, double(train::thread_gemm_flops() - flops0), undropped,
                    double(std::clock() - cpu0) / CLOCKS_PER_SEC);
    // Every rank holds the same weights: rank 0 scores them.
    if (rank == 0 && ((step + 1) % o.eval_interval == 0 || step + 1 == o.train_iters)) {
      last_eval = score(model, eval_set, B);
      rec["val_loss"] = last_eval.loss;
      rec["accuracy"] = last_eval.accuracy;
    }
    if (rundir) rundir->metrics().write(rec);
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
                 {"tokens_per_s", time_sum > 0 ? double(padding.batch_tokens - batch_tokens_before) / time_sum : 0.0},
                 {"mean_step_s", mean_step},
                 {"parameters", model.layout().parameter_count()},
                 {"threads", train::num_threads()},
                 {"peak_rss_mib", peak_rss_mib()},
                 {"tokenizer", tok->spec()},
                 {"interrupted", out.interrupted},
                 {"checkpoint", ckpt},
                 {"device", "cpu"},
                 {"train_padding", padding.to_json()}};
  counters.summarise(out.summary, sched, step);
  if (dp) out.summary.update(dp->summary());
  return out;
}

}  // namespace

train::TrainOutcome run_finetune(const FinetuneOptions& options, RunDir* rundir, const comm::RankInfo& ranks) {
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
    if (o.zero_optimization.stage == 3)
      throw UsageError("zero_optimization.stage = 3: BERT classification finetuning keeps the whole weights on every "
                       "rank (rank 0 scores them alone); use stage 0, 1 or 2");
    return zero::run_data_parallel(o, rundir, ranks, [&](RunDir* rd, train::DataParallel* dp, int, int) {
      return finetune_classifier(o, src, rd, dp);
    });
  }
  o.init_from = options.checkpoint;
  return run_ltd_training(o, rundir, ranks);
}

}  // namespace core::ltd
