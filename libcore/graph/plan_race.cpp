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
// Sampled task seconds below kShortSampleSeconds are a handful of tasks: the race runs again on a larger share
// (at most 1/kRaceShareLargest) expected to take that long; below kMinSampleSeconds the verdict is timer noise.
constexpr double kShortSampleSeconds = 0.02;
constexpr double kMinSampleSeconds = 1e-3;
constexpr int kRaceShareLargest = 32;

// Seconds for plan's sample, 1/share of the root tasks; with a limit, no task starts after it (then about the
// limit).
double sampled_seconds(const Graph& g, const Plan& plan, const LowerDegrees* lower, int share, double limit_s = 0) {
  ExecOptions opt;
  opt.threads = 1;
  opt.world_size = share;
  opt.lower = lower;
  opt.time_limit_s = limit_s;
  Timer t;
  count_matches(g, plan, opt);
  return t.seconds();
}

// The seconds of sampled_seconds that are set-up, not tasks: the same call with no time for a task (the best of
// two). The work-balanced split for 1/256 shares is fine-grained (35,609 pieces for q095 on as-22july06): 3 ms
// of a 7 ms sample, which pulled the sampled ratios of q095 and q108 to 0.9 where their full runs differ
// 1.3-1.5x, and the enumeration stayed.
double setup_seconds(const Graph& g, const Plan& plan, const LowerDegrees* lower, int share) {
  return std::min(sampled_seconds(g, plan, lower, share, 1e-9), sampled_seconds(g, plan, lower, share, 1e-9));
}

// Seconds of the sampled tasks alone (the limit applies to them).
double task_seconds(const Graph& g, const Plan& plan, const LowerDegrees* lower, int share, double setup_s,
                    double limit_s = 0) {
  return std::max(0.0, sampled_seconds(g, plan, lower, share, limit_s) - setup_s);
}

// Whether the challenger's sample is too short to judge and a larger share is left to sample.
bool sample_again(const PlanRace& race) {
  return race.challenger_s < kShortSampleSeconds && race.share > kRaceShareLargest;
}

// The rounds of the race at race.share: the challenger first; the incumbent stops once it has lost. A second
// round only where the first is close and long enough not to be sampled again; none for the incumbent where the
// challenger's sample is to be taken again.
void run_rounds(const Graph& g, const Plan& incumbent, const LowerDegrees* lower, PlanRace& race) {
  race.incumbent_s = race.challenger_s = std::numeric_limits<double>::infinity();
  const double challenger_setup = setup_seconds(g, race.challenger, lower, race.share);
  race.challenger_s = task_seconds(g, race.challenger, lower, race.share, challenger_setup);
  if (sample_again(race)) return;
  const double incumbent_setup = setup_seconds(g, incumbent, lower, race.share);
  for (int round = 0;; ++round) {
    const double limit = std::max(race.challenger_s / kRaceMargin, kMinSampleSeconds);
    race.incumbent_s = std::min(race.incumbent_s, task_seconds(g, incumbent, lower, race.share, incumbent_setup, limit));
    if (round == 1 || race.incumbent_s >= limit || race.share != kRaceShare ||
        std::min(race.incumbent_s, race.challenger_s) < kClearWin * std::max(race.incumbent_s, race.challenger_s))
      break;
    race.challenger_s = std::min(race.challenger_s, task_seconds(g, race.challenger, lower, race.share, challenger_setup));
  }
}

}  // namespace

nlohmann::json PlanRace::to_json() const {
  return {{"challenger", challenger.hash()},
          {"challenger_formula", challenger.iep ? "inclusion-exclusion" : "pairs"},
          {"incumbent_sample_s", incumbent_s},
          {"challenger_sample_s", challenger_s},
          {"sample_share", 1.0 / share},
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
  for (race.share = kRaceShare;;) {
    run_rounds(g, incumbent, lower, race);
    if (!sample_again(race)) break;
    int share = race.share;
    while (share / 2 >= kRaceShareLargest && race.challenger_s * race.share / share < kShortSampleSeconds) share /= 2;
    race.share = share;
  }
  // A sample of under kMinSampleSeconds (a job of under ~0.25 s of CPU) is timer noise: the cost model's choice stays.
  race.challenger_won = race.challenger_s <= kRaceMargin * race.incumbent_s && race.incumbent_s >= kMinSampleSeconds;
  return race;
}

}  // namespace core::graph
