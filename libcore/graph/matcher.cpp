// Plan interpreter (see matcher.hpp). Per thread: the chosen vertex of each level, the current
// candidate span of every later level after each depth, and two scratch buffers per (depth,
// target) for chained set operations.
#include "graph/matcher.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "common/errors.hpp"
#include "common/signals.hpp"
#include "graph/local_graph.hpp"
#include "graph/set_ops.hpp"
#include "graph/triangle_tables.hpp"

namespace core::graph {

namespace {

constexpr Vertex kNoBound = std::numeric_limits<Vertex>::max();

struct Span {
  const Vertex* p = nullptr;
  std::size_t n = 0;
};

Span truncate(Span s, Vertex bound) {
  if (bound != kNoBound) s.n = gzk::lower_index(s.p, s.n, bound);
  return s;
}

// count: matches counted, formulas allowed; list: each match reported; weigh: every level
// enumerated and each match's weight summed (pattern decomposition's cut enumeration).
enum class Mode { count, list, weigh };

// Each worker's interpreter on its own cache lines: its count and weight sum are written per match, and without the
// alignment a decomposition's weighed enumeration ran 1.4 or 2.5 s from run to run (s013 of the 7-vertex sample on
// as-22july06: the workers' objects sharing a line or not).
template <Mode kMode>
class alignas(64) Interpreter {
  static constexpr bool kList = kMode == Mode::list;
  static constexpr bool kEnum = kMode != Mode::count;  // every level enumerated

 public:
  Interpreter(const Graph& g, const Plan& plan, const LowerDegrees& lower, const EdgeCommonLists* lists = nullptr)
      : g_(g), plan_(plan), k_(plan.size()), lower_(lower), lists_(lists) {
    if (kMode == Mode::weigh && (plan.pairs != PairMode::none || plan.root_common || plan.iep))
      throw std::logic_error("sum_over_matches needs a plan without counting formulas");
    const std::size_t cap = g.max_degree() + gzk::kSlack;
    cap_ = cap;
    storage_.resize(static_cast<std::size_t>(k_) * k_ * 2 * cap);
    cur_.resize(static_cast<std::size_t>(k_) * k_);
    if (plan.root_common || plan.common_count || (kMode == Mode::weigh && plan.weigh_root_common))
      common_.assign(g.n(), 0);
    if (plan.common_count) counted_ = common_counted_level(plan);
    if (plan.root_common) {
      bcommon_.assign(g.n(), 0);
      if (root_common_filters_b(plan)) b_filtered_.resize(cap);
    }
    if (plan.pairs == PairMode::independent)
      for (int j = 0; j + 2 < k_; ++j) {
        member_a_.push_back(static_cast<std::int8_t>(candidate_member(plan, k_ - 2, j)));
        member_b_.push_back(static_cast<std::int8_t>(candidate_member(plan, k_ - 1, j)));
      }
    if (plan.iep) {
      iep_sets_.resize(static_cast<std::size_t>(plan.iep) * cap);
      iep_scratch_.resize((std::size_t{1} << plan.iep) * cap);
      iep_removals_ = iep_removals(plan);
      iep_shares_ = iep_shares(plan);
      iep_sized_ = iep_sized(plan);
      for (const SetOp& op : plan.levels[k_ - plan.iep - 1].ops) iep_last_op_[op.target - (k_ - plan.iep)] = &op;
    }
    for (int t = 0; t < k_; ++t) members_.push_back(certain_members(plan, t));
    if (plan.marked_pairs) {
      if (!marked_pairs_applies(plan)) throw std::logic_error("Plan::marked_pairs on a plan it does not apply to");
      marks_.assign(g.n(), 0);
      marked_level_ = marked_pairs_list_level(plan);
      marks_s_ = !(lists && marked_pairs_s_is_list(plan));
    }
    if (plan.tabled_pairs) {
      if (!tabled_pairs_applies(plan)) throw std::logic_error("Plan::tabled_pairs on a plan it does not apply to");
      tabled_pairs_ = g.max_degree() < kPairTableDegreeLimit;
      if (tabled_pairs_) pair_table_.assign(g.n(), 0);
    }
    if (lists_) {
      owner_.assign(static_cast<std::size_t>(k_) * k_, kNoOwner);
      slot_.assign(k_, 0);
      slot_owner_.assign(k_, kNoOwner);
    }
    v_.resize(k_);
    match_.resize(k_);
    sets_.assign(k_, {});
  }

  // Matches with root v0 (level 0) and, when the plan enumerates level 1 (splits_level1), its
  // level-1 vertex at a position in [first, last) of the level-1 candidates (a RootPiece).
  void run_root(Vertex v0, std::uint32_t first = 0, std::uint32_t last = kNoBound) {
    const Level& L0 = plan_.levels[0];
    if (L0.label >= 0 && g_.labels[v0] != L0.label) return;
    v_[0] = v0;
    if (k_ == 1) {
      found(1);
      return;
    }
    first_ = first;
    last_ = last;
    descend(0);
    first_ = 0;
    last_ = kNoBound;
    clear_root_table();
  }

  // Matches with root v0 and level 1 = each neighbour of v0 at a position in [first, last) of N(v0),
  // written to out[offsets[v0] + i] (count_per_edge).
  void run_root_per_edge(Vertex v0, std::uint64_t* out, std::uint32_t first = 0, std::uint32_t last = kNoBound) {
    const Level& L0 = plan_.levels[0];
    if (L0.label >= 0 && g_.labels[v0] != L0.label) return;
    v_[0] = v0;
    for (const SetOp& op : L0.ops) apply(op, 0);
    const Span nb = neighbors(v0);
    for (std::size_t i = first; i < std::min<std::size_t>(nb.n, last); ++i) {
      if (excluded(plan_.levels[1], nb.p[i])) continue;
      v_[1] = nb.p[i];
      if (lists_) slot_[1] = g_.offsets[v0] + i, slot_owner_[1] = v0;
      const std::uint64_t before = count;
      if (k_ == 2) ++count;
      else descend(1);
      out[g_.offsets[v0] + i] = count - before;
    }
    clear_root_table();
  }

