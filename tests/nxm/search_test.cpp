// The plan search on synthetic probe tables: it lands on the target ratio (the greedy it replaced overshot
// on SST-2's table: 89.58 % for 87.5 %), and its choice is the least-damage plan in the window, against a
// brute force over plans written out and measured with compression_ratio.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "common/errors.hpp"
#include "nxm/plan.hpp"
#include "nxm/search.hpp"

using namespace core::nxm;

namespace {

const std::vector<std::string> kSearchCandidates = {"dense:16", "dense:8", "2:4:16", "2:4:8",
                                                    "dense:4",  "2:4:4",   "1:4:8",  "1:4:4"};

std::vector<Setting> search_candidates() {
  std::vector<Setting> out;
  for (const auto& c : kSearchCandidates) out.push_back(parse_setting(c, "candidates"));
  return out;
}

// Accuracy drop per (component, setting); a plan's probe accuracy = teacher - the sum of its settings' drops.
using DropTable = std::map<std::pair<std::string, std::string>, double>;
constexpr double kTeacherAccuracy = 0.788;

double table_accuracy(const DropTable& drops, const Plan& plan) {
  double acc = kTeacherAccuracy;
  for (Component c : kComponents)
    if (plan[c] != Setting{0, 0, 32}) acc -= drops.at({std::string(component_key(c)), plan[c].to_string()});
  return acc;
}

// The probe table of nxm8's SST-2 search (2 layers, width 128, 500 dev.tsv sentences; drops in accuracy).
DropTable sst2_drops() {
  const std::map<std::string, std::vector<double>> rows = {
      {"qkv", {0, 0, -0.002, -0.002, 0, -0.004, 0.050, 0.052}},
      {"ao", {0, 0, -0.002, -0.002, 0, -0.002, 0.022, 0.022}},
      {"ffn1", {0, 0, 0.006, 0.006, 0, 0.006, 0.026, 0.026}},
      {"ffn2", {0, 0, 0.006, 0.006, 0, 0.008, 0.008, 0.008}}};
  DropTable t;
  for (const auto& [c, drops] : rows)
    for (std::size_t k = 0; k < drops.size(); ++k) t[{c, kSearchCandidates[k]}] = drops[k];
  return t;
}

// The least summed drop over every plan with target <= cr_paper <= ceiling, by brute force.
double least_drop_in(const DropTable& drops, int layers, std::int64_t hidden, double target, double ceiling) {
  std::vector<std::string> options = {"dense:32"};
  options.insert(options.end(), kSearchCandidates.begin(), kSearchCandidates.end());
  double best = 1e9;
  for (const auto& a : options)
    for (const auto& b : options)
      for (const auto& c : options)
        for (const auto& d : options) {
          const Plan p = parse_plan("qkv=" + a + ",ao=" + b + ",ffn1=" + c + ",ffn2=" + d);
          const double cr = compression_ratio(layers, hidden, 4 * hidden, p).cr_paper();
          if (cr >= target - 1e-9 && cr <= ceiling + 1e-9)
            best = std::min(best, kTeacherAccuracy - table_accuracy(drops, p));
        }
  return best;
}

}  // namespace

TEST_CASE("search lands on the target ratio: SST-2's probe table, where the greedy reached 89.58 % for 87.5 %") {
  const DropTable drops = sst2_drops();
  int probes = 0;
  const auto metric = [&](const Plan& p) {
    ++probes;
    return table_accuracy(drops, p);
  };
  const SearchChoice s = search_plan(2, 128, 87.5, 0.5, search_candidates(), true, metric);
  CHECK(probes == 1 + 4 * 8);
  CHECK(s.probes.size() == 4 * 8);
  CHECK(s.closest_cr_paper == doctest::Approx(87.5));
  CHECK(s.cr_paper == doctest::Approx(87.5));  // the greedy: 89.58 (qkv, ao 2:4:4; ffn1, ffn2 dense:4)
  CHECK(s.plan == parse_plan("qkv=2:4:8,ao=2:4:8,ffn1=dense:4,ffn2=dense:4"));
  CHECK(s.base_metric == doctest::Approx(kTeacherAccuracy));
  CHECK(s.predicted_metric == doctest::Approx(kTeacherAccuracy + 0.004));
  CHECK(kTeacherAccuracy - s.predicted_metric == doctest::Approx(least_drop_in(drops, 2, 128, 87.5, 88.0)));

  // A wider window holds plans of less predicted damage: 88.02 % and the greedy's 89.58 % both drop -0.006;
  // the tie goes to the smaller ratio.
  const SearchChoice wide = search_plan(2, 128, 87.5, 2.5, search_candidates(), true, metric);
  CHECK(wide.cr_paper == doctest::Approx(88.0208333));
  CHECK(wide.predicted_metric == doctest::Approx(kTeacherAccuracy + 0.006));
}

TEST_CASE("search: the least-damage plan within [R, R* + tolerance], R* the closest reachable ratio") {
  // Damage growing as bits per weight fall, heavier for the attention: no plan compresses for free.
  DropTable drops;
  const std::map<std::string, double> weight = {{"qkv", 3.0}, {"ao", 2.0}, {"ffn1", 1.0}, {"ffn2", 1.5}};
  for (const auto& [c, w] : weight)
    for (const auto& s : kSearchCandidates) {
      const Setting st = parse_setting(s, "candidates");
      drops[{c, s}] = w * 0.001 * (32.0 / (st.density() * st.bits) - 1.0);
    }
  const auto metric = [&](const Plan& p) { return table_accuracy(drops, p); };
  for (const double target : {50.0, 70.0, 80.0, 90.0, 93.0}) {
    for (const double tolerance : {0.0, 0.5, 3.0}) {
      CAPTURE(target);
      CAPTURE(tolerance);
      const SearchChoice s = search_plan(3, 64, target, tolerance, search_candidates(), true, metric);
      CHECK(s.cr_paper >= target - 1e-9);
      CHECK(s.cr_paper <= s.closest_cr_paper + tolerance + 1e-9);
      CHECK(s.cr_paper == doctest::Approx(compression_ratio(3, 64, 256, s.plan).cr_paper()));
      CHECK(s.predicted_metric == doctest::Approx(table_accuracy(drops, s.plan)));
      CHECK(kTeacherAccuracy - s.predicted_metric ==
            doctest::Approx(least_drop_in(drops, 3, 64, target, s.closest_cr_paper + tolerance)));
    }
  }
  // Nothing reaches 97 % (1:4:4 everywhere: 1 - 1/32 = 96.875 %).
  CHECK_THROWS_AS(search_plan(3, 64, 97.0, 0.5, search_candidates(), true, metric), core::UsageError);
}
