// Complete split patterns counted from clique rows over whole neighbourhoods (see complete_split.hpp).
#include "graph/complete_split.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <vector>

#include "graph/matcher.hpp"
#include "graph/set_ops.hpp"

namespace core::graph {

namespace {

constexpr std::uint32_t kNotNeighbour = std::numeric_limits<std::uint32_t>::max();

// C(c, r), exact (c < 2^32, r <= 8: every partial product below 2^96).
unsigned __int128 binomial(std::uint64_t c, int r) {
  if (c < static_cast<std::uint64_t>(r)) return 0;
  unsigned __int128 b = 1;
  for (int i = 0; i < r; ++i) b = b * (c - static_cast<std::uint64_t>(i)) / static_cast<unsigned>(i + 1);
  return b;
}

// Per thread: a's neighbours' positions, the intersections, the rows and one AND per depth.
class SplitCounter {
 public:
  SplitCounter(const Graph& g, const LowerDegrees& lower, CompleteSplit split)
      : g_(g), lower_(lower), split_(split), pos_(g.n(), kNotNeighbour) {}

  unsigned __int128 count_root(Vertex a) {
    const std::uint32_t lo = lower_[a];
    if (lo + 1 < static_cast<std::uint32_t>(split_.clique)) return 0;
    const auto na = g_.neighbors(a);
    words_ = static_cast<std::uint32_t>((na.size() + 63) / 64);
    rows_.assign(std::size_t{lo} * words_, 0);
    acc_.resize(std::size_t(split_.clique) * words_);
    common_.resize(na.size() + gzk::kSlack);  // the kernel's vector stores run past the result
    for (std::uint32_t i = 0; i < na.size(); ++i) pos_[na[i]] = i;
    for (std::uint32_t b = 0; b < lo; ++b) {
      const auto nb = g_.neighbors(na[b]);
      const std::size_t c = gzk::intersect(nb.data(), nb.size(), na.data(), na.size(), common_.data());
      std::uint64_t* row = rows_.data() + std::size_t{b} * words_;
      for (std::size_t j = 0; j < c; ++j) {
        const std::uint32_t p = pos_[common_[j]];
        row[p / 64] |= std::uint64_t{1} << (p % 64);
      }
    }
    for (Vertex x : na) pos_[x] = kNotNeighbour;
    unsigned __int128 sum = 0;
    for (std::uint32_t b = 0; b < lo; ++b) sum += extend(rows_.data() + std::size_t{b} * words_, split_.clique - 2, b, 1);
    return sum;
  }

 private:
  // acc: the AND of the chosen vertices' rows (a's neighbours adjacent to all of them); `left` more clique
  // vertices among its bits below `below`, then C(popcount, r).
  unsigned __int128 extend(const std::uint64_t* acc, int left, std::uint32_t below, int depth) {
    if (left == 0) return binomial(gzk::popcount_words(acc, words_), split_.independent);
    unsigned __int128 sum = 0;
    std::uint64_t* next = acc_.data() + static_cast<std::size_t>(depth) * words_;
    for (std::uint32_t w = 0; w * 64 < below; ++w) {
      std::uint64_t m = acc[w];
      if ((w + 1) * 64 > below) m &= (std::uint64_t{1} << (below % 64)) - 1;
      for (; m; m &= m - 1) {
        const std::uint32_t j = w * 64 + static_cast<std::uint32_t>(std::countr_zero(m));
        const std::uint64_t* row = rows_.data() + std::size_t{j} * words_;
        std::uint64_t any = 0;
        for (std::uint32_t x = 0; x < words_; ++x) any |= next[x] = acc[x] & row[x];
        if (any) sum += extend(next, left - 1, j, depth + 1);  // else no common neighbour: C(0, r) = 0
      }
    }
    return sum;
  }

  const Graph& g_;
  const LowerDegrees& lower_;
  CompleteSplit split_;
  PopulatedVector<std::uint32_t> pos_;
  std::vector<std::uint64_t> rows_, acc_;
  std::vector<Vertex> common_;
  std::uint32_t words_ = 0;
};

}  // namespace

std::optional<CompleteSplit> as_complete_split(const Pattern& p) {
  const int n = p.size();
  if (p.labeled()) return std::nullopt;
  CompleteSplit s;
  std::uint32_t others = 0;
  for (int v = 0; v < n; ++v) {
    if (p.degree(v) == n - 1) ++s.clique;
    else others |= 1u << v;
  }
  s.independent = std::popcount(others);
  for (int v = 0; v < n; ++v)
    if (((others >> v) & 1u) && (p.neighbor_mask(v) & others)) return std::nullopt;
  if (s.clique < 3 || s.independent < 2) return std::nullopt;
  return s;
}

unsigned __int128 complete_split_count(const Graph& g, CompleteSplit split, const ExecOptions& opt) {
  LowerDegrees own;
  const LowerDegrees& lower = lower_degrees(g, opt, own);
  // Tasks of about equal row-building work (merges with hubs' lists dominate, not the rows' words).
  std::vector<std::uint64_t> work(g.n());
  for (Vertex a = 0; a < g.n(); ++a) work[a] = 1 + static_cast<std::uint64_t>(neighbour_intersection_work(g, a, true));
  const RootSplit chunks = chunk_roots(work, opt.threads * opt.world_size);
  std::vector<std::unique_ptr<SplitCounter>> counters(opt.threads);
  struct alignas(64) Sum {
    unsigned __int128 count = 0;
  };
  std::vector<Sum> sums(opt.threads);
  parallel_roots(g.n(), opt, [&](int th, Vertex begin, Vertex end) {
    if (!counters[th]) counters[th] = std::make_unique<SplitCounter>(g, lower, split);
    for (Vertex a = begin; a < end; ++a) sums[th].count += counters[th]->count_root(a);
  }, nullptr, &chunks);
  unsigned __int128 total = 0;
  for (const Sum& s : sums) total += s.count;
  return total;
}

double complete_split_cost(const Graph& g, const GraphStats& stats, const Plan& clique) {
  double rows = 0;
  for (Vertex a = 0; a < g.n(); ++a) rows += neighbour_intersection_work(g, a, true);
  // Per clique (and per partial clique, about as many) an AND and a popcount over a root's words: the
  // roots are the cliques' smallest-degree vertices, d about the mean degree.
  const double words = 1 + stats.m / std::max(1.0, stats.n) / 32;
  return rows + 2 * clique.predicted_matches * (2 + words);
}

}  // namespace core::graph
