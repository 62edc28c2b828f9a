#include "graph/plan_race.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "common/timer.hpp"
#include "graph/matcher.hpp"
#include "graph/triangle_tables.hpp"

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

// Seconds for cp's sample, 1/share of the root tasks (a decomposition's tables whole); with a limit, no task starts
// after it, and *stopped tells whether the call ended past it.
double sampled_seconds(const Graph& g, const CountPlan& cp, const LowerDegrees* lower, int share, double limit_s = 0,
                       bool* stopped = nullptr) {
  ExecOptions opt;
  opt.threads = 1;
  opt.world_size = share;
  opt.lower = lower;
  opt.sampled_tables = true;
  using Clock = std::chrono::steady_clock;
  if (limit_s > 0)
    opt.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
  Timer t;
  embedding_share(g, cp, opt);
  if (stopped) *stopped = limit_s > 0 && Clock::now() >= opt.deadline;
  return t.seconds();
}

// The seconds of sampled_seconds that are set-up, not tasks: the same call with no time for a task (the best of
// two). The work-balanced split for 1/256 shares is fine-grained (35,609 pieces for q095 on as-22july06): 3 ms
// of a 7 ms sample, which pulled the sampled ratios of q095 and q108 to 0.9 where their full runs differ
// 1.3-1.5x, and the enumeration stayed.
double setup_seconds(const Graph& g, const CountPlan& plan, const LowerDegrees* lower, int share) {
  return std::min(sampled_seconds(g, plan, lower, share, 1e-9), sampled_seconds(g, plan, lower, share, 1e-9));
}

}  // namespace

double sample_task_seconds(const Graph& g, const CountPlan& cp, const LowerDegrees* lower, int share, double setup_s,
                           double limit_s) {
  // The deadline is set after the set-up. Before, it counted the set-up too, so a stopped sample measured about
  // the limit less the set-up and passed for a finished one: r08 on as-22july06 (a 7-vertex pattern), whose pairs
  // took 0.39 s of tasks at 1/256 against 0.028 s for inclusion-exclusion, was stopped near 0.033 s, reported
  // 0.031 s and kept pairs: 46 s against 4.3 s.
  bool stopped = false;
  const double call_s = sampled_seconds(g, cp, lower, share, limit_s > 0 ? setup_s + limit_s : 0, &stopped);
  const double tasks_s = std::max(0.0, call_s - setup_s);
  return stopped ? std::max(tasks_s, limit_s * kStoppedOverLimit) : tasks_s;
}

namespace {

// A decomposition is raced the other way round: the incumbent first, the decomposition stopped once it has lost
// (its passes under one deadline: its tables are filled whole in every sample, so a losing sample could take far
// longer than the incumbent's). The sample judged for its length is the one taken first.
bool capped_challenger(const CountPlan& challenger) { return challenger.decomposition || challenger.apex; }
bool capped(const PlanRace& race) { return capped_challenger(race.challenger); }
double first_sample(const PlanRace& race) { return capped(race) ? race.incumbent_s : race.challenger_s; }

// Whether the challenger's sample, taken, projects at least beat_s for all roots: it has lost to an earlier winner.
bool beaten(const PlanRace& race, double beat_s) {
  return std::isfinite(race.challenger_s) && race.challenger_s * race.share >= beat_s;
}

// The limit of a challenger's sample at race.share that a challenger projecting beat_s for all roots reaches
// (infinite where beat_s is).
double beat_limit(const PlanRace& race, double beat_s) { return std::max(beat_s / race.share, kMinSampleSeconds); }

// Whether the first sample is too short to judge and a larger share is left to sample.
bool sample_again(const PlanRace& race) {
  return first_sample(race) < kShortSampleSeconds && race.share > kRaceShareLargest;
}

// The incumbent's samples, shared by the races of one pattern: per share, its set-up, its best finished sample and
// the largest limit that stopped it. A later race takes a sample from here where it tells the outcome: q095 on
// as-22july06 sampled its enumeration at 1/256 and 1/32 again for the twins' race after the pairs' race.
class IncumbentSamples {
 public:
  IncumbentSamples(const Graph& g, const CountPlan& cp, const LowerDegrees* lower) : g_(g), cp_(cp), lower_(lower) {}

