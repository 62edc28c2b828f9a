// `nxm-compress search --target-ratio R` (NxMiFormer's heuristic search): per-component sensitivity
// probes, then a deterministic greedy choice of (sparsity, bits) per component that meets the target
// compression ratio cr_paper >= R, then compression with the chosen plan.
//  - Probe (c, s): the teacher with only component c compressed one-shot to setting s (Q(Pi(W)), no
//    training), its accuracy on the probe examples; drop(c, s) = teacher accuracy - that accuracy.
//  - Greedy: start from dense fp32; while cr_paper < R, take the move (component c: current setting ->
//    a candidate with fewer bits per weight) with the smallest (drop increase) / (cr_paper gain);
//    ties go to the earlier component (qkv, ao, ffn1, ffn2), then the earlier candidate.
//  - Predicted accuracy: teacher accuracy - sum of the chosen settings' drops.
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
  std::string probe;  // examples for the probes; empty: the first probe_examples training examples
  int probe_examples = 300;
  CompressOptions compress;
  template <class V>
  void visit(V& v) {
    v("target_ratio", target_ratio, "cr_paper (percent) the plan must reach", core::in_range(0.0, 99.9));
    v("candidates", candidates, "settings a component may take (S:B)");
    v("probe", probe, "TSV (e.g. SST-2 dev.tsv) or synthetic:N for the probes; empty: training examples");
    v("probe_examples", probe_examples, "examples per probe", core::positive<int>());
    v.section("compress", compress);
  }
};

// Probes and greedy choice only (no training): the chosen plan, its predicted accuracy and the probe
// table. `probe_accuracy(plan)` measures one plan's accuracy.
struct SearchChoice {
  Plan plan;
  double base_accuracy = 0, predicted_accuracy = 0;
  nlohmann::json probes, steps;
};
SearchChoice greedy_search(int layers, std::int64_t hidden, double target_ratio, const std::vector<Setting>& candidates,
                           const std::function<double(const Plan&)>& probe_accuracy);

nlohmann::json run_search(const SearchOptions& o, RunDir& rundir);

}  // namespace core::nxm