  std::uint64_t count = 0;
  unsigned __int128 weight_sum = 0;  // Mode::weigh
  const WeightFn* weigh = nullptr;
  int thread = 0;  // Mode::weigh: the worker's index, passed to weigh
  const MatchFn* emit = nullptr;
  std::uint64_t* emitted = nullptr;
  std::uint64_t limit = 0;
  std::mutex* emit_mu = nullptr;
  std::atomic<bool>* stop = nullptr;

 private:
  Span neighbors(Vertex v) const { return {g_.adj.data() + g_.offsets[v], g_.degree(v)}; }
  // N(v) below `bound`; the oriented prefix (bound == v) is precomputed.
  Span neighbors_below(Vertex v, Vertex bound) const {
    if (bound == v) return {g_.adj.data() + g_.offsets[v], lower_[v]};
    return truncate(neighbors(v), bound);
  }
  // N(v) to merge with a set of `n` vertices already below `bound`: the oriented prefix where bound == v (free
  // and shorter); the whole list where gzk::merge_whole_list says the merge does the same work on it; else N(v)
  // below the bound (a binary search).
  Span neighbors_to_merge(Vertex v, Vertex bound, std::size_t n) const {
    if (bound == v) return {g_.adj.data() + g_.offsets[v], lower_[v]};
    const Span all = neighbors(v);
    return gzk::merge_whole_list(all.p, all.n, n, bound) ? all : truncate(all, bound);
  }
  // common_[x] = |N(v_0) ∩ N(x)| for every x (Plan::root_common, Plan::common_count, Plan::weigh_root_common),
  // filled on first use per root.
  const std::uint32_t* root_table() {
    if (!common_ready_) gzk::wedge_fill(g_.offsets.data(), g_.adj.data(), v_[0], common_.data());
    common_ready_ = true;
    return common_.data();
  }
  void clear_root_table() {
    if (common_ready_) gzk::wedge_clear(g_.offsets.data(), g_.adj.data(), v_[0], common_.data());
    common_ready_ = false;
  }

  Span& cur(int depth, int target) { return cur_[static_cast<std::size_t>(depth) * k_ + target]; }
  // With lists_: the vertex v whose list N(v) (a prefix of it) cur(depth, target) is, else kNoOwner.
  Vertex& owner(int depth, int target) { return owner_[static_cast<std::size_t>(depth) * k_ + target]; }

  Vertex bound_at(int target, int depth) const {
    Vertex b = kNoBound;
    for (int u : plan_.levels[target].upper)
      if (u <= depth) b = std::min(b, v_[u]);
    return b;
  }

  // Runs one set operation at depth d for its target, writing into a scratch buffer.
  void apply(const SetOp& op, int d) {
    const Vertex bound = bound_at(op.target, d);
    Span& s = cur(d, op.target);
    if (op.kind == SetOp::Kind::alias) {
      s = cur(d, op.src);
      if (lists_) owner(d, op.target) = owner(d, op.src);
      return;
    }
    if (op.kind == SetOp::Kind::start) {
      s = neighbors_below(v_[op.src], bound);
      if (lists_) owner(d, op.target) = v_[op.src];
      return;
    }
    const Span a = truncate(s, bound);
    if (lists_) {
      const Vertex o = std::exchange(owner(d, op.target), kNoOwner);
      // a is a prefix of N(o) and v_src lies in N(o) (picked from it at slot_, else found by a binary search): a ∩
      // N(v_src) is the edge's list below the first vertex of N(o) that a leaves out.
      const EdgeIndex slot = op.kind == SetOp::Kind::intersect && o != kNoOwner ? slot_in(o, op.src) : kNoSlot;
      if (slot != kNoSlot) {
        const auto common = lists_->at(slot);
        std::size_t n = common.size();
        if (a.n < g_.degree(o)) n = gzk::lower_index(common.data(), n, g_.adj[g_.offsets[o] + a.n]);
        s = {common.data(), n};
        return;
      }
    }
    const Span nb = neighbors_to_merge(v_[op.src], bound, a.n);
    Vertex* slot = storage_.data() + (static_cast<std::size_t>(d) * k_ + op.target) * 2 * cap_;
    Vertex* out = a.p == slot ? slot + cap_ : slot;
    const std::size_t n = op.kind == SetOp::Kind::intersect ? gzk::intersect(a.p, a.n, nb.p, nb.n, out)
                                                            : gzk::subtract(a.p, a.n, nb.p, nb.n, out);
    s = {out, n};
  }

  // With lists_: the CSR slot of level t's vertex in N(o), kNoSlot where it is not o's neighbour.
  EdgeIndex slot_in(Vertex o, int t) const {
    if (slot_owner_[t] == o) return slot_[t];
    const Span no = neighbors(o);
    const std::size_t i = gzk::lower_index(no.p, no.n, v_[t]);
    return i < no.n && no.p[i] == v_[t] ? g_.offsets[o] + i : kNoSlot;
  }

  bool excluded(const Level& L, Vertex x) const {
    if (L.label >= 0 && g_.labels[x] != L.label) return true;
    for (int j : L.distinct)
      if (v_[j] == x) return true;
    return false;
  }