  // The incumbent's task seconds at share, stopped at limit (0: none) as sample_task_seconds; fresh: sampled again
  // where it is known (a second round, against timer noise).
  double tasks(int share, double limit = 0, bool fresh = false) {
    Known& k = known_[share];
    if (!fresh && k.finished < kUnknown) return k.finished;  // at or past the limit, it would have been stopped
    if (!fresh && limit > 0 && k.stopped_at >= limit) return limit * kStoppedOverLimit;
    if (k.setup < 0) k.setup = setup_seconds(g_, cp_, lower_, share);
    const double s = sample_task_seconds(g_, cp_, lower_, share, k.setup, limit);
    if (limit > 0 && s >= limit) k.stopped_at = std::max(k.stopped_at, limit);
    else k.finished = std::min(k.finished, s);
    return s;
  }

 private:
  static constexpr double kUnknown = std::numeric_limits<double>::infinity();
  struct Known {
    double setup = -1;
    double finished = kUnknown;
    double stopped_at = 0;
  };
  const Graph& g_;
  const CountPlan& cp_;
  const LowerDegrees* lower_;
  std::map<int, Known> known_;
};

// The capped race of a decomposition at race.share (one round), its sample stopped where it has lost to the
// incumbent or to an earlier winner projecting beat_s seconds for all roots.
void run_capped(const Graph& g, IncumbentSamples& incumbent, const LowerDegrees* lower, double beat_s, PlanRace& race) {
  race.incumbent_s = race.challenger_s = std::numeric_limits<double>::infinity();
  race.incumbent_s = incumbent.tasks(race.share);
  if (sample_again(race)) return;
  const double limit = std::min(std::max(race.incumbent_s * kRaceMargin, kMinSampleSeconds), beat_limit(race, beat_s));
  const double setup = setup_seconds(g, race.challenger, lower, race.share);
  race.challenger_s = sample_task_seconds(g, race.challenger, lower, race.share, setup, limit);
}

// The rounds of the race at race.share: the challenger first, stopped once it has lost to an earlier winner
// projecting beat_s; the incumbent stops once it has lost. A second round only where the first is close and long
// enough not to be sampled again; none for the incumbent where the challenger's sample is to be taken again or
// has lost already.
void run_rounds(const Graph& g, IncumbentSamples& incumbent, const LowerDegrees* lower, double beat_s, PlanRace& race) {
  race.incumbent_s = race.challenger_s = std::numeric_limits<double>::infinity();
  const double challenger_setup = setup_seconds(g, race.challenger, lower, race.share);
  const double beat = beat_limit(race, beat_s);
  race.challenger_s =
      sample_task_seconds(g, race.challenger, lower, race.share, challenger_setup, std::isfinite(beat) ? beat : 0);
  if (sample_again(race) || beaten(race, beat_s)) return;
  for (int round = 0;; ++round) {
    const double limit = std::max(race.challenger_s / kRaceMargin, kMinSampleSeconds);
    race.incumbent_s = std::min(race.incumbent_s, incumbent.tasks(race.share, limit, round == 1));
    if (round == 1 || race.incumbent_s >= limit || race.share != kRaceShare ||
        std::min(race.incumbent_s, race.challenger_s) < kClearWin * std::max(race.incumbent_s, race.challenger_s))
      break;
    race.challenger_s = std::min(race.challenger_s, sample_task_seconds(g, race.challenger, lower, race.share, challenger_setup));
  }
}

// The race of one challenger against the incumbent: its share grown while the challenger's sample is short. beat_s:
// the seconds for all roots the best earlier winner projects (infinite where none won), at which the challenger's
// sample stops.
PlanRace race_one(const Graph& g, IncumbentSamples& incumbent, CountPlan challenger, int candidate,
                  const LowerDegrees* lower, double beat_s) {
  PlanRace race;
  race.challenger = std::move(challenger);
  race.candidate = candidate;
  for (race.share = kRaceShare;;) {
    if (capped(race)) run_capped(g, incumbent, lower, beat_s, race);
    else run_rounds(g, incumbent, lower, beat_s, race);
    if (beaten(race, beat_s) || !sample_again(race)) break;
    int share = race.share;
    while (share / 2 >= kRaceShareLargest && first_sample(race) * race.share / share < kShortSampleSeconds) share /= 2;
    race.share = share;
  }
  // A sample of under kMinSampleSeconds (a job of under ~0.25 s of CPU) is timer noise: the cost model's choice stays.
  race.challenger_won = !beaten(race, beat_s) && race.challenger_s <= kRaceMargin * race.incumbent_s &&
                        race.incumbent_s >= kMinSampleSeconds;
  return race;
}

// Whether every table of d is filled in one pass over the vertices (degrees) or not at all (counted in the cut):
// a sample fills the tables whole, which for any other table would cost more than the sampled roots.
bool linear_table(const Decomposition::Component& c) {
  return c.common || (c.vertices.size() == 1 && c.attach.size() == 1);
}
bool tables_linear(const Decomposition& d) {
  return !d.own_pass() && std::all_of(d.components.begin(), d.components.end(), linear_table);
}

// Whether component c of d is counted in the cut or tabled by degrees or triangles: passes a sample takes whole, in
// its short set-up.
bool pass_table(const Decomposition& d, const Decomposition::Component& c) {
  return linear_table(c) || is_rooted_triangle(d.tables[c.table], static_cast<int>(c.attach.size()));
}

// Whether every table of d is such a pass, none a rooted plan's.
bool tables_passes(const Decomposition& d) {
  return !d.own_pass() && std::all_of(d.components.begin(), d.components.end(),
                                      [&](const auto& c) { return pass_table(d, c); });
}

// Whether d fills a table by its rooted plan (rooted_plan_table) and the others by passes: a sample then fills its
// rooted-plan tables over its share of the roots (ExecOptions::sampled_tables), so that it is raced like an
// enumeration. The mean field prices rooted plans 10-20x off either way: s014 of the 7-vertex sample on as-22july06
// (its edge 1-2 with a rooted plan of the four vertices 0, 3, 4, 5) took 20.7 s priced 2e11, the cut 1-2-3-4-5
// counting vertex 0 and the triangles at 1-2 3.6 s priced 5.4e11.
bool rooted_plan_tables(const Decomposition& d) {
  const auto rooted = [&](const auto& c) { return rooted_plan_table(d, c); };
  const auto rooted_or_pass = [&](const auto& c) { return rooted(c) || pass_table(d, c); };
  return !d.own_pass() && std::any_of(d.components.begin(), d.components.end(), rooted) &&
         std::all_of(d.components.begin(), d.components.end(), rooted_or_pass);
}

// Whether cp is a decomposition with a rooted plan's table raced at worth_cost (rooted_plan_tables).
bool raced_rooted_plans(const CountPlan& cp, double worth_cost) {
  return cp.decomposition && rooted_plan_tables(*cp.decomposition) &&
         cp.predicted_cost >= kRaceRootedPlanWorth * worth_cost;
}

// `plan` counting its pairs from tables (Plan::tabled_pairs; it must apply, and then the root tables, marks and
// counted set do not), its predicted cost kept.
CountPlan with_tabled_pairs(const Plan& plan) {
  CountPlan out;
  out.plan = plan;
  out.plan.tabled_pairs = true;
  out.predicted_cost = plan.predicted_cost;
  return out;
}

}  // namespace

