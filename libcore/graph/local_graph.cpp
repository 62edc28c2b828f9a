// Local-graph clique counting (see local_graph.hpp).
#include "graph/local_graph.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <limits>
#include <stdexcept>

#include "graph/set_ops.hpp"

namespace core::graph {

namespace {

constexpr std::uint32_t kAbsent = std::numeric_limits<std::uint32_t>::max();

std::uint32_t words_below(std::uint32_t i) { return (i + 63) / 64; }  // a row i holds bits < i only

std::uint64_t and_popcount(const std::uint64_t* a, const std::uint64_t* b, std::uint32_t words) {
  std::uint64_t n = 0;
  for (std::uint32_t w = 0; w < words; ++w) n += static_cast<std::uint64_t>(std::popcount(a[w] & b[w]));
  return n;
}

}  // namespace

LocalCliqueCounter::LocalCliqueCounter(const Graph& g, const LowerDegrees& lower, int k, bool edge_slots)
    : g_(g), lower_(lower), k_(k), edge_slots_(edge_slots) {
  if (edge_slots && k < 4) throw std::logic_error("edge slots are kept for cliques of 4 or more vertices");
  if (k == 3) {  // triangles build no rows, only mark the root's prefix
    marked_.assign(g.n(), 0);
    return;
  }
  pos_.assign(g.n(), kAbsent);
  std::uint32_t widest = 0;
  for (Vertex v = 0; v < g.n(); ++v)
    if (edge_slots || fits(v)) widest = std::max(widest, lower[v]);
  words_ = std::max<std::uint32_t>(1, words_below(widest));
  bits_.resize(std::size_t{widest} * words_);
  cand_.resize(static_cast<std::size_t>(std::max(1, k - 2)) * words_);
  if (edge_slots) {
    row_first_.resize(std::size_t{widest} + 1);
    rank_.resize(std::size_t{widest} * words_);
    root_.resize(widest);
    chosen_.resize(k);
  }
}

void LocalCliqueCounter::build_rows(Vertex v, std::uint32_t rows, const EdgeIndex* first) {
  const Vertex* nv = g_.adj.data() + g_.offsets[v];
  const std::uint32_t d = lower_[v];
  for (std::uint32_t i = 0; i < d; ++i) pos_[nv[i]] = i;
  std::fill_n(bits_.begin(), std::size_t{rows} * words_, 0);
  std::size_t slots = 0;
  for (std::uint32_t i = 0; i < rows; ++i) {
    // N+(u) holds ids below u, so every hit is a local vertex below i.
    const Vertex u = nv[i];
    const Vertex* nu = g_.adj.data() + g_.offsets[u];
    std::uint64_t* r = bits_.data() + std::size_t{i} * words_;
    const std::uint32_t du = lower_[u];
    if (!first) {
      for (std::uint32_t e = 0; e < du; ++e) {
        const std::uint32_t p = pos_[nu[e]];
        if (p != kAbsent) r[p / 64] |= std::uint64_t{1} << (p % 64);
      }
      continue;
    }
    // N+(u) and N+(v) are sorted by id, so the bits come in increasing order, each with its slot.
    row_first_[i] = static_cast<std::uint32_t>(slots);
    if (slots_.size() < slots + du) slots_.resize(std::max(2 * slots_.size(), slots + du));
    for (std::uint32_t e = 0; e < du; ++e) {
      const std::uint32_t p = pos_[nu[e]];
      if (p == kAbsent) continue;
      r[p / 64] |= std::uint64_t{1} << (p % 64);
      slots_[slots++] = first[u] + e;
    }
    for (std::uint32_t w = 0, before = 0, words = words_below(i); w < words; ++w) {
      rank_[std::size_t{i} * words_ + w] = before;
      before += static_cast<std::uint32_t>(std::popcount(r[w]));
    }
  }
  for (std::uint32_t i = 0; i < d; ++i) pos_[nv[i]] = kAbsent;
}

EdgeIndex LocalCliqueCounter::slot(std::uint32_t i, std::uint32_t j) const {
  const std::uint64_t below_j = row(i)[j / 64] & ((std::uint64_t{1} << (j % 64)) - 1);
  return slots_[row_first_[i] + rank_[std::size_t{i} * words_ + j / 64] + static_cast<std::uint32_t>(std::popcount(below_j))];
}

// The cliques completing a partial match by `left` more vertices, all in cand (words words).
std::uint64_t LocalCliqueCounter::extend(const std::uint64_t* cand, std::uint32_t words, int left, int depth) {
  if (left == 1) return gzk::popcount_words(cand, words);
  std::uint64_t total = 0;
  std::uint64_t* next = cand_.data() + static_cast<std::size_t>(depth) * words_;
  for (std::uint32_t w = 0; w < words; ++w) {
    for (std::uint64_t m = cand[w]; m; m &= m - 1) {
      const std::uint32_t j = w * 64 + static_cast<std::uint32_t>(std::countr_zero(m));
      const std::uint32_t wj = words_below(j);
      if (left == 2) {  // the last level: counted, not written
        total += and_popcount(cand, row(j), wj);
        continue;
      }
      const std::uint64_t* r = row(j);
      std::uint64_t any = 0;
      for (std::uint32_t x = 0; x < wj; ++x) any |= next[x] = cand[x] & r[x];
      if (any) total += extend(next, wj, left - 1, depth + 1);
    }
  }
  return total;
}

std::uint64_t LocalCliqueCounter::count_root(Vertex v, std::uint32_t begin, std::uint32_t end) {
  end = std::min(end, lower_[v]);
  begin = std::max<std::uint32_t>(begin, static_cast<std::uint32_t>(k_ - 2));  // i needs k-2 vertices below it
  if (begin >= end) return 0;
  if (k_ == 3) {  // row i's popcount: the marked vertices of N+(u_i), counted directly, no rows built
    const Vertex* nv = g_.adj.data() + g_.offsets[v];
    // N+(u_i) holds ids below u_i, so its marked vertices are the local vertices below i.
    for (std::uint32_t i = 0; i < end; ++i) marked_[nv[i]] = 1;
    std::uint64_t total = 0;
    for (std::uint32_t i = begin; i < end; ++i) {
      const Vertex* nu = g_.adj.data() + g_.offsets[nv[i]];
      std::uint32_t hits = 0;
      for (std::uint32_t e = 0, du = lower_[nv[i]]; e < du; ++e) hits += marked_[nu[e]];
      total += hits;
    }
    for (std::uint32_t i = 0; i < end; ++i) marked_[nv[i]] = 0;
    return total;
  }
  build_rows(v, end);
  std::uint64_t total = 0;
  for (std::uint32_t i = begin; i < end; ++i) total += extend(row(i), words_below(i), k_ - 2, 0);
  return total;
}

namespace {

template <bool kAtomic>
void bump(std::uint64_t& x, std::uint64_t by) {
  if constexpr (kAtomic) std::atomic_ref<std::uint64_t>(x).fetch_add(by, std::memory_order_relaxed);
  else x += by;
}

}  // namespace

// The cliques completing chosen_[0..depth) (local vertices, decreasing) by their last vertex, one of cand's
// bits: the prefix with c completions adds c to each of its edges, and each last vertex l adds 1 to its edges.
template <bool kAtomic>
void LocalCliqueCounter::tally_last(const std::uint64_t* cand, std::uint32_t words, int depth, std::uint64_t* t) {
  const std::uint64_t c = gzk::popcount_words(cand, words);
  if (c == 0) return;
  for (int x = 0; x < depth; ++x) {
    root_[chosen_[x]] += c;
    for (int y = x + 1; y < depth; ++y) bump<kAtomic>(t[slot(chosen_[x], chosen_[y])], c);
  }
  for (std::uint32_t w = 0; w < words; ++w)
    for (std::uint64_t m = cand[w]; m; m &= m - 1) {
      const std::uint32_t l = w * 64 + static_cast<std::uint32_t>(std::countr_zero(m));
      ++root_[l];
      for (int x = 0; x < depth; ++x) bump<kAtomic>(t[slot(chosen_[x], l)], 1);
    }
}

// The same with `left` >= 2 more vertices, all in cand: each bit j extends the prefix (the last level through
// tally_last, called directly so that K4's two levels are one loop).
template <bool kAtomic>
void LocalCliqueCounter::tally(const std::uint64_t* cand, std::uint32_t words, int left, int depth, std::uint64_t* t) {
  std::uint64_t* next = cand_.data() + static_cast<std::size_t>(depth) * words_;
  for (std::uint32_t w = 0; w < words; ++w)
    for (std::uint64_t m = cand[w]; m; m &= m - 1) {
      const std::uint32_t j = w * 64 + static_cast<std::uint32_t>(std::countr_zero(m));
      const std::uint32_t wj = words_below(j);
      const std::uint64_t* r = row(j);
      std::uint64_t any = 0;
      for (std::uint32_t x = 0; x < wj; ++x) any |= next[x] = cand[x] & r[x];
      chosen_[depth] = j;
      if (!any) continue;
      if (left == 2) tally_last<kAtomic>(next, wj, depth + 1, t);
      else tally<kAtomic>(next, wj, left - 1, depth + 1, t);
    }
}

template <bool kAtomic>
void LocalCliqueCounter::add_edge_cliques(Vertex v, std::uint64_t* t, const EdgeIndex* first) {
  if (!edge_slots_) throw std::logic_error("add_edge_cliques needs a counter made with edge_slots");
  const std::uint32_t d = lower_[v];
  if (d + 1 < static_cast<std::uint32_t>(k_)) return;
  build_rows(v, d, first);
  std::fill_n(root_.begin(), d, 0);
  for (std::uint32_t i = static_cast<std::uint32_t>(k_ - 2); i < d; ++i) {
    chosen_[0] = i;
    tally<kAtomic>(row(i), words_below(i), k_ - 2, 1, t);
  }
  for (std::uint32_t x = 0; x < d; ++x)
    if (root_[x]) bump<kAtomic>(t[first[v] + x], root_[x]);
}

template void LocalCliqueCounter::add_edge_cliques<false>(Vertex, std::uint64_t*, const EdgeIndex*);
template void LocalCliqueCounter::add_edge_cliques<true>(Vertex, std::uint64_t*, const EdgeIndex*);

bool is_clique_chain(const Plan& plan) {
  const int k = plan.size();
  if (k < 3 || plan.pattern.labeled() || plan.pairs != PairMode::none || plan.root_common || plan.iep) return false;
  for (int t = 0; t < k; ++t) {
    const Level& L = plan.levels[t];
    if (L.label >= 0 || static_cast<int>(L.upper.size()) != t) return false;  // upper: distinct earlier levels
    for (int j = 0; j < t; ++j)
      if (!plan.pattern.has_edge(plan.order[t], plan.order[j])) return false;
  }
  return true;
}

}  // namespace core::graph