  void descend(int d) {
    // A stop signal ends the search here too, not only between chunks: one root can hold nearly all
    // the work (the hub of a star: hours for a 10-star). parallel_roots then reports the stop.
    if (stop_requested()) return;
    if (d > 0)
      std::copy_n(cur_.begin() + static_cast<std::ptrdiff_t>(d - 1) * k_, k_, cur_.begin() + static_cast<std::ptrdiff_t>(d) * k_);
    if (d > 0 && lists_)
      std::copy_n(owner_.begin() + static_cast<std::ptrdiff_t>(d - 1) * k_, k_, owner_.begin() + static_cast<std::ptrdiff_t>(d) * k_);
    const auto& ops = plan_.levels[d].ops;
    const int next = d + 1;
    if (!kEnum && next == k_ - 1 && plan_.levels[next].label < 0) {  // the last level: counted
      count += count_candidates(d, next);
      return;
    }
    if (kMode == Mode::weigh && plan_.weigh_counts_last && next == k_ - 1) {  // counted, each prefix weighed once
      if (const std::uint64_t n = count_candidates(d, next)) found(n);
      return;
    }
    if (!kEnum && plan_.iep && next == k_ - plan_.iep) {
      for (const SetOp& op : ops)
        if (!((iep_sized_ >> (op.target - next)) & 1u)) apply(op, d);  // sized sets: counted in count_iep
      count_iep(d);
      return;
    }
    const bool pairs = !kEnum && plan_.pairs != PairMode::none && next == k_ - 2;
    if (pairs && plan_.pairs == PairMode::ordered) {  // the pairs y < x of S_{k-2}: C(|S|, 2)
      const std::uint64_t n = count_candidates(d, next);
      count += n < 2 ? 0 : n * (n - 1) / 2;
      return;
    }
    // With root_common the only op here builds A, which is counted instead.
    if (!(pairs && plan_.root_common))
      for (const SetOp& op : ops) apply(op, d);
    if (pairs) {
      count_pairs(d);
      return;
    }
    const Level& L = plan_.levels[next];
    const Span c = truncate(cur(d, next), bound_at(next, d));
    // Plan::root_common: bcommon_[x] = |B ∩ N(x)| for every vertex x of level k-3.
    const bool table = !kEnum && plan_.root_common && next == k_ - 3;
    const Span B = table ? table_source(d) : Span{};
    for (std::size_t i = 0; i < B.n; ++i) gzk::wedge_fill_one(g_.offsets.data(), g_.adj.data(), B.p[i], bcommon_.data());
    const bool marked = !kEnum && plan_.marked_pairs && next == k_ - 3;
    if (marked) mark_pair_sets(d, true);
    const bool tabled = !kEnum && tabled_pairs_ && next == k_ - 3;
    if (tabled) fill_pair_table(d, bound_at(next, d), true);
    const std::size_t end = d == 0 ? std::min<std::size_t>(c.n, last_) : c.n;
    for (std::size_t i = d == 0 ? first_ : 0; i < end; ++i) {
      const Vertex x = c.p[i];
      if (excluded(L, x)) continue;
      v_[next] = x;
      // c, when a prefix of N(o), lies in the CSR: x's position there is the edge (o, x)'s slot.
      if (lists_ && (slot_owner_[next] = owner(d, next)) != kNoOwner)
        slot_[next] = static_cast<EdgeIndex>(c.p + i - g_.adj.data());
      if (next == k_ - 1) {
        found(1);
        if (kList && stop->load(std::memory_order_relaxed)) return;
      } else if (marked) {
        count_marked_pairs(next);
      } else if (tabled) {
        count_tabled_pairs(next);
      } else {
        descend(next);
      }
    }
    if (marked) mark_pair_sets(d, false);
    if (tabled) fill_pair_table(d, bound_at(next, d), false);
    for (std::size_t i = 0; i < B.n; ++i) gzk::wedge_clear_one(g_.offsets.data(), g_.adj.data(), B.p[i], bcommon_.data());
  }

  // Plan::root_common: the vertices whose neighbours fill bcommon_, B or B ∩ N(v_0) (root_common_filters_b).
  Span table_source(int d) {
    const Span B = truncate(cur(d, k_ - 1), bound_at(k_ - 1, d));
    if (b_filtered_.empty()) return B;
    const Span n0 = neighbors(v_[0]);
    return {b_filtered_.data(), gzk::intersect(B.p, B.n, n0.p, n0.n, b_filtered_.data())};
  }

  // |S_t| minus the distinct earlier vertices in it, after the ops of depth d that build S_t (the
  // last one counted, not written, unless it is an alias). Ops of other targets are skipped
  // unless S_t aliases one of them.
  std::uint64_t count_candidates(int d, int t) {
    const auto& all = plan_.levels[d].ops;
    const bool aliased = std::any_of(all.begin(), all.end(), [&](const SetOp& op) {
      return op.target == t && op.kind == SetOp::Kind::alias;
    });
    const SetOp* last = nullptr;
    for (const SetOp& op : all)
      if (op.target == t) last = &op;
    const bool fused = last && last->kind != SetOp::Kind::alias;
    for (const SetOp& op : all)
      if ((aliased || op.target == t) && !(fused && &op == last)) apply(op, d);
    const Vertex bound = bound_at(t, d);
    const Span a = truncate(cur(d, t), bound);
    // The distinct earlier vertices below the bound that lie in the set (certain_members: no search).
    const std::uint32_t certain = members_[t];
    const auto in_set = [&](auto&& search) {
      std::uint64_t m = 0;
      for (int j : plan_.levels[t].distinct)
        m += v_[j] < bound && (((certain >> j) & 1u) || search(v_[j])) ? 1 : 0;
      return m;
    };
    if (!fused) return a.n - in_set([&](Vertex x) { return gzk::contains(a.p, a.n, x); });
    const Span b = last->kind == SetOp::Kind::start ? neighbors_below(v_[last->src], bound)
                                                    : neighbors_to_merge(v_[last->src], bound, a.n);
    if (t == counted_)  // Plan::common_count: a = N(v_0), b = N(v_d), |a ∩ b| from the root's table
      return root_table()[v_[d]] - in_set([&](Vertex x) { return gzk::contains(a.p, a.n, x) && gzk::contains(b.p, b.n, x); });
    switch (last->kind) {
      case SetOp::Kind::start:
        return b.n - in_set([&](Vertex x) { return gzk::contains(b.p, b.n, x); });
      case SetOp::Kind::intersect:
        return gzk::intersect_count(a.p, a.n, b.p, b.n) -
               in_set([&](Vertex x) { return gzk::contains(a.p, a.n, x) && gzk::contains(b.p, b.n, x); });
      case SetOp::Kind::subtract:
        return a.n - gzk::intersect_count(a.p, a.n, b.p, b.n) -
               in_set([&](Vertex x) { return gzk::contains(a.p, a.n, x) && !gzk::contains(b.p, b.n, x); });
      case SetOp::Kind::alias:
        break;
    }
    return 0;
  }

