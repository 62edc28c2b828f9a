// Restrictions, matching orders, set-operation schedules and the cost model (see plan.hpp).
#include "graph/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::graph {

Induced parse_induced(const std::string& s) {
  if (s == "edge") return Induced::edge;
  if (s == "vertex") return Induced::vertex;
  throw UsageError("induced mode must be 'edge' or 'vertex', got '" + s + "'");
}

const char* to_string(Induced m) { return m == Induced::edge ? "edge" : "vertex"; }

GraphStats graph_stats(const Graph& g, std::uint64_t seed) {
  GraphStats s;
  s.n = g.n();
  s.m = static_cast<double>(g.m());
  double d2 = 0, dout = 0;
  for (Vertex v = 0; v < g.n(); ++v) {
    const auto nb = g.neighbors(v);
    const double d = static_cast<double>(nb.size());
    d2 += d * d;
    dout += d * static_cast<double>(std::lower_bound(nb.begin(), nb.end(), v) - nb.begin());
  }
  const double ends = std::max(1.0, 2 * s.m);
  s.degree_biased = d2 / ends;
  s.out_degree_biased = std::max(1.0, dout / ends);
  // Closure: sample wedges centred at edge endpoints; count the closed ones.
  Rng rng(seed);
  int wedges = 0, closed = 0;
  for (int t = 0; t < 20000 && wedges < 4000 && !g.adj.empty(); ++t) {
    const EdgeIndex e = rng.below(g.adj.size());
    const Vertex v = g.adj[e];
    const auto nb = g.neighbors(v);
    if (nb.size() < 2) continue;
    const auto i = rng.below(nb.size()), j = rng.below(nb.size() - 1);
    const Vertex a = nb[i], b = nb[j >= i ? j + 1 : j];
    ++wedges;
    closed += g.has_edge(a, b) ? 1 : 0;
  }
  s.closure = std::clamp(wedges ? double(closed) / wedges : 0.0, 1e-3, 1.0);
  if (g.labeled()) {
    for (auto l : g.labels) {
      if (static_cast<std::size_t>(l) >= s.label_fraction.size()) s.label_fraction.resize(l + 1, 0);
      s.label_fraction[l] += 1.0 / std::max(1.0, s.n);
    }
  }
  return s;
}

std::vector<std::pair<int, int>> symmetry_restrictions(const std::vector<Perm>& autos, const std::vector<int>& order) {
  std::vector<std::pair<int, int>> out;
  std::vector<Perm> group = autos;
  for (int v : order) {
    if (group.size() <= 1) break;
    std::uint32_t orbit = 0;
    for (const Perm& s : group) orbit |= 1u << s[v];
    for (int u = 0; u < kMaxPatternSize; ++u)
      if (u != v && ((orbit >> u) & 1u)) out.emplace_back(v, u);  // id(u) < id(v)
    std::erase_if(group, [v](const Perm& s) { return s[v] != v; });
  }
  return out;
}

