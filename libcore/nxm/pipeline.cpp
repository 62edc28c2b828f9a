// Teacher fine-tuning and the compression methods (see pipeline.hpp).
#include "nxm/pipeline.hpp"

#include <cstring>
#include <functional>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rng.hpp"
#include "nxm/admm.hpp"
#include "nxm/packed.hpp"
#include "nxm/sparsity.hpp"
#include "nxm/student.hpp"
#include "train/checkpoint.hpp"
#include "train/gemm.hpp"
#include "train/model_source.hpp"
#include "train/optimizer.hpp"
#include "train/trainer.hpp"

namespace core::nxm {

namespace {

constexpr std::uint64_t kTestSeedOffset = 1000003;  // the synthetic test split's seed differs from train's

std::vector<Example> first_n(std::vector<Example> v, int n) {
  if (n > 0 && static_cast<int>(v.size()) > n) v.resize(n);
  return v;
}

train::AdamW<float> make_adamw(const train::ParamLayout& layout, double weight_decay) {
  train::AdamWHyper h;
  h.beta1 = 0.9;
  h.beta2 = 0.999;
  h.eps = 1e-8;
  h.weight_decay = weight_decay;
  return train::AdamW<float>(layout, h);
}

// One optimizer step on `target` (the weights AdamW updates) from the gradients of a random batch;
// `adjust` edits the gradients first (proximal terms, masks). Gradient norm clipped to 1.
double train_step(Student& student, Rng& rng, train::FlatBuffers<float>& target, train::AdamW<float>& opt, double lr,
                  const std::function<void(train::FlatBuffers<float>&)>& adjust) {
  auto& grads = student.model().grads();
  grads.zero();
  const double loss = student.step(rng);
  if (adjust) adjust(grads);
  const double norm = train::global_grad_norm(grads);
  opt.step(target, grads, lr, norm > 1.0 ? 1.0 / norm : 1.0);
  return loss;
}

void copy_buffers(const train::FlatBuffers<float>& from, train::FlatBuffers<float>& to) {
  for (int g = 0; g < from.num_groups(); ++g) std::memcpy(to.group(g), from.group(g), from.group_size(g) * sizeof(float));
}

// What the forward pass sees of the latent weights: themselves, Q(W), or Q(Pi(W)) on the components.
enum class View { latent, quantized, compressed };

void write_view(const train::FlatBuffers<float>& latent, train::FlatBuffers<float>& params,
                const std::vector<ComponentMatrix>& comps, const Plan& plan, View view) {
  copy_buffers(latent, params);
  if (view == View::latent) return;
  for (const auto& c : comps) {
    float* w = params.tensor(c.group, c.tensor);
    if (view == View::quantized) fake_quantize(w, c.rows, c.cols, plan[c.component].bits);
    else compress_matrix(w, c.rows, c.cols, plan[c.component], c.name);
  }
}

// The evaluation's keys with a prefix ("teacher_", "hard_prune_", "test_", "").
nlohmann::json prefixed(const nlohmann::json& eval, const std::string& prefix) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : eval.items()) out[prefix + k] = v;
  return out;
}

}  // namespace

TaskData load_task(const TaskOptions& task, const text::Tokenizer& tok, const train::ModelConfig& config,
                   std::uint64_t seed) {
  if (task.max_seq_len > config.n_positions)
    throw UsageError("task.max_seq_len = " + std::to_string(task.max_seq_len) + " exceeds the model's n_positions = " +
                     std::to_string(config.n_positions));
  const std::int32_t cls = tok.vocab_size();
  if (cls >= config.vocab_size)
    throw UsageError("the model's vocabulary (" + std::to_string(config.vocab_size) +
                     ") has no id after the tokenizer's for [CLS]: pretrain with zpp-train's BERT (vocab_size >= " +
                     std::to_string(cls + 1) + ")");
  TaskData d;
  d.train = encode_examples(first_n(load_examples(task.train, config.num_labels, seed), task.max_train_examples), tok,
                            cls, task.max_seq_len);
  d.test = encode_examples(first_n(load_examples(task.test, config.num_labels, seed + kTestSeedOffset),
                                   task.max_test_examples),
                           tok, cls, task.max_seq_len);
  return d;
}

