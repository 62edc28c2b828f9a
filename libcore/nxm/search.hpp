// `nxm-compress search --target-ratio R` (NxMiFormer's heuristic search): per-component sensitivity
// probes, then the plan of (sparsity, bits) per component with the least predicted damage among those whose
// compression ratio lands on the target, then compression with the chosen plan. The probe metric is the
// task's: accuracy on the probe examples (BERT classifier) or the next-token loss on the probe windows
// (GPT language model); its damage is the accuracy drop or the loss increase against the teacher.
//  - Probe (c, s): the teacher with only component c compressed one-shot to setting s (Q(Pi(W)), no
//    training), its metric; damage(c, s) = how much worse that is than the teacher's.
//  - Predicted damage of a plan: the sum of its settings' damages (taken as additive across components;
//    dense fp32 has none).
//  - Landing: R* = the smallest cr_paper >= R that any plan of the candidates (and dense fp32) reaches; the
//    plan is the one with the least predicted damage among all plans with R <= cr_paper <= R* + tolerance
//    (ties: the smaller cr_paper, then the earlier plan in the order qkv, ao, ffn1, ffn2 x dense fp32 and the
//    candidates as listed). A plan compressing more than that is never chosen, even where its probes predict
//    no more damage (probe differences of a few examples are noise): a larger R asks for more compression.
//    The plans are enumerated (4 components share a setting across layers: (candidates + 1)^4 plans, 6561
//    for the defaults), so the choice is exact for the additive damage model. The papers' greedy (take the
//    move with the least damage per ratio gained until cr_paper >= R) cannot land: on SST-2 its last move
//    could only take 4 more bits per weight off a third of the weights, 85.4 % -> 89.6 % for R = 87.5 %, while
//    other plans reach 87.5 % exactly.
//  - Predicted metric: the teacher's, worsened by the plan's predicted damage; the run reports it next to
//    the real one after compression.
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
  double ratio_tolerance = 0.5;  // percentage points above the closest reachable ratio
  std::vector<std::string> candidates = {"dense:16", "dense:8", "2:4:16", "2:4:8", "dense:4", "2:4:4", "1:4:8", "1:4:4"};
  std::string probe;  // BERT: examples for the probes; GPT: a text whose validation tail is probed; empty: see visit
  int probe_examples = 300;
  CompressOptions compress;
  template <class V>
  void visit(V& v) {
    v("target_ratio", target_ratio,
      "cr_paper (percent) the plan must reach; it lands at most ratio_tolerance above the closest ratio >= "
      "target_ratio that the candidates reach",
      core::in_range(0.0, 99.9));
    v("ratio_tolerance", ratio_tolerance,
      "percentage points of cr_paper the plan may lie above the closest reachable ratio >= target_ratio (0: "
      "exactly the closest); within them the least predicted damage wins",
      core::in_range(0.0, 100.0));
    v("candidates", candidates, "settings a component may take (S:B)");
    v("probe", probe, "BERT: TSV (e.g. SST-2 dev.tsv) or synthetic:N for the probes, empty: training examples; "
                      "GPT: a text whose last task.val_fraction is probed, empty: the task's validation split");
    v("probe_examples", probe_examples, "examples (GPT: validation windows) per probe", core::positive<int>());
    v.section("compress", compress);
  }
};

// Probes and plan choice only (no training): the chosen plan, its cr_paper and the closest reachable ratio
// R*, the probe metric of the teacher and the one predicted for the plan, and the probe table.
// `probe_metric(plan)` measures one plan's metric; higher_is_better: accuracy (damage = teacher - plan),
// otherwise a loss (damage = plan - teacher). UsageError when no plan reaches target_ratio.
struct SearchChoice {
  Plan plan;
  double cr_paper = 0, closest_cr_paper = 0;
  double base_metric = 0, predicted_metric = 0;
  nlohmann::json probes;
};
SearchChoice search_plan(int layers, std::int64_t hidden, double target_ratio, double ratio_tolerance,
                         const std::vector<Setting>& candidates, bool higher_is_better,
                         const std::function<double(const Plan&)>& probe_metric);

nlohmann::json run_search(const SearchOptions& o, RunDir& rundir);

}  // namespace core::nxm
