// Racing an enumerating plan against its counting-tail alternative on a sample of the roots (issue 22).
// The plan cost model's mean field underprices enumerations on skewed graphs, most where the chosen plan
// enumerates its last levels and another order would count them in closed form (Plan::pairs, Plan::iep):
// K_{3,3} plus an edge on as-22july06 took 4.0 s enumerated and 0.97 s with ordered pairs, priced
// 1.6e9 against 2.3e9. Where the chosen plain plan is predicted dear enough, it and the plan with the
// longest counting tail (Formula::always) count the same 1/share of the root tasks (every share-th
// task of the work-balanced split: a hub's pieces are sampled like the rest) on one thread: the
// challenger first, then the incumbent, stopped once it has lost (ExecOptions::deadline); a second
// round where the first is close. The share is 1/kRaceShare, or where that sample is short, a larger
// one (up to 1/32) expected to take 20 ms: at 1/256, q095's and q108's samples on as-22july06 took
// 1-4 ms of tasks and misjudged their pairs, 1.3-1.5x faster in full. The challenger wins on its best time below 0.85 of the
// incumbent's, the times of the sampled tasks without the calls' set-up. A decomposition whose tables are cheap
// (race_candidates) is raced the other way round: the incumbent first, the decomposition's sample (its tables
// whole, its cut and quotients over the share) stopped once it has lost; so is a pattern's twin-apex form
// (apex.hpp), which the mean field's plan prices lose to by 10-60x on these graphs (q095, a triangle and a vertex
// joined to two twins: 2e8 units for 6.9 s enumerated on wiki-Vote, 1.7 s through the twins, priced 2.5e9). A
// single apex is not raced: a hub's neighbourhood is one task, which a sample cannot stop or split (q108 on
// email-Enron: its sample won 2.5x, its count lost 1.2x). A decomposition filling a table by its rooted plan is
// raced as the incumbent where its other tables are degrees or triangles: its samples fill that table over the share
// (ExecOptions::sampled_tables), against the cheapest cut whose tables are all such passes (s014 of the 7-vertex
// sample on as-22july06: 20.7 s by its edge's rooted plan, 3.6 s by the cut counting a vertex in it). An enumeration
// races its edge-and-vertex cut (decompose.hpp) wherever it is raced (s023: 1.4e9 units for ~1000 CPU s on
// wiki-Vote, the cut 5 s). A pairs plan, the incumbent or the counting tail, is raced with its pairs from tables
// (Plan::tabled_pairs) where they apply. Of several
// winners the one whose sample projects the least time for all roots is taken. Timed, so under MPI every rank takes
// rank 0's verdict.
#pragma once
#include <optional>

#include <nlohmann/json.hpp>

#include "graph/decompose.hpp"

namespace core::graph {

constexpr double kRaceWorthCost = 3e7;  // predicted cost units (~0.03-0.15 s) from which a race pays off
constexpr int kRaceShare = 256;
// From here a decomposition is raced too: each of its passes runs up to the incumbent's sample time, so racing one
// that loses costs several samples (q062 on as-22july06: 0.14 s of a 3.6 s count).
constexpr double kRaceDecompositionWorth = 10;  // x the race's worth_cost
// From here a decomposition with a rooted plan's table is raced (1.5e10 units, ~1-30 s): below it the samples
// misjudged about one race in three, by up to 2.6x (q069 and q070 on as-22july06 and wiki-Vote, 0.1-2.5 s counts
// whose 0.2 s of races took cuts 1.5-2.6x slower in full), where s013 and s014 win 5-13x.
constexpr double kRaceRootedPlanWorth = 500;  // x the race's worth_cost

// A sample stopped by its limit took at least the limit: it is reported as just over it, so that it loses every
// comparison against the threshold the limit was set from.
constexpr double kStoppedOverLimit = 1 + 1e-6;

// Seconds of the root tasks of cp's sample (1/share of them, a decomposition's tables whole) on one thread: the
// call's time less setup_s, its set-up. With limit_s, no task starts once the tasks have had limit_s; a sample so
// stopped is reported as kStoppedOverLimit x limit_s where it measured less.
double sample_task_seconds(const Graph& g, const CountPlan& cp, const LowerDegrees* lower, int share, double setup_s,
                           double limit_s = 0);

// What a challenger counts by: "decomposition", "complete split", "apex", "twin apexes", "inclusion-exclusion",
// "tabled pairs" or "pairs".
const char* race_formula(const CountPlan& challenger);

struct PlanRace {
  CountPlan challenger;         // race_candidates(...)[candidate]
  int candidate = 0;
  double incumbent_s = 0;       // best sampled task seconds of cp.plan (about the limit where stopped)
  double challenger_s = 0;      // of challenger
  bool challenger_won = false;
  int share = kRaceShare;       // the sample: 1/share of the root tasks
  nlohmann::json to_json() const;
};

// The alternatives raced against cp (p's plain plan): the plan with Formula::always where it ends in a counting
// tail and differs, p's twin-apex form where it has one, its complete split (complete_split.hpp) where it is one
// and stats know their graph (against a decomposition, that alone), and where cp is predicted above
// kRaceDecompositionWorth x worth_cost, the decomposition
// Formula::always takes where its tables are passes over the vertices or none, else the cheapest cut whose are (a
// sample fills tables whole: a 4-cycle with a vertex on three of its vertices and a pendant on the fourth, q043 on
// wiki-Vote, 44 s enumerated, 4.5 s by its cut counting the sixth vertex). Against a decomposition with a rooted
// plan's table (and degrees or triangles otherwise) predicted above kRaceRootedPlanWorth x worth_cost, the
// cheapest cut whose tables are degrees, triangles or none. The same on every rank.
std::vector<CountPlan> race_candidates(const Pattern& p, const CountPlan& cp, const GraphStats& stats,
                                       double worth_cost = kRaceWorthCost);

// The race for cp (chosen by cost for p on g with `stats`; a plain enumerating plan predicted above worth_cost,
// edge-induced, or such a decomposition whose tables are passes over the vertices or none, against p's complete
// split: the mean field prices a cut's merges per clique it underestimates, q109's 2.2 CPU s on wiki-Vote at 1.3e8
// units and its triangle split's 0.44 s at 1.6e9), or one with a rooted plan's table (race_candidates): each
// candidate raced in turn, the capped ones (a decomposition, twins) first, as their whole samples of cp serve the
// later races, each stopped once it has lost to cp or to the best earlier winner; the winner projecting the least
// time (else the first race run); none when there is nothing to race.
std::optional<PlanRace> race_counting_tail(const Graph& g, const Pattern& p, const CountPlan& cp, const GraphStats& stats,
                                           const LowerDegrees* lower, double worth_cost = kRaceWorthCost);

}  // namespace core::graph