nlohmann::json train_teacher(const TeacherOptions& o, const TaskOptions& task, std::uint64_t seed, const fs::path& dir,
                             MetricsWriter& metrics) {
  std::string init = o.init_from;
  if (init.empty()) {
    const bool gpt = o.pretrain.arch == "gpt";
    train::TrainOptions t;
    t.model.arch = o.pretrain.arch;
    t.model.n_layer = o.pretrain.n_layer;
    t.model.n_head = o.pretrain.n_head;
    t.model.n_embd = o.pretrain.n_embd;
    t.model.n_positions = std::max(o.pretrain.seq_len, task.max_seq_len);
    t.model.vocab_size = gpt ? 256 : 257;  // bytes (BERT: + [MASK], also the [CLS] of classification)
    t.data.input = o.pretrain.text;
    t.data.tokenizer = "bytes";
    t.data.seq_len = o.pretrain.seq_len;
    t.train_micro_batch_size_per_gpu = o.pretrain.batch_size;
    t.train_iters = o.pretrain.steps;
    t.optimizer.params.lr = o.pretrain.lr;
    t.scheduler.params.warmup_num_steps = std::max<std::int64_t>(1, o.pretrain.steps / 10);
    t.eval_interval = static_cast<int>(o.pretrain.steps);
    t.eval_iters = 2;
    t.seed = seed;
    t.threads = train::num_threads();
    t.validate();
    log::info("pretraining a {}-layer {}-wide {} on {} for {} steps", t.model.n_layer, t.model.n_embd,
              gpt ? "GPT (causal LM)" : "BERT (masked LM)", t.data.input, t.train_iters);
    RunDir pre("zpp-train", dir / "pretrain");
    train::run_training(t, pre);
    init = (dir / "pretrain").string();
  }
  const train::ModelSource src = train::find_model(init);
  const auto tok = src.make_tokenizer("", "finetune");
  const auto student = make_student(src.config, *tok, task, o.train.batch_size, seed);
  auto& params = student->model().params();
  src.load_weights_into(params);
  auto opt = make_adamw(student->model().layout(), o.train.weight_decay);
  Rng rng(seed ^ 0x5eedULL);
  double loss = 0;
  for (std::int64_t s = 0; s < o.train.steps; ++s) {
    const double lr = train::scheduled_lr(train::LrSchedule::warmup_decay, s, o.train.lr, o.train.warmup_steps,
                                          o.train.steps, 0.0);
    loss = train_step(*student, rng, params, opt, lr, {});
    if ((s + 1) % 10 == 0 || s + 1 == o.train.steps)
      metrics.write({{"stage", "finetune"}, {"step", s + 1}, {"loss", loss}, {"lr", lr}});
  }
  const nlohmann::json eval = student->evaluate();
  nlohmann::json line = {{"stage", "finetune"}, {"step", o.train.steps}};
  line.update(prefixed(eval, "test_"));
  metrics.write(line);
  nlohmann::json state;
  state["tokenizer"] = tok->spec();
  state["model"] = train::model_state_json(src.config);
  state["seq_len"] = task.max_seq_len;
  state["task"] = student->task_record();
  state.update(eval);
  train::save_checkpoint(dir / "checkpoints", o.train.steps, params, opt, state, 1);
  nlohmann::json summary = eval;
  summary.update({{"final_loss", loss}, {"steps", o.train.steps}, {"pretrained", init},
                  {"parameters", student->model().layout().parameter_count()}});
  summary.update(student->data_summary());
  return summary;
}

