#include "graph/plan_race.hpp"

#include <algorithm>
#include <limits>

#include "common/timer.hpp"
#include "graph/matcher.hpp"

namespace core::graph {

namespace {

// The challenger must win clearly: sampled times of one plan vary by ~10% between runs.
constexpr double kRaceMargin = 0.85;
constexpr double kClearWin = 0.5;  // a first round this lopsided decides

// Seconds for plan's sample of the roots; with a limit, no task starts after it (then about the limit).
double sampled_seconds(const Graph& g, const Plan& plan, const LowerDegrees* lower, double limit_s = 0) {
  ExecOptions opt;
  opt.threads = 1;
  opt.world_size = kRaceShare;
  opt.lower = lower;
  opt.time_limit_s = limit_s;
  Timer t;
  count_matches(g, plan, opt);
  return t.seconds();
}

}  // namespace

nlohmann::json PlanRace::to_json() const {
  return {{"challenger", challenger.hash()},
          {"challenger_formula", challenger.iep ? "inclusion-exclusion" : "pairs"},
          {"incumbent_sample_s", incumbent_s},
          {"challenger_sample_s", challenger_s},
          {"sample_share", 1.0 / kRaceShare},
          {"challenger_won", challenger_won}};
}

std::optional<PlanRace> race_counting_tail(const Graph& g, const Pattern& p, const CountPlan& cp, const GraphStats& stats,
                                           const LowerDegrees* lower, double worth_cost) {
  const Plan& incumbent = cp.plan;
  if (cp.decomposition || cp.apex || cp.complete_split || incumbent.induced != Induced::edge ||
      cp.predicted_cost < worth_cost)
    return std::nullopt;
  PlanRace race;
  race.challenger = choose_plan(p, Induced::edge, stats, Formula::always);
  if (!race.challenger.iep && race.challenger.pairs == PairMode::none) return std::nullopt;
  if (race.challenger.hash() == incumbent.hash()) return std::nullopt;
  race.incumbent_s = race.challenger_s = std::numeric_limits<double>::infinity();
  // The challenger first; the incumbent stops once it has lost. A second round only where the first is close.
  for (int round = 0; round < 2; ++round) {
    race.challenger_s = std::min(race.challenger_s, sampled_seconds(g, race.challenger, lower));
    const double limit = race.challenger_s / kRaceMargin;
    race.incumbent_s = std::min(race.incumbent_s, sampled_seconds(g, incumbent, lower, limit));
    if (race.incumbent_s >= limit ||
        std::min(race.incumbent_s, race.challenger_s) < kClearWin * std::max(race.incumbent_s, race.challenger_s))
      break;
  }
  race.challenger_won = race.challenger_s <= kRaceMargin * race.incumbent_s;
  return race;
}

}  // namespace core::graph