  // The last two levels in closed form (Plan::pairs, independent).
  void count_pairs(int d) {
    const int a = k_ - 2, b = k_ - 1;
    const Span B = truncate(cur(d, b), bound_at(b, d));
    const auto in_b = [&](Vertex x) { return gzk::contains(B.p, B.n, x); };
    if (!plan_.root_common) {
      const Span A = truncate(cur(d, a), bound_at(a, d));
      count += pairs_from(d, A.n, B.n, gzk::intersect_count(A.p, A.n, B.p, B.n),
                          [&](Vertex x) { return gzk::contains(A.p, A.n, x); }, in_b);
      return;
    }
    // A = N(v_0) ∩ N(v_d), A ∩ B = (B ∩ N(v_0)) ∩ N(v_d) (Plan::root_common).
    const std::uint32_t* common = root_table();
    const Span N0 = neighbors(v_[0]), Nd = neighbors(v_[d]);
    count += pairs_from(
        d, common[v_[d]], B.n, bcommon_[v_[d]],
        [&](Vertex x) { return gzk::contains(N0.p, N0.n, x) && gzk::contains(Nd.p, Nd.n, x); }, in_b);
  }

  // Plan::marked_pairs, for x = v_d (d = k-3, its ops not run): |B| = |S ∩ N(x)| and |A ∩ B| from one scan against
  // the marks (bit 0: S, bit 1: A; mark_pair_sets), of N(v_o) ∩ N(x) where the edge lists are given, else of N(x).
  // Where S is N(v_o) itself (marks_s_ false), B is that list below B's bound and only A is marked.
  void count_marked_pairs(int d) {
    const int a = k_ - 2;
    Span scan = neighbors(v_[d]);
    if (lists_ && marked_level_ >= 0) {
      const auto list = lists_->at(slot_in(v_[marked_level_], d));
      scan = {list.data(), list.size()};
    }
    std::uint64_t nb = 0, nab = 0;
    if (!marks_s_) {
      scan = truncate(scan, bound_at(k_ - 1, d));
      nb = scan.n;
      for (std::size_t i = 0; i < scan.n; ++i) nab += marks_[scan.p[i]] >> 1;
    } else {
      for (std::size_t i = 0; i < scan.n; ++i) {
        const std::uint8_t m = marks_[scan.p[i]];
        nb += m & 1u;
        nab += m == 3 ? 1 : 0;
      }
    }
    count += pairs_from(
        d, truncate(cur(d - 1, a), bound_at(a, d)).n, nb, nab, [&](Vertex x) { return (marks_[x] & 2u) != 0; },
        [&](Vertex x) { return (!marks_s_ || (marks_[x] & 1u)) && gzk::contains(scan.p, scan.n, x); });
  }

  // Plan::marked_pairs: marks (on) or clears A and S, the sets of levels k-2 and k-1 after the ops of depth d = k-4.
  void mark_pair_sets(int d, bool on) {
    const std::uint8_t bits[2] = {2, 1};
    for (int i = 0; i < (marks_s_ ? 2 : 1); ++i) {
      const int t = k_ - 2 + i;
      const Span set = truncate(cur(d, t), bound_at(t, d));
      for (std::size_t j = 0; j < set.n; ++j) marks_[set.p[j]] = on ? marks_[set.p[j]] | bits[i] : 0;
    }
  }

  // Plan::tabled_pairs: fills (on) or clears pair_table_ after the ops of depth d = k-4, for the vertices below
  // x_bound (level k-3's bound): per y, |S_A ∩ N(y)| in bits 0-20, |S_B ∩ N(y)| in 21-41, |S_A ∩ S_B ∩ N(y)| from 42.
  void fill_pair_table(int d, Vertex x_bound, bool on) {
    const int a = k_ - 2, b = k_ - 1;
    table_a_ = truncate(cur(d, a), bound_at(a, d));
    table_b_ = truncate(cur(d, b), bound_at(b, d));
    const auto walk = [&](Vertex s, std::uint64_t add) {
      const Span nb = neighbors_below(s, x_bound);
      for (std::size_t i = 0; i < nb.n; ++i) pair_table_[nb.p[i]] = on ? pair_table_[nb.p[i]] + add : 0;
    };
    std::size_t j = 0;
    for (std::size_t i = 0; i < table_a_.n; ++i) {
      const Vertex s = table_a_.p[i];
      while (j < table_b_.n && table_b_.p[j] < s) ++j;
      walk(s, kTableA | (j < table_b_.n && table_b_.p[j] == s ? kTableAB : 0));
    }
    for (std::size_t i = 0; i < table_b_.n; ++i) walk(table_b_.p[i], kTableB);
  }

