// Sensitivity probes and the plan search (see search.hpp).
#include "nxm/search.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "nxm/packed.hpp"
#include "nxm/sparsity.hpp"
#include "nxm/student.hpp"
#include "train/model_source.hpp"

namespace core::nxm {

namespace {

// Every plan of the per-component options (index 0 of each: dense fp32), in the order qkv, ao, ffn1, ffn2
// (the last component varies fastest): `visit(option indices)`.
template <class F>
void for_each_plan(std::size_t options, F&& visit) {
  std::array<std::size_t, 4> k{};
  for (k[0] = 0; k[0] < options; ++k[0])
    for (k[1] = 0; k[1] < options; ++k[1])
      for (k[2] = 0; k[2] < options; ++k[2])
        for (k[3] = 0; k[3] < options; ++k[3]) visit(k);
}

}  // namespace

SearchChoice search_plan(int layers, std::int64_t hidden, double target_ratio, double ratio_tolerance,
                         const std::vector<Setting>& candidates, bool higher_is_better,
                         const std::function<double(const Plan&)>& probe_metric) {
  constexpr std::size_t kMaxCandidates = 60;  // 61^4 = 1.4e7 plans
  if (candidates.size() > kMaxCandidates)
    throw UsageError("search: " + std::to_string(candidates.size()) + " candidates; at most " +
                     std::to_string(kMaxCandidates));
  SearchChoice out;
  std::vector<Setting> options = {Setting{0, 0, 32}};
  options.insert(options.end(), candidates.begin(), candidates.end());
  const std::size_t n = options.size();
  out.base_metric = probe_metric(Plan::uniform(options[0]));
  const double worse = higher_is_better ? -1.0 : 1.0;  // damage = worse * (metric - teacher's)
  // Per component and option: its damage and its weight bits (cr_paper is linear in them).
  std::array<std::vector<double>, 4> damage, bits;
  double dense_bits = 0;
  out.probes = nlohmann::json::array();
  for (Component c : kComponents) {
    const int ci = static_cast<int>(c);
    const auto [rows, cols] = component_shape(c, hidden, 4 * hidden);
    damage[ci].assign(n, 0.0);
    bits[ci].resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      RatioReport r;
      add_matrix_bits(r, rows, cols, options[k]);
      bits[ci][k] = layers * r.paper_bits;
      if (k == 0) {
        dense_bits += layers * r.dense_bits;
        continue;
      }
      Plan p = Plan::uniform(options[0]);
      p[c] = options[k];
      damage[ci][k] = worse * (probe_metric(p) - out.base_metric);
      out.probes.push_back(
          {{"component", component_key(c)}, {"setting", options[k].to_string()}, {"drop", damage[ci][k]}});
    }
  }
  const auto cr_of = [&](const std::array<std::size_t, 4>& k) {
    double used = 0;
    for (int ci = 0; ci < 4; ++ci) used += bits[ci][k[ci]];
    return 100.0 * (1.0 - used / dense_bits);
  };
  constexpr double kEps = 1e-9;  // ratios and damages equal up to rounding
  const double floor = target_ratio - kEps;
  out.closest_cr_paper = 101.0;
  double most = 0;
  for_each_plan(n, [&](const auto& k) {
    const double cr = cr_of(k);
    most = std::max(most, cr);
    if (cr >= floor) out.closest_cr_paper = std::min(out.closest_cr_paper, cr);
  });
  if (out.closest_cr_paper > 100.0)
    throw UsageError("search: target_ratio " + std::to_string(target_ratio) +
                     " cannot be reached with the candidates (at most " + std::to_string(most) + ")");
  const double ceiling = out.closest_cr_paper + ratio_tolerance + kEps;
  std::array<std::size_t, 4> chosen{};
  double chosen_damage = 0, chosen_cr = 0;
  bool found = false;
  for_each_plan(n, [&](const auto& k) {
    const double cr = cr_of(k);
    if (cr < floor || cr > ceiling) return;
    const double d = damage[0][k[0]] + damage[1][k[1]] + damage[2][k[2]] + damage[3][k[3]];
    if (!found || d < chosen_damage - kEps || (d <= chosen_damage + kEps && cr < chosen_cr - kEps)) {
      found = true;
      chosen = k;
      chosen_damage = d;
      chosen_cr = cr;
    }
  });
  for (int ci = 0; ci < 4; ++ci) out.plan.settings[ci] = options[chosen[ci]];
  out.cr_paper = compression_ratio(layers, hidden, 4 * hidden, out.plan).cr_paper();
  out.predicted_metric = out.base_metric + worse * chosen_damage;
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
  const SearchChoice choice = search_plan(src.config.n_layer, src.config.n_embd, o.target_ratio, o.ratio_tolerance,
                                          candidates, !gpt, probe_metric);
  log::info("search: chose {} (cr_paper {:.2f} for target {:.2f}, closest reachable {:.2f}; predicted probe {} {:.4f}, "
            "teacher {:.4f})",
            choice.plan.to_string(), choice.cr_paper, o.target_ratio, choice.closest_cr_paper, metric,
            choice.predicted_metric, choice.base_metric);
  const nlohmann::json probe_data = probe->data_summary();
  co.plan = choice.plan.to_string();
  nlohmann::json r = run_compress(co, rundir);
  // The prediction for the evaluation split: the teacher's metric there, changed by the predicted damage.
  const std::string m = metric;
  const double predicted = r["teacher_" + m].get<double>() + (choice.predicted_metric - choice.base_metric);
  r["search"] = {{"target_ratio", o.target_ratio},
                 {"achieved_cr_paper", r["cr_paper"]},
                 {"closest_reachable_cr_paper", choice.closest_cr_paper},
                 {"ratio_tolerance", o.ratio_tolerance},
                 {"metric", m},
                 {"probe_examples", probe_data.value(gpt ? "val_windows" : "test_examples", nlohmann::json(0))},
                 {"probe_teacher_" + m, choice.base_metric},
                 {"predicted_probe_" + m, choice.predicted_metric},
                 {"predicted_" + m, predicted},
                 {"real_" + m, r[m]},
                 {"probes", choice.probes}};
  return r;
}

}  // namespace core::nxm