const char* race_formula(const CountPlan& challenger) {
  return challenger.decomposition            ? "decomposition"
         : challenger.complete_split         ? "complete split"
         : challenger.apex && challenger.apex->twin >= 0 ? "twin apexes"
         : challenger.apex                   ? "apex"
         : challenger.plan.iep               ? "inclusion-exclusion"
         : challenger.plan.tabled_pairs      ? "tabled pairs"
                                             : "pairs";
}

nlohmann::json PlanRace::to_json() const {
  return {{"challenger", challenger.plan.hash()},
          {"challenger_formula", race_formula(challenger)},
          {"incumbent_sample_s", incumbent_s},
          {"challenger_sample_s", challenger_s},
          {"sample_share", 1.0 / share},
          {"challenger_won", challenger_won}};
}

std::vector<CountPlan> race_candidates(const Pattern& p, const CountPlan& cp, const GraphStats& stats,
                                       double worth_cost) {
  std::vector<CountPlan> out;
  if (!cp.decomposition) {
    CountPlan tail;
    tail.plan = choose_plan(p, Induced::edge, stats, Formula::always);
    tail.predicted_cost = tail.plan.predicted_cost;
    // The incumbent's and the tail's pairs from tables (Plan::tabled_pairs), which the cost model does not price:
    // their walks visit the neighbours of common neighbours, hubs on a hub graph, where the mean field sees mean
    // degrees (q081 on as-22july06: 1.0 s merged, 2.5-3.8 s tabled), and on graphs without hubs they save the
    // merges of the sets with every x (the prism on astro-ph: 15.6 s merged, 6.7 s tabled).
    const bool new_tail = tail.plan.hash() != cp.plan.hash();
    std::optional<CountPlan> tabled_tail;
    if (new_tail && tabled_pairs_applies(tail.plan)) tabled_tail = with_tabled_pairs(tail.plan);
    if ((tail.plan.iep || tail.plan.pairs != PairMode::none) && new_tail) out.push_back(std::move(tail));
    if (tabled_pairs_applies(cp.plan)) out.push_back(with_tabled_pairs(cp.plan));
    if (tabled_tail) out.push_back(std::move(*tabled_tail));
    for (CountPlan& cone : cone_count_plans(p, stats))
      if (cone.apex->twin >= 0) out.push_back(std::move(cone));
  }
  // A complete split is priced by its scatter's steps exactly, the enumeration by the mean field: q105 (an edge
  // joined to a 4-path) on wiki-Vote, 5.3e8 units for 7.1 CPU s enumerated, the split 1.3 s priced 2.5e9.
  if (const auto split = stats.graph ? as_complete_split(p) : std::nullopt) {
    CountPlan whole;
    whole.plan = cp.plan;
    whole.complete_split = split;
    whole.predicted_cost = complete_split_cost(*stats.graph, stats, *split, Formula::by_cost);
    out.push_back(std::move(whole));
  }
  // A decomposition with a rooted plan's table against the cheapest cut whose tables are passes or none.
  if (raced_rooted_plans(cp, worth_cost)) {
    std::optional<CountPlan> passes;
    for (CountPlan& d : decompositions(p, stats))
      if (tables_passes(*d.decomposition) && (!passes || d.predicted_cost < passes->predicted_cost))
        passes = std::move(d);
    if (passes) out.push_back(std::move(*passes));
  }
  // An edge-and-vertex cut is priced by its scatters' steps and the counted 4-cliques, the enumeration by the mean
  // field: s023 of the 7-vertex sample on wiki-Vote, 1.4e9 units for over 150 s enumerated, the cut 5 s priced 1.2e10;
  // on as-22july06 1.2e8 units for 4.0 s, the cut 0.22 s priced 3.5e8. Raced from the race's worth on.
  if (!cp.decomposition)
    if (auto d = edge_vertex_decomposition(p, stats)) out.push_back(std::move(*d));
  if (cp.decomposition || cp.predicted_cost < kRaceDecompositionWorth * worth_cost) return out;
  CountPlan cut = choose_count_plan(p, Induced::edge, stats, Formula::always);
  if (!cut.decomposition) return out;
  // Where the cheapest cut's tables are not linear passes, the cheapest cut whose are is raced: q043 on wiki-Vote
  // (`0-1,1-2,1-3,2-4,2-5,3-4,3-5,4-5`), whose tip diamond table is a pass of joined pairs, was priced above its
  // enumeration and the cut with a counted vertex, which wins the race there (4.5 s against 44), was not raced.
  if (!tables_linear(*cut.decomposition)) {
    std::optional<CountPlan> linear;
    for (CountPlan& d : decompositions(p, stats, Formula::always))
      if (tables_linear(*d.decomposition) && (!linear || d.predicted_cost < linear->predicted_cost)) linear = std::move(d);
    if (!linear) return out;
    cut = std::move(*linear);
  }
  out.push_back(std::move(cut));
  return out;
}