namespace {

double label_factor(const GraphStats& s, int label) {
  if (label < 0) return 1.0;
  if (static_cast<std::size_t>(label) >= s.label_fraction.size()) return 1e-6;
  return std::max(1e-6, s.label_fraction[label]);
}

// Predicted work: for every level, the number of partial matches times the list lengths the
// set operations of that level merge, plus the loop itself.
double predict_cost(const Plan& plan, const GraphStats& s) {
  const int k = plan.size();
  std::vector<double> size(k, 0.0);     // current estimated candidate-set size per target
  std::vector<bool> started(k, false);
  double prefixes = s.n * label_factor(s, plan.levels[0].label);
  double total = prefixes;
  for (int d = 0; d + 1 < k; ++d) {
    double work = 1.0;
    for (const SetOp& op : plan.levels[d].ops) {
      const Level& t = plan.levels[op.target];
      const bool oriented = std::find(t.upper.begin(), t.upper.end(), op.src) != t.upper.end();
      const bool bounded = std::any_of(t.upper.begin(), t.upper.end(), [d](int u) { return u <= d; });
      const double len = oriented ? s.out_degree_biased : s.degree_biased * (bounded ? 0.5 : 1.0);
      switch (op.kind) {
        case SetOp::Kind::start:
          size[op.target] = len;
          started[op.target] = true;
          work += 2;
          break;
        case SetOp::Kind::intersect:
          work += size[op.target] + len;
          size[op.target] = std::min(size[op.target], len) * s.closure;
          break;
        case SetOp::Kind::subtract:
          work += size[op.target] + len;
          size[op.target] *= (1 - s.closure);
          break;
      }
    }
    total += prefixes * work;
    const Level& next = plan.levels[d + 1];
    double cand = size[d + 1] * label_factor(s, next.label);
    for (int u : next.upper) {
      const bool oriented = std::any_of(plan.levels[u].ops.begin(), plan.levels[u].ops.end(),
                                        [&](const SetOp& op) { return op.target == d + 1 && op.src == u; });
      if (!oriented) cand *= 0.5;
    }
    prefixes *= std::max(cand, 1e-9);
    if (d + 2 < k) total += prefixes;
  }
  return total;
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Plan make_plan(const Pattern& p, Induced induced, const std::vector<int>& order, const GraphStats& stats) {
  const int k = p.size();
  if (static_cast<int>(order.size()) != k) throw UsageError("matching order has the wrong length");
  Plan plan;
  plan.pattern = p;
  plan.induced = induced;
  plan.order = order;
  const auto autos = automorphisms(p);
  plan.automorphisms = autos.size();
  plan.restrictions = symmetry_restrictions(autos, order);
  std::vector<int> level_of(k, -1);
  for (int l = 0; l < k; ++l) {
    if (order[l] < 0 || order[l] >= k || level_of[order[l]] >= 0) throw UsageError("matching order is not a permutation");
    level_of[order[l]] = l;
  }
  plan.levels.resize(k);
  // less[a][b]: id at level a < id at level b is implied by the restrictions (transitively).
  std::vector<std::vector<bool>> less(k, std::vector<bool>(k, false));
  for (const auto& [a, b] : plan.restrictions) {
    plan.levels[level_of[b]].upper.push_back(level_of[a]);
    less[level_of[b]][level_of[a]] = true;
  }
  for (int m = 0; m < k; ++m)
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b)
        if (less[a][m] && less[m][b]) less[a][b] = true;
  for (int i = 0; i < k; ++i) {
    Level& L = plan.levels[i];
    L.vertex = order[i];
    L.label = p.label(order[i]);
    std::sort(L.upper.begin(), L.upper.end());
    if (i == 0) continue;
    std::vector<int> adj, non;
    for (int j = 0; j < i; ++j) (p.has_edge(order[i], order[j]) ? adj : non).push_back(j);
    if (adj.empty()) throw UsageError("matching order: vertex " + std::to_string(order[i]) + " has no earlier neighbour");
    for (int j : non)
      if (!less[i][j] && !less[j][i]) L.distinct.push_back(j);
    const int first = adj.front();
    plan.levels[first].ops.push_back({SetOp::Kind::start, i, first});
    if (induced == Induced::vertex)
      for (int j : non)
        if (j < first) plan.levels[first].ops.push_back({SetOp::Kind::subtract, i, j});
    for (int j = first + 1; j < i; ++j) {
      const bool is_adj = p.has_edge(order[i], order[j]);
      if (is_adj) plan.levels[j].ops.push_back({SetOp::Kind::intersect, i, j});
      else if (induced == Induced::vertex) plan.levels[j].ops.push_back({SetOp::Kind::subtract, i, j});
    }
  }
  plan.predicted_cost = predict_cost(plan, stats);
  plan.orders_considered = 1;
  return plan;
}

Plan choose_plan(const Pattern& p, Induced induced, const GraphStats& stats) {
  if (!p.connected()) throw UsageError("pattern is not connected");
  const int k = p.size();
  const auto autos = automorphisms(p);
  Plan best;
  std::uint64_t considered = 0;
  std::vector<int> order;
  std::uint32_t used = 0;
  auto extend = [&](auto&& self, const std::vector<Perm>& stab) -> void {
    const int l = static_cast<int>(order.size());
    if (l == k) {
      Plan plan = make_plan(p, induced, order, stats);
      ++considered;
      if (best.levels.empty() || plan.predicted_cost < best.predicted_cost) best = std::move(plan);
      return;
    }
    std::uint32_t reach = 0;
    for (int v : order) reach |= p.neighbor_mask(v);
    for (int x = 0; x < k; ++x) {
      if ((used >> x) & 1u) continue;
      if (l > 0 && !((reach >> x) & 1u)) continue;
      // Keep x only when it is the smallest vertex of its orbit under the stabiliser of the prefix.
      bool smallest = true;
      for (const Perm& s : stab) smallest = smallest && s[x] >= x;
      if (!smallest) continue;
      std::vector<Perm> next;
      for (const Perm& s : stab)
        if (s[x] == x) next.push_back(s);
      order.push_back(x);
      used |= 1u << x;
      self(self, next);
      used &= ~(1u << x);
      order.pop_back();
    }
  };
  extend(extend, autos);
  best.orders_considered = considered;
  return best;
}

std::string Plan::hash() const {
  std::ostringstream os;
  os << "gzplan-v1|" << pattern.to_string() << "|" << to_string(induced) << "|";
  for (const Level& L : levels) {
    os << "L" << L.vertex << ":" << L.label << ":";
    for (int u : L.upper) os << "u" << u;
    for (int u : L.distinct) os << "d" << u;
    for (const SetOp& op : L.ops) os << "o" << int(op.kind) << "." << op.target << "." << op.src;
    os << ";";
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(os.str())));
  return hex;
}