  // Plan::tabled_pairs, for x = v_d (d = k-3, its ops not run): |A|, |B| and |A ∩ B| looked up in pair_table_.
  void count_tabled_pairs(int d) {
    const std::uint64_t t = pair_table_[v_[d]];
    constexpr std::uint64_t kField = kTableB - 1;
    const Span nx = neighbors(v_[d]);
    const auto in = [&](Span set) {
      return [set, nx](Vertex y) { return gzk::contains(set.p, set.n, y) && gzk::contains(nx.p, nx.n, y); };
    };
    count += pairs_from(d, t & kField, (t / kTableB) & kField, t / kTableAB, in(table_a_), in(table_b_));
  }

  // The injective pairs of the last two levels after level d from |A|, |B| and |A ∩ B| (gzk::pair_count_from), the
  // earlier vertices the pattern leaves open searched with search_a and search_b.
  template <class SearchA, class SearchB>
  std::uint64_t pairs_from(int d, std::uint64_t ca, std::uint64_t cb, std::uint64_t cab, SearchA&& search_a,
                           SearchB&& search_b) {
    const int a = k_ - 2, b = k_ - 1;
    Vertex da[kMaxPatternSize], db[kMaxPatternSize];
    int nda = 0, ndb = 0;
    for (int j : plan_.levels[a].distinct) da[nda++] = v_[j];
    for (int j : plan_.levels[b].distinct)
      if (j != a) db[ndb++] = v_[j];
    // Memberships the pattern decides (candidate_member) skip the search; the queried vertices are those of
    // distinct earlier levels, so a value names its level.
    const auto in_set = [&](const std::vector<std::int8_t>& member, Vertex bound, Vertex x, auto&& search) {
      for (int j = 0; j <= d; ++j)
        if (v_[j] == x) return member[j] == 1 ? x < bound : member[j] == 0 ? false : search(x);
      return search(x);
    };
    const Vertex bound_a = bound_at(a, d), bound_b = bound_at(b, d);
    return gzk::pair_count_from(
        ca, cb, cab, da, nda, db, ndb, [&](Vertex x) { return in_set(member_a_, bound_a, x, search_a); },
        [&](Vertex x) { return in_set(member_b_, bound_b, x, search_b); });
  }

  // The last plan_.iep levels by inclusion-exclusion (Plan::iep), after the ops of depth d.
  void count_iep(int d) {
    const int t = plan_.iep, first = k_ - t;
    const Vertex* p[gzk::kMaxIep];
    std::size_t n[gzk::kMaxIep];
    Vertex bound[gzk::kMaxIep];
    for (int i = 0; i < t; ++i) {
      bound[i] = bound_at(first + i, d);
      const Span s = truncate(cur(d, first + i), bound[i]);
      p[i] = s.p;
      n[i] = (iep_sized_ >> i) & 1u ? sized(d, first + i, bound[i], n)
                                    : gzk::iep_label_filter(p[i], s.n, g_.labels.data(), plan_.levels[first + i].label,
                                                            iep_sets_.data() + i * cap_);
      if (n[i] == 0) return;  // no tuple (most prefixes of q089: the later sets are not built)
    }
    // The earlier vertices in the tail sets, searched where the pattern leaves it open (iep_removals).
    std::uint32_t member[kMaxPatternSize], removed[kMaxPatternSize];
    const int nr = static_cast<int>(iep_removals_.size());
    for (int r = 0; r < nr; ++r) {
      const IepRemoval& rm = iep_removals_[r];
      const Vertex x = v_[rm.level];
      member[r] = 0;
      for (int i = 0; i < t; ++i)
        if (rm.member[i] == 1 ? x < bound[i] : rm.member[i] != 0 && gzk::contains(p[i], n[i], x)) member[r] |= 1u << i;
      removed[r] = rm.removed_from;
    }
    if (!gzk::add_iep_matches(count, gzk::iep_count(t, p, n, iep_scratch_.data(), cap_, iep_shares_.data(), member, removed, nr),
                              plan_.iep_redundancy))
      throw DataError("the match count exceeds 2^64 - 1 (counts are exact or an error)");
  }

  // |S_t| for a tail set in iep_sized, whose last op at depth d was not run: the intersection counted (from the
  // root's table under Plan::common_count), or the size of the set it aliases (sizes of earlier tail levels in n).
  std::size_t sized(int d, int t, Vertex bound, const std::size_t* n) {
    const SetOp* last = iep_last_op_[t - (k_ - plan_.iep)];
    if (last->kind == SetOp::Kind::alias) return n[last->src - (k_ - plan_.iep)];
    if (t == counted_) return root_table()[v_[d]];
    const Span a = truncate(cur(d, t), bound);
    const Span b = neighbors_to_merge(v_[last->src], bound, a.n);
    return gzk::intersect_count(a.p, a.n, b.p, b.n);
  }

  void found(std::uint64_t n) {
    if constexpr (kList) {
      std::lock_guard lock(*emit_mu);
      if (*emitted >= limit) {
        stop->store(true);
        return;
      }
      for (int l = 0; l < k_; ++l) match_[plan_.order[l]] = v_[l];
      (*emit)(match_);
      if (++*emitted >= limit) stop->store(true);
    } else if constexpr (kMode == Mode::weigh) {
      // Plan::weigh_counts_last: n matches share the weighed levels; the last one's vertex and set are not built.
      for (int l = 0; l < k_; ++l) match_[plan_.order[l]] = v_[l];
      for (int l = 1; l < k_; ++l) {
        const Span s = cur(k_ - 2, l);
        sets_[plan_.order[l]] = {s.p, s.n};
      }
      if (plan_.weigh_counts_last) sets_[plan_.order[k_ - 1]] = {};
      unsigned __int128 w = (*weigh)({match_, sets_, plan_.weigh_root_common ? root_table() : nullptr, thread});
      if (__builtin_mul_overflow(w, static_cast<unsigned __int128>(n), &w) ||
          __builtin_add_overflow(weight_sum, w, &weight_sum))
        throw DataError("the match count exceeds 2^128 in a decomposition's partial sum");
    } else {
      count += n;
    }
  }