std::optional<PlanRace> race_counting_tail(const Graph& g, const Pattern& p, const CountPlan& cp, const GraphStats& stats,
                                           const LowerDegrees* lower, double worth_cost) {
  if ((cp.decomposition && !tables_linear(*cp.decomposition) && !raced_rooted_plans(cp, worth_cost)) || cp.apex ||
      cp.complete_split || cp.plan.induced != Induced::edge || cp.predicted_cost < worth_cost)
    return std::nullopt;
  std::optional<PlanRace> best;
  const auto candidates = race_candidates(p, cp, stats, worth_cost);
  // The capped races first: they sample the incumbent whole, which the other races' capped samples then reuse.
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return capped_challenger(candidates[i]); });
  IncumbentSamples incumbent(g, cp, lower);
  const auto projected_s = [](const PlanRace& race) { return race.challenger_s * race.share; };
  for (const std::size_t i : order) {
    // A later sample stops where it has lost to the best winner so far: s023 of the 7-vertex sample on wiki-Vote,
    // whose edge-and-vertex cut won in 0.15 s, gave the next cut the incumbent's 2.9 s; q094 on as-22july06, whose
    // edge-and-vertex cut won projecting 0.44 s, then sampled its pairs plan and the enumeration at 1/32 (85 ms of
    // a 0.17 s count).
    const double beat_s = best && best->challenger_won ? projected_s(*best) : std::numeric_limits<double>::infinity();
    PlanRace race = race_one(g, incumbent, candidates[i], static_cast<int>(i), lower, beat_s);
    // Of the winners the one whose sample projects the least time for all roots (a stopped incumbent's time is
    // about its limit, so the ratios of two races do not compare); where none wins, the first race run is reported.
    if (!best || (race.challenger_won && !best->challenger_won) ||
        (race.challenger_won && projected_s(race) < projected_s(*best)))
      best = std::move(race);
  }
  return best;
}

}  // namespace core::graph