nlohmann::json Plan::to_json() const {
  nlohmann::json j;
  j["pattern"] = pattern.to_string();
  j["induced"] = to_string(induced);
  j["order"] = order;
  nlohmann::json r = nlohmann::json::array();
  for (const auto& [a, b] : restrictions) r.push_back({{"smaller", b}, {"larger", a}});
  j["restrictions"] = r;
  j["automorphisms"] = automorphisms;
  j["predicted_cost"] = predicted_cost;
  j["orders_considered"] = orders_considered;
  nlohmann::json lv = nlohmann::json::array();
  static const char* kinds[] = {"start", "intersect", "subtract"};
  for (const Level& L : levels) {
    nlohmann::json o = nlohmann::json::array();
    for (const SetOp& op : L.ops) o.push_back({{"op", kinds[int(op.kind)]}, {"target", op.target}, {"src", op.src}});
    lv.push_back({{"vertex", L.vertex}, {"label", L.label}, {"below", L.upper}, {"distinct_from", L.distinct}, {"ops", o}});
  }
  j["levels"] = lv;
  j["hash"] = hash();
  return j;
}

std::string Plan::to_text() const {
  std::ostringstream os;
  static const char* kinds[] = {"S := N", "S &= N", "S -= N"};
  os << "pattern " << pattern.to_string() << " (" << to_string(induced) << "-induced, |Aut| = " << automorphisms
     << ")\norder:";
  for (int v : order) os << " " << v;
  os << "\nrestrictions:";
  if (restrictions.empty()) os << " none";
  for (const auto& [a, b] : restrictions) os << " id(" << b << ")<id(" << a << ")";
  os << "\n";
  for (int l = 0; l < size(); ++l) {
    const Level& L = levels[l];
    os << "level " << l << ": vertex " << L.vertex;
    if (L.label >= 0) os << " label " << L.label;
    for (int u : L.upper) os << ", below level " << u;
    for (int u : L.distinct) os << ", != level " << u;
    for (const SetOp& op : L.ops) os << "; S" << op.target << " " << (kinds[int(op.kind)] + 2) << "(level " << op.src << ")";
    os << "\n";
  }
  os << "predicted cost " << predicted_cost << " (" << orders_considered << " orders considered)\n";
  return os.str();
}

}  // namespace core::graph
