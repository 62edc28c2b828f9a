// `nxm-compress search --target-ratio R` (NxMiFormer's heuristic search): per-component sensitivity
// probes, then a deterministic greedy choice of (sparsity, bits) per component that meets the target
// compression ratio cr_paper >= R, then compression with the chosen plan. The probe metric is the
// task's: accuracy on the probe examples (BERT classifier) or the next-token loss on the probe windows
// (GPT language model); its damage is the accuracy drop or the loss increase against the teacher.
//  - Probe (c, s): the teacher with only component c compressed one-shot to setting s (Q(Pi(W)), no
//    training), its metric; damage(c, s) = how much worse that is than the teacher's.
//  - Greedy: start from dense fp32; while cr_paper < R, take the move (component c: current setting ->
//    a candidate with fewer bits per weight) with the smallest (damage increase) / (cr_paper gain);
//    ties go to the earlier component (qkv, ao, ffn1, ffn2), then the earlier candidate.
//  - Predicted metric: the teacher's, worsened by the sum of the chosen settings' damages (damages
//    taken as additive across components); the run reports it next to the real one after compression.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>

#include <string>
#include <vector>

#include "nxm/pipeline.hpp"
#include "nxm/plan.hpp"

namespace core::nxm {

struct SearchOptions {
  double target_ratio = 87.5;
  std::vector<std::string> candidates = {"dense:16", "dense:8", "2:4:16", "2:4:8", "dense:4", "2:4:4", "1:4:8", "1:4:4"};
  std::string probe;  // BERT: examples for the probes; GPT: a text whose validation tail is probed; empty: see visit
  int probe_examples = 300;
  CompressOptions compress;
  template <class V>
  void visit(V& v) {
    v("target_ratio", target_ratio, "cr_paper (percent) the plan must reach", core::in_range(0.0, 99.9));
    v("candidates", candidates, "settings a component may take (S:B)");
    v("probe", probe, "BERT: TSV (e.g. SST-2 dev.tsv) or synthetic:N for the probes, empty: training examples; "
                      "GPT: a text whose last task.val_fraction is probed, empty: the task's validation split");
    v("probe_examples", probe_examples, "examples (GPT: validation windows) per probe", core::positive<int>());
    v.section("compress", compress);
  }
};

// Probes and greedy choice only (no training): the chosen plan, the probe metric of the teacher and
// the one predicted for the plan, and the probe table. `probe_metric(plan)` measures one plan's metric;
// higher_is_better: accuracy (damage = teacher - plan), otherwise a loss (damage = plan - teacher).
struct SearchChoice {
  Plan plan;
  double base_metric = 0, predicted_metric = 0;
  nlohmann::json probes, steps;
};
SearchChoice greedy_search(int layers, std::int64_t hidden, double target_ratio, const std::vector<Setting>& candidates,
                           bool higher_is_better, const std::function<double(const Plan&)>& probe_metric);

nlohmann::json run_search(const SearchOptions& o, RunDir& rundir);

}  // namespace core::nxm