nlohmann::json run_compress(const CompressOptions& o, RunDir& rundir) {
  const Plan plan = parse_plan(o.plan);
  MetricsWriter& metrics = rundir.metrics();
  nlohmann::json teacher_summary;
  std::string teacher = o.teacher;
  if (teacher.empty()) {
    log::info("no teacher given: fine-tuning one into {}", (rundir.path() / "teacher").string());
    teacher_summary = train_teacher(o.teacher_training, o.task, o.seed, rundir.path() / "teacher", metrics);
    teacher = (rundir.path() / "teacher").string();
  }
  const train::ModelSource src = train::find_model(teacher);
  const train::ParamLayout& probe_layout = train::ParamLayout(src.config);
  check_plan_fits(probe_layout, plan);
  const auto tok = src.make_tokenizer("", "compress");
  const auto student = make_student(src.config, *tok, o.task, o.finetune.batch_size, o.seed);

  const train::ParamLayout& layout = student->model().layout();
  auto& params = student->model().params();
  src.load_weights_into(params);
  const nlohmann::json teacher_eval = student->evaluate();
  student->capture_teacher({o.distill.alpha, o.distill.temperature, o.distill.hidden_weight});
  log::info("teacher {} on the held-out split; compressing with {} (qat {}) to {}", teacher_eval.dump(), o.method,
            o.qat, plan.to_string());

  train::FlatBuffers<float> latent(layout);
  copy_buffers(params, latent);
  const auto comps = component_matrices(layout);
  auto opt = make_adamw(layout, o.finetune.weight_decay);
  Rng rng(o.seed ^ 0xc0ffeeULL);
  const std::int64_t sparse_steps = o.admm.rounds * o.admm.steps_per_round;
  const bool joint = o.qat == "joint";
  std::int64_t step = 0;
  const auto log_step = [&](const char* stage, double loss, double lr) {
    ++step;
    if (step % 10 == 0) metrics.write({{"stage", stage}, {"step", step}, {"loss", loss}, {"lr", lr}});
  };

  if (o.method == "admm") {
    std::vector<AdmmMatrix> admm;
    for (const auto& c : comps) {
      admm.emplace_back(c.name, c.rows, c.cols, plan[c.component], joint);
      admm.back().init(latent.tensor(c.group, c.tensor));
    }
    double rho = o.admm.rho;
    for (int round = 0; round < o.admm.rounds; ++round) {
      for (std::int64_t s = 0; s < o.admm.steps_per_round; ++s) {
        write_view(latent, params, comps, plan, joint ? View::quantized : View::latent);
        const double loss = train_step(*student, rng, latent, opt, o.finetune.lr, [&](auto& grads) {
          for (std::size_t i = 0; i < comps.size(); ++i)
            admm[i].add_proximal_gradient(latent.tensor(comps[i].group, comps[i].tensor), rho,
                                          grads.tensor(comps[i].group, comps[i].tensor));
        });
        log_step("admm", loss, o.finetune.lr);
      }
      AdmmRoundStats total;
      for (std::size_t i = 0; i < comps.size(); ++i)
        total.add(admm[i].update(latent.tensor(comps[i].group, comps[i].tensor)));
      metrics.write({{"stage", "admm_round"}, {"step", step}, {"round", round + 1}, {"rho", rho},
                     {"primal_residual", std::sqrt(total.primal_sq)},
                     {"relative_primal_residual", std::sqrt(total.primal_sq / std::max(total.weight_sq, 1e-30))},
                     {"dual_residual", rho * std::sqrt(total.dual_sq)},
                     {"mask_flip_rate", double(total.flips) / double(std::max<std::int64_t>(1, total.positions))}});
      log::info("admm round {}: rho {:.3g}, relative primal residual {:.4f}, flip rate {:.5f}", round + 1, rho,
                std::sqrt(total.primal_sq / std::max(total.weight_sq, 1e-30)),
                double(total.flips) / double(std::max<std::int64_t>(1, total.positions)));
      const double next_rho = std::min(rho * o.admm.rho_growth, o.admm.rho_max);
      for (auto& a : admm) a.rescale_dual(rho / next_rho);
      rho = next_rho;
    }
  } else if (o.method == "srste") {
    for (std::int64_t s = 0; s < sparse_steps; ++s) {
      write_view(latent, params, comps, plan, joint ? View::compressed : View::latent);
      if (!joint)
        for (const auto& c : comps) nm_project(params.tensor(c.group, c.tensor), c.rows, c.cols, plan[c.component], c.name);
      const double loss = train_step(*student, rng, latent, opt, o.finetune.lr, [&](auto& grads) {
        for (const auto& c : comps) {
          const float* w = latent.tensor(c.group, c.tensor);
          std::vector<std::uint8_t> mask(c.rows * c.cols);
          nm_mask(w, c.rows, c.cols, plan[c.component], mask.data(), c.name);
          float* g = grads.tensor(c.group, c.tensor);
          for (std::size_t i = 0; i < mask.size(); ++i)
            if (!mask[i]) g[i] += static_cast<float>(o.srste_decay) * w[i];
        }
      });
      log_step("srste", loss, o.finetune.lr);
    }
  }

  // Hard pruning: the N:M mask of the latent weights, fixed from here on.
  MaskSet masks;
  for (const auto& c : comps) {
    float* w = latent.tensor(c.group, c.tensor);
    std::vector<std::uint8_t> mask(c.rows * c.cols);
    nm_mask(w, c.rows, c.cols, plan[c.component], mask.data(), c.name);
    masks.add(c.group, c.tensor, std::move(mask));
  }
  masks.apply(latent);
  masks.apply_to_optimizer(opt);
  write_view(latent, params, comps, plan, View::compressed);
  const nlohmann::json pruned_eval = student->evaluate();
  nlohmann::json line = {{"stage", "hard_prune"}, {"step", step}};
  line.update(prefixed(pruned_eval, "test_"));
  metrics.write(line);

  // Masked fine-tuning (the magnitude baseline gets the sparse stage's steps too).
  const std::int64_t ft_steps = o.finetune.steps + (o.method == "magnitude" ? sparse_steps : 0);
  const View ft_view = o.qat == "none" ? View::latent : View::quantized;
  for (std::int64_t s = 0; s < ft_steps; ++s) {
    write_view(latent, params, comps, plan, ft_view);
    const double lr = train::scheduled_lr(train::LrSchedule::warmup_decay, s, o.finetune.lr, o.finetune.warmup_steps,
                                          ft_steps, 0.0);
    const double loss = train_step(*student, rng, latent, opt, lr, [&](auto& grads) { masks.apply(grads); });
    log_step("masked_finetune", loss, lr);
  }

  write_view(latent, params, comps, plan, View::compressed);
  const nlohmann::json final_eval = student->evaluate();
  line = {{"stage", "final"}, {"step", step}};
  line.update(prefixed(final_eval, "test_"));
  metrics.write(line);

  nlohmann::json info = {{"tokenizer", tok->spec()}, {"task", student->task_record()}, {"method", o.method}, {"qat", o.qat}};
  info.update(final_eval);
  const fs::path packed_path = rundir.artifact("model.nxm.safetensors");
  write_packed(packed_path, pack_model(latent, plan, info));
  nlohmann::json state = info;
  state["model"] = train::model_state_json(src.config);
  state["seq_len"] = o.task.max_seq_len;
  state["plan"] = plan.to_string();
  const fs::path ckpt = train::save_checkpoint(rundir.checkpoints(), step, params, opt, state, 1);
  const RatioReport ratio = compression_ratio(src.config.n_layer, src.config.n_embd, 4 * src.config.n_embd, plan);

  nlohmann::json r = {{"method", o.method},
                      {"qat", o.qat},
                      {"plan", plan.to_string()},
                      {"teacher", teacher},
                      {"cr_paper", ratio.cr_paper()},
                      {"cr_hardware", ratio.cr_hardware()},
                      {"steps", step},
                      {"packed_model", packed_path.string()},
                      {"packed_bytes", fs::file_size(packed_path)},
                      {"dense_bytes", fs::file_size(ckpt / "model.safetensors")}};
  r.update(prefixed(teacher_eval, "teacher_"));
  r.update(prefixed(pruned_eval, "hard_prune_"));
  r.update(final_eval);
  if (final_eval.contains("accuracy")) {
    const double t = teacher_eval["accuracy"].get<double>(), a = final_eval["accuracy"].get<double>();
    r["accuracy_retained"] = t > 0 ? a / t : 0.0;
  } else {
    r["loss_increase"] = final_eval["loss"].get<double>() - teacher_eval["loss"].get<double>();
  }
  r.update(student->data_summary());
  if (!teacher_summary.is_null()) r["teacher_training"] = teacher_summary;
  return r;
}

}  // namespace core::nxm
