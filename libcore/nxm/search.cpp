// Sensitivity probes and the greedy plan search (see search.hpp).
#include "nxm/search.hpp"

#include <cstring>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "nxm/packed.hpp"
#include "nxm/sparsity.hpp"
#include "nxm/student.hpp"
#include "train/model_source.hpp"

namespace core::nxm {

namespace {
double bits_per_weight(const Setting& s) { return s.density() * s.bits; }
}  // namespace

SearchChoice greedy_search(int layers, std::int64_t hidden, double target_ratio, const std::vector<Setting>& candidates,
                           bool higher_is_better, const std::function<double(const Plan&)>& probe_metric) {
  SearchChoice out;
  Plan dense;
  dense.settings.fill(Setting{0, 0, 32});
  out.base_metric = probe_metric(dense);
  const double worse = higher_is_better ? -1.0 : 1.0;  // damage = worse * (metric - teacher's)
  std::vector<std::vector<double>> drop(4, std::vector<double>(candidates.size()));
  out.probes = nlohmann::json::array();
  for (Component c : kComponents)
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      Plan p = dense;
      p[c] = candidates[k];
      drop[static_cast<int>(c)][k] = worse * (probe_metric(p) - out.base_metric);
      out.probes.push_back({{"component", component_key(c)}, {"setting", candidates[k].to_string()},
                            {"drop", drop[static_cast<int>(c)][k]}});
    }
  Plan plan = dense;
  std::array<int, 4> chosen = {-1, -1, -1, -1};  // -1: dense fp32 (drop 0)
  const auto cr = [&](const Plan& p) { return compression_ratio(layers, hidden, 4 * hidden, p).cr_paper(); };
  out.steps = nlohmann::json::array();
  while (cr(plan) < target_ratio) {
    int best_c = -1, best_k = -1;
    double best_score = 0;
    for (Component c : kComponents) {
      const int ci = static_cast<int>(c);
      const double cur_drop = chosen[ci] < 0 ? 0.0 : drop[ci][chosen[ci]];
      for (std::size_t k = 0; k < candidates.size(); ++k) {
        if (bits_per_weight(candidates[k]) >= bits_per_weight(plan[c])) continue;
        Plan next = plan;
        next[c] = candidates[k];
        const double gain = cr(next) - cr(plan);
        const double score = (drop[ci][k] - cur_drop) / gain;
        if (best_c < 0 || score < best_score) {
          best_c = ci;
          best_k = static_cast<int>(k);
          best_score = score;
        }
      }
    }
    if (best_c < 0)
      throw UsageError("search: target_ratio " + std::to_string(target_ratio) + " cannot be reached with the candidates (best " +
                       std::to_string(cr(plan)) + ")");
    plan.settings[best_c] = candidates[best_k];
    chosen[best_c] = best_k;
    out.steps.push_back({{"component", component_key(kComponents[best_c])},
                         {"setting", candidates[best_k].to_string()},
                         {"cr_paper", cr(plan)},
                         {"score", best_score}});
  }
  out.plan = plan;
  double total_drop = 0;
  for (int ci = 0; ci < 4; ++ci)
    if (chosen[ci] >= 0) total_drop += drop[ci][chosen[ci]];
  out.predicted_metric = out.base_metric + worse * total_drop;
  return out;
}

nlohmann::json run_search(const SearchOptions& o, RunDir& rundir) {
  std::vector<Setting> candidates;
  for (const auto& c : o.candidates) candidates.push_back(parse_setting(c, "candidates"));
  if (candidates.empty()) throw UsageError("search: candidates is empty");
  CompressOptions co = o.compress;
  if (co.teacher.empty()) {
    log::info("no teacher given: fine-tuning one into {}", (rundir.path() / "teacher").string());
    train_teacher(co.teacher_training, co.task, co.seed, rundir.path() / "teacher", rundir.metrics());
    co.teacher = (rundir.path() / "teacher").string();
  }
  const train::ModelSource src = train::find_model(co.teacher);
  const bool gpt = src.config.architecture() == train::Arch::gpt;
  const auto tok = src.make_tokenizer("", "search");
  TaskOptions probe_task = co.task;
  if (gpt) {
    if (!o.probe.empty()) probe_task.train = o.probe;  // its validation tail
  } else {
    probe_task.test = o.probe.empty() ? co.task.train : o.probe;
    probe_task.max_train_examples = 1;
  }
  probe_task.max_test_examples = o.probe_examples;
  for (const auto& c : candidates) check_plan_fits(train::ParamLayout(src.config), [&] {
      Plan p;
      p.settings.fill(c);
      return p;
    }());

  const auto probe = make_student(src.config, *tok, probe_task, co.finetune.batch_size, co.seed);
  const char* metric = gpt ? "loss" : "accuracy";
  train::FlatBuffers<float> teacher(probe->model().layout());
  src.load_weights_into(teacher);
  const auto comps = component_matrices(probe->model().layout());
  int probes_run = 0;
  const auto probe_metric = [&](const Plan& plan) {
    auto& p = probe->model().params();
    for (int g = 0; g < teacher.num_groups(); ++g)
      std::memcpy(p.group(g), teacher.group(g), teacher.group_size(g) * sizeof(float));
    for (const auto& c : comps) compress_matrix(p.tensor(c.group, c.tensor), c.rows, c.cols, plan[c.component], c.name);
    const double value = probe->evaluate()[metric].get<double>();
    rundir.metrics().write({{"stage", "probe"}, {"step", ++probes_run}, {"plan", plan.to_string()}, {metric, value}});
    return value;
  };
  const SearchChoice choice =
      greedy_search(src.config.n_layer, src.config.n_embd, o.target_ratio, candidates, !gpt, probe_metric);
  log::info("search: chose {} (predicted probe {} {:.4f}, teacher {:.4f})", choice.plan.to_string(), metric,
            choice.predicted_metric, choice.base_metric);
  const nlohmann::json probe_data = probe->data_summary();
  co.plan = choice.plan.to_string();
  nlohmann::json r = run_compress(co, rundir);
  // The prediction for the evaluation split: the teacher's metric there, changed by the predicted damage.
  const std::string m = metric;
  const double predicted = r["teacher_" + m].get<double>() + (choice.predicted_metric - choice.base_metric);
  r["search"] = {{"target_ratio", o.target_ratio},
                 {"metric", m},
                 {"probe_examples", probe_data.value(gpt ? "val_windows" : "test_examples", nlohmann::json(0))},
                 {"probe_teacher_" + m, choice.base_metric},
                 {"predicted_probe_" + m, choice.predicted_metric},
                 {"predicted_" + m, predicted},
                 {"real_" + m, r[m]},
                 {"greedy_steps", choice.steps},
                 {"probes", choice.probes}};
  return r;
}

}  // namespace core::nxm