  static constexpr Vertex kNoOwner = std::numeric_limits<Vertex>::max();
  static constexpr EdgeIndex kNoSlot = std::numeric_limits<EdgeIndex>::max();
  const Graph& g_;
  const Plan& plan_;
  const int k_;
  const LowerDegrees& lower_;
  const EdgeCommonLists* lists_;         // see sum_over_matches
  std::vector<Vertex> owner_;            // with lists_: owner(depth, target)
  std::vector<EdgeIndex> slot_;          // with lists_: [level] the CSR slot of its vertex in N(slot_owner_[level])
  std::vector<Vertex> slot_owner_;       // ... or kNoOwner where it was not picked from a list
  // Two result buffers of cap_ per (depth, target), one populated block (a first parallel phase's new thread
  // would fault its many 4 KiB heap pages one at a time; see populated.hpp).
  PopulatedVector<Vertex> storage_;
  std::vector<Span> cur_;
  std::vector<Vertex> v_;
  std::vector<Vertex> match_;
  std::vector<std::span<const Vertex>> sets_;  // Mode::weigh: WeighedMatch::sets
  PopulatedVector<std::uint32_t> common_;  // root_table()
  int counted_ = -1;                        // Plan::common_count: the level whose set it sizes
  bool common_ready_ = false;
  PopulatedVector<std::uint32_t> bcommon_;  // Plan::root_common: |B ∩ N(x)| while level k-3 is chosen
  PopulatedVector<Vertex> b_filtered_;      // Plan::root_common: B ∩ N(v_0), where B need not lie in N(v_0)
  std::vector<std::int8_t> member_a_, member_b_;  // Plan::pairs: candidate_member of A and B per earlier level
  PopulatedVector<std::uint8_t> marks_;           // Plan::marked_pairs: bit 0 on S, bit 1 on A
  int marked_level_ = -1;                          // Plan::marked_pairs: marked_pairs_list_level
  bool marks_s_ = true;                            // Plan::marked_pairs: S marked (else the lists give B)
  std::size_t cap_ = 0;                            // scratch buffer length
  PopulatedVector<Vertex> iep_sets_, iep_scratch_;  // Plan::iep: filtered tail sets, intersections
  std::vector<IepRemoval> iep_removals_;           // Plan::iep: the earlier levels removed from tail sets
  IepShares iep_shares_{};                         // Plan::iep: the masks whose intersections are reused
  std::uint32_t iep_sized_ = 0;                    // Plan::iep: the tail sets counted by size alone
  std::array<const SetOp*, gzk::kMaxIep> iep_last_op_{};  // Plan::iep: each tail set's op at the counting depth
  std::vector<std::uint32_t> members_;            // certain_members per level
  std::uint32_t first_ = 0, last_ = kNoBound;      // the level-1 positions of run_root
  // Plan::tabled_pairs (where the degrees fit its fields): the counts per vertex (fill_pair_table) and the sets S_A,
  // S_B they were filled from.
  static constexpr std::uint64_t kTableA = 1, kTableB = std::uint64_t{1} << 21, kTableAB = std::uint64_t{1} << 42;
  bool tabled_pairs_ = false;
  PopulatedVector<std::uint64_t> pair_table_;
  Span table_a_{}, table_b_{};
};

// Whether the search of one root enumerates its level-1 candidates in a loop that a RootPiece can
// cut (no formula counts level 1 or the pair after it).
bool splits_level1(const Plan& plan) {
  const int k = plan.size();
  return k >= 3 && !(plan.iep && k - plan.iep == 1) && !(plan.pairs != PairMode::none && k == 3);
}

// Work-balanced tasks (balance_roots), heavy roots as pieces over their level-1 candidates: L per root,
// the level-1 candidates before bounds other than by the root (the oriented prefix when level 1 lies
// below the root, else the degree).
RootSplit balanced_tasks(const Graph& g, const Plan& plan, const LowerDegrees& lower,
                         const ExecOptions& opt) {
  if (!opt.split_roots || !splits_level1(plan)) return {};
  const auto& up = plan.levels[1].upper;
  // Ranks must agree on the tasks whatever their thread counts: shares of 16 per rank.
  const int parts = 16 * opt.world_size;
  if (std::find(up.begin(), up.end(), 0) != up.end()) return balance_roots(lower, parts);
  std::vector<std::uint32_t> degrees(g.n());
  for (Vertex v = 0; v < g.n(); ++v) degrees[v] = g.degree(v);
  return balance_roots(degrees, parts);
}

}  // namespace

void check_plan_fits(const Graph& g, const Plan& plan) {
  if (plan.size() < 1) throw UsageError("empty plan");
  if (plan.pattern.labeled() && !g.labeled())
    throw UsageError("the pattern has vertex labels but the graph has none (give --vertex-labels FILE)");
}

LowerDegrees lower_degrees(const Graph& g, int threads) {
  LowerDegrees lower(g.n());
  // Blocks of 32768 vertices (~50 us of binary searches): small graphs start no thread.
  constexpr std::uint64_t kBlock = 1 << 15;
  parallel_chunks(threads, (std::uint64_t{g.n()} + kBlock - 1) / kBlock, [&](int, std::uint64_t b) {
    const auto end = static_cast<Vertex>(std::min<std::uint64_t>(g.n(), (b + 1) * kBlock));
    for (auto v = static_cast<Vertex>(b * kBlock); v < end; ++v) {
      const auto nb = g.neighbors(v);
      lower[v] = static_cast<std::uint32_t>(std::lower_bound(nb.begin(), nb.end(), v) - nb.begin());
    }
  });
  return lower;
}

const LowerDegrees& lower_degrees(const Graph& g, const ExecOptions& opt, LowerDegrees& own) {
  if (opt.lower && opt.lower->size() == g.n()) return *opt.lower;
  if (opt.lower) throw std::logic_error("ExecOptions::lower is another graph's");
  own = lower_degrees(g, opt.threads);
  return own;
}

bool uses_local_graph(const Plan& plan, const ExecOptions& opt) {
  switch (opt.local_graph) {
    case LocalGraph::by_plan:
      if (plan.local_graph && !is_clique_chain(plan)) throw std::logic_error("Plan::local_graph on a plan that is no clique chain");
      return plan.local_graph;
    case LocalGraph::never: return false;
    case LocalGraph::where_applicable: return is_clique_chain(plan);
  }
  return false;
}

std::uint64_t count_matches(const Graph& g, const Plan& plan, const ExecOptions& opt) {
  check_plan_fits(g, plan);
  LowerDegrees own_lower;
  const auto& lower = lower_degrees(g, opt, own_lower);
  const bool local = uses_local_graph(plan, opt);
  // Plan::marked_pairs scans the edges' lists where they fit. They are set-up: built whole, past any deadline, and
  // outside the tasks' statistics, so that a plan race's sample of a share of the roots does not carry them (at
  // 1/256 of astro-ph's roots they took q088's sample above its decomposition's, which then ran 3.2x longer).
  std::optional<EdgeCommonLists> lists;
  if (plan.marked_pairs && marked_pairs_list_level(plan) >= 0) {
    ExecOptions setup = whole_graph(opt);
    setup.deadline = std::chrono::steady_clock::time_point::max();
    setup.stats = nullptr;
    lists = edge_common_lists(g, setup, kTriangleListBytes);
  }
  // Per thread: the interpreter, and with Plan::local_graph the local-graph counter (roots too
  // wide for it go to the interpreter).
  // One cache line each: the threads add to their own counts.
  struct alignas(64) Worker {
    std::unique_ptr<Interpreter<Mode::count>> interp;
    std::unique_ptr<LocalCliqueCounter> cliques;
    std::uint64_t count = 0;
  };
  std::vector<Worker> workers(opt.threads);
  // The interpreter is made on first use: with the local graph only for roots too wide for it.
  auto interp = [&](Worker& w) -> Interpreter<Mode::count>& {
    if (!w.interp) w.interp = std::make_unique<Interpreter<Mode::count>>(g, plan, lower, lists ? &*lists : nullptr);
    return *w.interp;
  };
  auto worker = [&](int t) -> Worker& {
    Worker& w = workers[t];
    if (local && !w.cliques) w.cliques = std::make_unique<LocalCliqueCounter>(g, lower, plan.size());
    return w;
  };
  RootSplit split = balanced_tasks(g, plan, lower, opt);
  split.body = [&](int t, const RootPiece& p) {
    Worker& w = worker(t);
    // The local graph's level-1 vertices are the oriented prefix in order, as the plan's.
    if (local && w.cliques->fits(p.v)) w.count += w.cliques->count_root(p.v, p.first, p.last);
    else interp(w).run_root(p.v, p.first, p.last);
  };
  parallel_roots(
      g.n(), opt,
      [&](int t, Vertex begin, Vertex end) {
        Worker& w = worker(t);
        std::uint64_t local_count = 0;
        for (Vertex v = begin; v < end; ++v) {
          if (local && w.cliques->fits(v)) local_count += w.cliques->count_root(v);
          else interp(w).run_root(v);
        }
        w.count += local_count;
      },
      nullptr, &split);
  std::uint64_t total = 0;
  for (auto& w : workers)
    if ((w.interp && __builtin_add_overflow(total, w.interp->count, &total)) || __builtin_add_overflow(total, w.count, &total))
      throw DataError("the match count exceeds 2^64 - 1 (counts are exact or an error)");
  return total;
}

std::uint64_t list_matches(const Graph& g, const Plan& plan, const ExecOptions& opt, std::uint64_t limit,
                           const MatchFn& fn) {
  check_plan_fits(g, plan);
  if (limit == 0) return 0;
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::uint64_t emitted = 0;
  LowerDegrees own_lower;
  const auto& lower = lower_degrees(g, opt, own_lower);
  std::vector<std::unique_ptr<Interpreter<Mode::list>>> workers(opt.threads);
  parallel_roots(
      g.n(), opt,
      [&](int t, Vertex begin, Vertex end) {
        if (!workers[t]) {
          workers[t] = std::make_unique<Interpreter<Mode::list>>(g, plan, lower);
          workers[t]->emit = &fn;
          workers[t]->emitted = &emitted;
          workers[t]->limit = limit;
          workers[t]->emit_mu = &mu;
          workers[t]->stop = &stop;
        }
        for (Vertex v = begin; v < end && !stop.load(std::memory_order_relaxed); ++v) workers[t]->run_root(v);
      },
      &stop);
  return emitted;
}

CountTable count_per_root(const Graph& g, const Plan& plan, const ExecOptions& opt) {
  check_plan_fits(g, plan);
  LowerDegrees own_lower;
  const auto& lower = lower_degrees(g, opt, own_lower);
  CountTable per_root(g.n(), 0);
  std::vector<std::unique_ptr<Interpreter<Mode::count>>> workers(opt.threads);
  auto worker = [&](int t) -> Interpreter<Mode::count>& {
    if (!workers[t]) workers[t] = std::make_unique<Interpreter<Mode::count>>(g, plan, lower);
    return *workers[t];
  };
  // A heavy root's pieces run on several threads: they add to its entry atomically.
  RootSplit split = balanced_tasks(g, plan, lower, opt);
  split.body = [&](int t, const RootPiece& p) {
    auto& w = worker(t);
    const std::uint64_t before = w.count;
    w.run_root(p.v, p.first, p.last);
    std::atomic_ref<std::uint64_t>(per_root[p.v]).fetch_add(w.count - before, std::memory_order_relaxed);
  };
  parallel_roots(
      g.n(), opt,
      [&](int t, Vertex begin, Vertex end) {
        auto& w = worker(t);
        for (Vertex v = begin; v < end; ++v) {
          const std::uint64_t before = w.count;
          w.run_root(v);
          per_root[v] = w.count - before;
        }
      },
      nullptr, &split);
  return per_root;
}

CountTable count_per_edge(const Graph& g, const Plan& plan, const ExecOptions& opt) {
  check_plan_fits(g, plan);
  if (plan.size() < 2 || !plan.levels[1].upper.empty() || plan.root_common)
    throw std::logic_error("count_per_edge needs an unbounded level 1 and no root tables");
  LowerDegrees own_lower;
  const auto& lower = lower_degrees(g, opt, own_lower);
  CountTable per_edge(g.adj.size(), 0);
  std::vector<std::unique_ptr<Interpreter<Mode::count>>> workers(opt.threads);
  auto worker = [&](int t) -> Interpreter<Mode::count>& {
    if (!workers[t]) workers[t] = std::make_unique<Interpreter<Mode::count>>(g, plan, lower);
    return *workers[t];
  };
  // A heavy root's pieces are ranges of its edges, each written by one task.
  RootSplit split = balanced_tasks(g, plan, lower, opt);
  split.body = [&](int t, const RootPiece& p) { worker(t).run_root_per_edge(p.v, per_edge.data(), p.first, p.last); };
  parallel_roots(
      g.n(), opt,
      [&](int t, Vertex begin, Vertex end) {
        for (Vertex v = begin; v < end; ++v) worker(t).run_root_per_edge(v, per_edge.data());
      },
      nullptr, &split);
  return per_edge;
}

CountTable transposed_edge_table(const Graph& g, const CountTable& table, const ExecOptions& opt) {
  CountTable out(table.size(), 0);
  constexpr Vertex kBlock = 4096;
  parallel_chunks(opt.threads, (std::uint64_t{g.n()} + kBlock - 1) / kBlock, [&](int, std::uint64_t b) {
    const auto end = static_cast<Vertex>(std::min<std::uint64_t>(g.n(), (b + 1) * kBlock));
    for (auto v = static_cast<Vertex>(b * kBlock); v < end; ++v)
      for (EdgeIndex s = g.offsets[v]; s < g.offsets[v + 1]; ++s) {
        const Vertex w = g.adj[s];
        const auto nb = g.neighbors(w);
        out[s] = table[g.offsets[w] + static_cast<EdgeIndex>(std::lower_bound(nb.begin(), nb.end(), v) - nb.begin())];
      }
  });
  return out;
}

bool merges_edge_common(const Plan& plan) {
  // The level whose vertex each target's set is a list (prefix) of, as the ops build them in level order.
  std::array<int, kMaxPatternSize> owner;
  owner.fill(-1);
  for (int l = 0; l < plan.size(); ++l) {
    const int picked_from = l > 0 ? owner[l] : -1;
    for (const SetOp& op : plan.levels[l].ops) {
      if (op.kind == SetOp::Kind::intersect && op.src == l && owner[op.target] >= 1 && owner[op.target] == picked_from)
        return true;
      owner[op.target] = op.kind == SetOp::Kind::start ? op.src : op.kind == SetOp::Kind::alias ? owner[op.src] : -1;
    }
  }
  return false;
}

unsigned __int128 sum_over_matches(const Graph& g, const Plan& plan, const ExecOptions& opt, const WeightFn& weight,
                                   const EdgeCommonLists* lists) {
  check_plan_fits(g, plan);
  LowerDegrees own_lower;
  const auto& lower = lower_degrees(g, opt, own_lower);
  std::vector<std::unique_ptr<Interpreter<Mode::weigh>>> workers(opt.threads);
  auto worker = [&](int t) -> Interpreter<Mode::weigh>& {
    if (!workers[t]) {
      workers[t] = std::make_unique<Interpreter<Mode::weigh>>(g, plan, lower, lists);
      workers[t]->weigh = &weight;
      workers[t]->thread = t;
    }
    return *workers[t];
  };
  // Heavy roots as pieces, as count_matches runs them: a hub's matches are most of a skewed graph's.
  RootSplit split = balanced_tasks(g, plan, lower, opt);
  split.body = [&](int t, const RootPiece& p) { worker(t).run_root(p.v, p.first, p.last); };
  parallel_roots(
      g.n(), opt,
      [&](int t, Vertex begin, Vertex end) {
        for (Vertex v = begin; v < end; ++v) worker(t).run_root(v);
      },
      nullptr, &split);
  unsigned __int128 total = 0;
  for (auto& w : workers)
    if (w && __builtin_add_overflow(total, w->weight_sum, &total))
      throw DataError("the match count exceeds 2^128 in a decomposition's partial sum");
  return total;
}

}  // namespace core::graph
