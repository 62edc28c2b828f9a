// Sensitivity probes and the greedy plan search (see search.hpp).
#include "nxm/search.hpp"

#include <cstring>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "nxm/packed.hpp"
#include "nxm/sparsity.hpp"
#include "train/model_source.hpp"

namespace core::nxm {

namespace {
double bits_per_weight(const Setting& s) { return s.density() * s.bits; }
}  // namespace

SearchChoice greedy_search(int layers, std::int64_t hidden, double target_ratio, const std::vector<Setting>& candidates,
                           const std::function<double(const Plan&)>& probe_accuracy) {
  SearchChoice out;
  Plan dense;
  dense.settings.fill(Setting{0, 0, 32});
  out.base_accuracy = probe_accuracy(dense);
  std::vector<std::vector<double>> drop(4, std::vector<double>(candidates.size()));
  out.probes = nlohmann::json::array();
  for (Component c : kComponents)
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      Plan p = dense;
      p[c] = candidates[k];
      drop[static_cast<int>(c)][k] = out.base_accuracy - probe_accuracy(p);
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
  out.predicted_accuracy = out.base_accuracy - total_drop;
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
  if (src.config.architecture() != train::Arch::bert) throw UsageError("search: the teacher must be a BERT classifier");
  const auto tok = src.make_tokenizer("", "search");
  TaskOptions probe_task = co.task;
  if (!o.probe.empty()) probe_task.test = o.probe;
  else probe_task.test = co.task.train;
  probe_task.max_test_examples = o.probe_examples;
  probe_task.max_train_examples = 1;
  const EncodedSet probe = load_task(probe_task, *tok, src.config, co.seed).test;
  for (const auto& c : candidates) check_plan_fits(train::ParamLayout(src.config), [&] {
      Plan p;
      p.settings.fill(c);
      return p;
    }());

  Classifier clf(src.config, co.finetune.batch_size);
  train::FlatBuffers<float> teacher(clf.model().layout());
  src.load_weights_into(teacher);
  const auto comps = component_matrices(clf.model().layout());
  int probes_run = 0;
  const auto probe_accuracy = [&](const Plan& plan) {
    auto& p = clf.model().params();
    for (int g = 0; g < teacher.num_groups(); ++g)
      std::memcpy(p.group(g), teacher.group(g), teacher.group_size(g) * sizeof(float));
    for (const auto& c : comps) compress_matrix(p.tensor(c.group, c.tensor), c.rows, c.cols, plan[c.component], c.name);
    const double acc = clf.accuracy(probe);
    rundir.metrics().write({{"stage", "probe"}, {"step", ++probes_run}, {"plan", plan.to_string()}, {"accuracy", acc}});
    return acc;
  };
  const SearchChoice choice =
      greedy_search(src.config.n_layer, src.config.n_embd, o.target_ratio, candidates, probe_accuracy);
  log::info("search: chose {} (predicted probe accuracy {:.4f}, teacher {:.4f})", choice.plan.to_string(),
            choice.predicted_accuracy, choice.base_accuracy);
  co.plan = choice.plan.to_string();
  nlohmann::json r = run_compress(co, rundir);
  r["search"] = {{"target_ratio", o.target_ratio},
                 {"probe_examples", probe.size()},
                 {"probe_teacher_accuracy", choice.base_accuracy},
                 {"predicted_probe_accuracy", choice.predicted_accuracy},
                 {"predicted_accuracy", r["teacher_accuracy"].get<double>() - (choice.base_accuracy - choice.predicted_accuracy)},
                 {"greedy_steps", choice.steps},
                 {"probes", choice.probes}};
  return r;
}

}  // namespace core::nxm
