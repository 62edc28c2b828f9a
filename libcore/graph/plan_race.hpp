// Racing an enumerating plan against its counting-tail alternative on a sample of the roots (issue 22).
// The plan cost model's mean field underprices enumerations on skewed graphs, most where the chosen plan
// enumerates its last levels and another order would count them in closed form (Plan::pairs, Plan::iep):
// K_{3,3} plus an edge on as-22july06 took 4.0 s enumerated and 0.97 s with ordered pairs, priced
// 1.6e9 against 2.3e9. Where the chosen plain plan is predicted dear enough, it and the plan with the
// longest counting tail (Formula::always) count the same 1/share of the root tasks (every share-th
// task of the work-balanced split: a hub's pieces are sampled like the rest) on one thread: the
// challenger first, then the incumbent, stopped once it has lost (ExecOptions::time_limit_s); a second
// round where the first is close. The share is 1/kRaceShare, or where that sample is short, a larger
// one (up to 1/32) expected to take 20 ms: at 1/256, q095's and q108's samples on as-22july06 took
// 1-4 ms of tasks and misjudged their pairs, 1.3-1.5x faster in full. The challenger wins on its best time below 0.85 of the
// incumbent's, the times of the sampled tasks without the calls' set-up. Timed, so under MPI every rank
// takes rank 0's verdict.
#pragma once
#include <optional>

#include <nlohmann/json.hpp>

#include "graph/decompose.hpp"

namespace core::graph {

constexpr double kRaceWorthCost = 3e7;  // predicted cost units (~0.03-0.15 s) from which a race pays off
constexpr int kRaceShare = 256;

struct PlanRace {
  Plan challenger;              // choose_plan with Formula::always
  double incumbent_s = 0;       // best sampled task seconds of cp.plan (about the limit where stopped)
  double challenger_s = 0;      // of challenger
  bool challenger_won = false;
  int share = kRaceShare;       // the sample: 1/share of the root tasks
  nlohmann::json to_json() const;
};

// The race for cp (chosen by cost for p on g with `stats`; a plain enumerating plan predicted above
// worth_cost, edge-induced, whose Formula::always plan differs), or none when there is nothing to race.
std::optional<PlanRace> race_counting_tail(const Graph& g, const Pattern& p, const CountPlan& cp, const GraphStats& stats,
                                           const LowerDegrees* lower, double worth_cost = kRaceWorthCost);

}  // namespace core::graph
