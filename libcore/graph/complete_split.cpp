// Complete split patterns counted from clique rows over whole neighbourhoods or from per-edge scatters of
// common neighbours (see complete_split.hpp).
#include "graph/complete_split.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "common/errors.hpp"
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

// Over a's edges a-b with b < a (each edge once) whose common neighbours T = N(a) ∩ N(b) number at least `fewest`:
// visit(b, N(b), T). `common` holds T.
template <class Visit>
void for_lower_edges(const Graph& g, const LowerDegrees& lower, Vertex a, std::size_t fewest, std::vector<Vertex>& common,
                     Visit&& visit) {
  const auto na = g.neighbors(a);
  common.resize(na.size() + gzk::kSlack);  // the kernel's vector stores run past the result
  for (std::uint32_t i = 0; i < lower[a]; ++i) {
    const Vertex b = na[i];
    const auto nb = g.neighbors(b);
    const std::size_t c = gzk::intersect(nb.data(), nb.size(), na.data(), na.size(), common.data());
    if (c >= fewest) visit(b, nb, std::span<const Vertex>(common.data(), c));
  }
}

// Per thread, for a 3-vertex or edge core: an edge's common neighbours T and the scatter's counts cnt[w] =
// |N(w) ∩ T| (zero again after each edge). choose[c] = C(c, r) (3-vertex cores) or C(c, s) (an edge's star) for
// every c up to the largest degree.
class EdgeCoreCounter {
 public:
  EdgeCoreCounter(const Graph& g, const LowerDegrees& lower, CompleteSplit split,
                  std::span<const unsigned __int128> choose)
      : g_(g), lower_(lower), split_(split), choose_(choose), cnt_(g.n(), 0),
        in_common_(split.core == SplitCore::edge && split.star == 0 ? g.n() : 0, 0) {}

  // Over a's edges a-b with b < a (each edge once), the terms of the core's sum (see terms).
  unsigned __int128 count_root(Vertex a) {
    const auto na = g_.neighbors(a);
    unsigned __int128 sum = 0;
    // The rest lies in T.
    for_lower_edges(g_, lower_, a, min_common(), common_, [&](Vertex b, auto nb, std::span<const Vertex> t) {
      for (const Vertex u : t)
        for (const Vertex w : g_.neighbors(u))
          if (cnt_[w]++ == 0) touched_.push_back(w);
      sum += terms(a, b, na, nb, t);
      for (const Vertex w : touched_) cnt_[w] = 0;
      touched_.clear();
    });
    return sum;
  }

 private:
  // The fewest common neighbours whose edge adds terms: the rest's size, but 3 for the 4-path (a triangle T holds
  // no 4-path, but its terms are among those the 5-clique correction takes off).
  std::size_t min_common() const {
    if (split_.core != SplitCore::edge) return static_cast<std::size_t>(split_.independent);
    return static_cast<std::size_t>(split_.star ? split_.star + 1 + split_.independent : 3);
  }

  // Edge a-b with common neighbours t: sum over z of C(c(a, b, z), r), with z outside {a, b} (edge and vertex), or
  // z in N(b) \ {a} (y = b) and z in N(a) \ {b} (y = a) for a path; an edge core's rest in G_T: its stars' C(d_T, s)
  // C(|T| - s - 1, i), or for the 4-path the sum over T's ordered edges u-w of (d_T(u) - 1)(d_T(w) - 1).
  unsigned __int128 terms(Vertex a, Vertex b, std::span<const Vertex> na, std::span<const Vertex> nb,
                          std::span<const Vertex> t) {
    const std::size_t c = t.size();
    switch (split_.core) {
      case SplitCore::path:  // a and b are in each other's lists with cnt = c
        return read(na) - choose_[c] + read(nb) - choose_[c];
      case SplitCore::edge_and_vertex:
        cnt_[a] = cnt_[b] = 0;
        return read(touched_);
      case SplitCore::edge:
        if (split_.star) return read(t) * binomial(c - static_cast<std::size_t>(split_.star) - 1, split_.independent);
        return path_pairs(t);
      case SplitCore::clique:
      case SplitCore::triangle: break;
    }
    return 0;
  }

  unsigned __int128 read(std::span<const Vertex> zs) const {
    unsigned __int128 sum = 0;
    for (const Vertex z : zs) sum += choose_[cnt_[z]];
    return sum;
  }

  // Over the ordered edges u-w of G_T: (d_T(u) - 1)(d_T(w) - 1).
  unsigned __int128 path_pairs(std::span<const Vertex> t) {
    for (const Vertex u : t) in_common_[u] = 1;
    unsigned __int128 sum = 0;
    for (const Vertex u : t) {
      std::uint64_t row = 0;
      for (const Vertex w : g_.neighbors(u))
        if (in_common_[w]) row += cnt_[w] - 1;  // w has u in T: cnt[w] >= 1
      if (row) sum += static_cast<unsigned __int128>(row) * (cnt_[u] - 1);  // and so has u
    }
    for (const Vertex u : t) in_common_[u] = 0;
    return sum;
  }

  const Graph& g_;
  const LowerDegrees& lower_;
  CompleteSplit split_;
  std::span<const unsigned __int128> choose_;
  PopulatedVector<std::uint32_t> cnt_;
  PopulatedVector<std::uint8_t> in_common_;
  std::vector<Vertex> common_, touched_;
};

// Per thread, for a triangle core: an edge's common neighbours T as bitmap rows over T (row(t): t's neighbours in T,
// from N(t) ∩ T), then per z in T below the edge's ends the star-and-isolated terms in row(z). choose[d] = C(d, s).
class TriangleCoreCounter {
 public:
  TriangleCoreCounter(const Graph& g, const LowerDegrees& lower, CompleteSplit split,
                      std::span<const unsigned __int128> choose)
      : g_(g), lower_(lower), split_(split), choose_(choose), pos_(g.n(), kNotNeighbour) {}

  unsigned __int128 count_root(Vertex a) {
    const auto rest = static_cast<std::size_t>(split_.star + 1 + split_.independent);
    unsigned __int128 sum = 0;
    // T holds z and the rest.
    for_lower_edges(g_, lower_, a, rest + 1, common_, [&](Vertex b, auto, std::span<const Vertex> t) {
      const auto below = static_cast<std::size_t>(std::lower_bound(t.begin(), t.end(), b) - t.begin());
      if (below == 0) return;  // each triangle a-b-z once, at z < b < a
      build_rows(t);
      for (std::size_t z = 0; z < below; ++z) sum += terms(row(z), rest);
    });
    return sum;
  }

 private:
  const std::uint64_t* row(std::size_t i) const { return rows_.data() + i * words_; }

  void build_rows(std::span<const Vertex> t) {
    words_ = (t.size() + 63) / 64;
    rows_.assign(t.size() * words_, 0);
    list_.resize(t.size() + gzk::kSlack);
    for (std::uint32_t i = 0; i < t.size(); ++i) pos_[t[i]] = i;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto nt = g_.neighbors(t[i]);
      const std::size_t c = gzk::intersect(nt.data(), nt.size(), t.data(), t.size(), list_.data());
      std::uint64_t* r = rows_.data() + i * words_;
      for (std::size_t j = 0; j < c; ++j) r[pos_[list_[j]] / 64] |= std::uint64_t{1} << (pos_[list_[j]] % 64);
    }
    for (const Vertex x : t) pos_[x] = kNotNeighbour;
  }

  // z's common neighbours with the edge, C = row(z): sum over u in C of C(d_C(u), s) C(|C| - s - 1, i).
  unsigned __int128 terms(const std::uint64_t* c, std::size_t rest) const {
    const std::uint64_t size = gzk::popcount_words(c, words_);
    if (size < rest) return 0;
    unsigned __int128 stars = 0;
    for (std::size_t w = 0; w < words_; ++w)
      for (std::uint64_t m = c[w]; m; m &= m - 1) {
        const std::uint64_t* u = row(w * 64 + static_cast<std::size_t>(std::countr_zero(m)));
        std::uint64_t degree = 0;
        for (std::size_t x = 0; x < words_; ++x) degree += static_cast<std::uint64_t>(std::popcount(u[x] & c[x]));
        stars += choose_[degree];
      }
    return stars * binomial(size - static_cast<std::uint64_t>(split_.star) - 1, split_.independent);
  }

  const Graph& g_;
  const LowerDegrees& lower_;
  CompleteSplit split_;
  std::span<const unsigned __int128> choose_;
  PopulatedVector<std::uint32_t> pos_;
  std::vector<std::uint64_t> rows_;
  std::vector<Vertex> common_, list_;
  std::size_t words_ = 0;
};

// Per thread, for an edge-and-vertex cut's sum (edge_vertex_cut_sum): per edge a-b (once) its common neighbours T
// marked, then per u in T N(u) marked and per edge u-v of G_T with v > u (the shorter list under degree order) N(v)
// scanned: every z in N(u) ∩ N(v) has e[z] = e(a, b, z) incremented; with common neighbours also the scatter cnt[z] =
// |N(z) ∩ T|. a and b are in every such N(u) ∩ N(v) and are skipped.
class JoinedEdgeCounter {
 public:
  JoinedEdgeCounter(const Graph& g, const LowerDegrees& lower, int commons, int edges)
      : g_(g), lower_(lower), commons_(commons), edges_(edges), in_t_(g.n(), 0), in_u_(g.n(), 0), e_(g.n(), 0),
        cnt_(commons ? g.n() : 0, 0) {}

  unsigned __int128 count_root(Vertex a) {
    unsigned __int128 sum = 0;
    // Two common neighbours at least (an edge of G_T): R counts the components' images that coincide too.
    for_lower_edges(g_, lower_, a, 2, common_,
                    [&](Vertex b, auto, std::span<const Vertex> t) {
                      scatter_edges(t);
                      if (commons_)
                        for (const Vertex u : t)
                          for (const Vertex z : g_.neighbors(u)) ++cnt_[z];
                      for (const Vertex z : touched_) {
                        if (z != a && z != b) add_term(z, sum);
                        e_[z] = 0;
                      }
                      if (commons_)
                        for (const Vertex u : t)
                          for (const Vertex z : g_.neighbors(u)) cnt_[z] = 0;
                      touched_.clear();
                    });
    return sum;
  }

 private:
  void scatter_edges(std::span<const Vertex> t) {
    for (const Vertex u : t) in_t_[u] = 1;
    for (const Vertex u : t) {
      const auto nu = g_.neighbors(u);
      for (const Vertex w : nu) in_u_[w] = 1;
      for (const Vertex v : nu) {
        if (v <= u || !in_t_[v]) continue;
        for (const Vertex z : g_.neighbors(v))
          if (in_u_[z] && e_[z]++ == 0) touched_.push_back(z);
      }
      for (const Vertex w : nu) in_u_[w] = 0;
    }
    for (const Vertex u : t) in_t_[u] = 0;
  }

  // c(a, b, z)^commons (2 e(a, b, z))^edges, checked against overflow.
  void add_term(Vertex z, unsigned __int128& sum) const {
    unsigned __int128 term = 1;
    for (int i = 0; i < edges_; ++i)
      if (__builtin_mul_overflow(term, static_cast<unsigned __int128>(2 * e_[z]), &term)) overflow();
    for (int i = 0; i < commons_; ++i)
      if (__builtin_mul_overflow(term, static_cast<unsigned __int128>(cnt_[z]), &term)) overflow();
    if (__builtin_add_overflow(sum, term, &sum)) overflow();
  }

  [[noreturn]] static void overflow() { throw DataError("a decomposition's partial sum exceeds 2^126"); }

  const Graph& g_;
  const LowerDegrees& lower_;
  int commons_, edges_;
  PopulatedVector<std::uint8_t> in_t_, in_u_;
  PopulatedVector<std::uint64_t> e_;
  PopulatedVector<std::uint32_t> cnt_;
  std::vector<Vertex> common_, touched_;
};

// The sum over opt's roots of make(lower)->count_root(a), one counter per thread, the roots in tasks of about equal
// intersection work (merges with hubs' lists dominate, not the rows' words).
template <class Make>
unsigned __int128 sum_roots_by_work(const Graph& g, const ExecOptions& opt, const Make& make) {
  LowerDegrees own;
  const LowerDegrees& lower = lower_degrees(g, opt, own);
  std::vector<std::uint64_t> work(g.n());
  for (Vertex a = 0; a < g.n(); ++a) work[a] = 1 + static_cast<std::uint64_t>(neighbour_intersection_work(g, a, true));
  const RootSplit chunks = chunk_roots(work, opt.threads * opt.world_size);
  using Counter = typename decltype(make(lower))::element_type;
  std::vector<std::unique_ptr<Counter>> counters(opt.threads);
  struct alignas(64) Sum {
    unsigned __int128 count = 0;
  };
  std::vector<Sum> sums(opt.threads);
  parallel_roots(g.n(), opt, [&](int th, Vertex begin, Vertex end) {
    if (!counters[th]) counters[th] = make(lower);
    for (Vertex a = begin; a < end; ++a) sums[th].count += counters[th]->count_root(a);
  }, nullptr, &chunks);
  unsigned __int128 total = 0;
  for (const Sum& s : sums) total += s.count;
  return total;
}

// inj(P) per unit of the roots' sums: the core's maps per term (a clique's k! orders, an edge's two orientations
// for a lone z or a rest, a triangle's 3!, a path's sums already both) times the rest's automorphisms (r!; a star's s! i!; the
// 4-path's 2, with its terms over ordered edges: 2 per path).
unsigned __int128 maps_per_term(CompleteSplit split) {
  const auto factorial = [](int k) {
    unsigned __int128 f = 1;
    for (int i = 2; i <= k; ++i) f *= static_cast<unsigned>(i);
    return f;
  };
  switch (split.core) {
    case SplitCore::clique: return factorial(split.clique) * factorial(split.independent);
    case SplitCore::edge_and_vertex: return 2 * factorial(split.independent);
    case SplitCore::path: return factorial(split.independent);
    case SplitCore::edge: return split.star ? 2 * factorial(split.star) * factorial(split.independent) : 2;
    case SplitCore::triangle: return 6 * factorial(split.star) * factorial(split.independent);
  }
  return 1;
}

}  // namespace

std::optional<CompleteSplit> as_complete_split(const Pattern& p) {
  const int n = p.size();
  if (p.labeled()) return std::nullopt;
  const std::uint32_t all = (1u << n) - 1;
  CompleteSplit s;
  std::uint32_t others = 0;
  for (int v = 0; v < n; ++v) {
    if (p.degree(v) == n - 1) ++s.clique;
    else others |= 1u << v;
  }
  s.independent = std::popcount(others);
  const auto independent = [&](std::uint32_t set) {
    for (int v = 0; v < n; ++v)
      if (((set >> v) & 1u) && (p.neighbor_mask(v) & set)) return false;
    return true;
  };
  if (s.clique >= 3 && s.independent >= 2 && independent(others)) return s;
  // A 3-vertex core: some vertex's neighbourhood is 3 vertices, and its non-neighbours (itself too) are
  // independent with that same neighbourhood.
  for (int v = 0; v < n; ++v) {
    const std::uint32_t core = p.neighbor_mask(v), rest = all & ~core;
    if (std::popcount(core) != 3 || std::popcount(rest) < 2) continue;
    bool twins = true;
    for (int u = 0; u < n; ++u)
      if ((rest >> u) & 1u) twins = twins && p.neighbor_mask(u) == core;
    if (!twins) continue;
    int edges = 0;
    for (int u = 0; u < n; ++u)
      if ((core >> u) & 1u) edges += std::popcount(p.neighbor_mask(u) & core);
    edges /= 2;
    if (edges == 1 || edges == 2)
      return CompleteSplit{edges == 1 ? SplitCore::edge_and_vertex : SplitCore::path, 0, std::popcount(rest)};
  }
  // An edge or triangle core: exactly two or three vertices adjacent to every other one (more make a clique core or
  // no split), and the rest a star with isolated vertices (or, for an edge, a 4-path).
  if (s.clique != 2 && s.clique != 3) return std::nullopt;
  int leaves = 0, isolated = 0, inner = 0, centres = 0, star = 0;  // the rest's vertices by degree in the rest
  for (int v = 0; v < n; ++v) {
    if (!((others >> v) & 1u)) continue;
    const int d = std::popcount(p.neighbor_mask(v) & others);
    leaves += d == 1;
    isolated += d == 0;
    inner += d == 2;
    if (d >= 2) ++centres, star = d;
  }
  // One centre whose neighbours are all the leaves (for a triangle, a lone edge too: two leaves, no centre); isolated
  // vertices besides (none would make the centre another vertex adjacent to every other one).
  if (s.clique == 3) {
    const int star_leaves = centres == 1 && leaves == star ? star : centres == 0 && leaves == 2 ? 1 : 0;
    if (star_leaves && isolated >= 1) return CompleteSplit{SplitCore::triangle, 0, isolated, star_leaves};
    return std::nullopt;
  }
  if (centres == 1 && leaves == star && isolated >= 1) return CompleteSplit{SplitCore::edge, 0, isolated, star};
  // Degrees 1, 2, 2, 1 on four vertices: a 4-path.
  if (s.independent == 4 && leaves == 2 && inner == 2) return CompleteSplit{SplitCore::edge, 0, 0, 0};
  return std::nullopt;
}

std::string core_name(CompleteSplit split) {
  switch (split.core) {
    case SplitCore::clique: return std::to_string(split.clique) + "-clique";
    case SplitCore::edge_and_vertex: return "edge and vertex";
    case SplitCore::path: return "path";
    case SplitCore::edge: return split.star ? "edge (rest: a star and isolated vertices)" : "edge (rest: a 4-path)";
    case SplitCore::triangle: return "triangle (rest: a star and isolated vertices)";
  }
  return "";
}

__int128 complete_split_embeddings(const Graph& g, CompleteSplit split, const ExecOptions& opt) {
  std::vector<unsigned __int128> choose;
  if (split.core != SplitCore::clique) {
    const std::uint32_t max_degree = g.max_degree();
    choose.resize(std::size_t{max_degree} + 1);
    const int r = split.core == SplitCore::edge || split.core == SplitCore::triangle ? split.star : split.independent;
    for (std::uint32_t c = 0; c <= max_degree; ++c) choose[c] = binomial(c, r);
  }
  unsigned __int128 total = 0;
  if (split.core == SplitCore::clique)
    total = sum_roots_by_work(g, opt, [&](const LowerDegrees& l) { return std::make_unique<SplitCounter>(g, l, split); });
  else if (split.core == SplitCore::triangle)
    total = sum_roots_by_work(g, opt, [&](const LowerDegrees& l) {
      return std::make_unique<TriangleCoreCounter>(g, l, split, choose);
    });
  else
    total = sum_roots_by_work(g, opt, [&](const LowerDegrees& l) {
      return std::make_unique<EdgeCoreCounter>(g, l, split, choose);
    });
  // Below 2^100 x 7! for any count that fits 64 bits.
  const auto inj = static_cast<__int128>(total * maps_per_term(split));
  if (split.core != SplitCore::edge || split.star) return inj;
  // The 4-path's terms count each triangle of G_T 3 times as a path (its closing edge walked): 12 maps per
  // triangle, 10 triangles of some G_T per 5-clique (one per edge).
  const Plan k5 = choose_plan(named_pattern("5-clique"), Induced::edge, GraphStats{});
  return inj - 120 * static_cast<__int128>(count_matches(g, k5, opt));  // a rank's share may be negative
}

double complete_split_cost(const Graph& g, const GraphStats& stats, CompleteSplit split, Formula formula) {
  double rows = 0;
  for (Vertex a = 0; a < g.n(); ++a) rows += neighbour_intersection_work(g, a, true);
  if (split.core == SplitCore::clique) {
    // Per clique (and per partial clique, about as many) an AND and a popcount over a root's words: the
    // roots are the cliques' smallest-degree vertices, d about the mean degree.
    const Plan clique = choose_plan(named_pattern(core_name(split)), Induced::edge, stats, formula);
    const double words = 1 + stats.m / std::max(1.0, stats.n) / 32;
    return rows + 2 * clique.predicted_matches * (2 + words);
  }
  // The scatter: per ordered triangle a-x-y, d(y) sums to twice the steps (each triangle at t for both
  // orders of the edge); a lone z reads what was touched (at most those steps), a path's z both ends' lists, an
  // edge's star T alone, its 4-path the scatter's lists again (marks and counts) and the 5-cliques.
  const double scatter = stats.n * stats.walks.triangle_scan / 2;
  double reads = 0;
  if (split.core == SplitCore::path) reads = 2 * stats.m * stats.degree_biased;
  if (split.core == SplitCore::edge_and_vertex || split.core == SplitCore::triangle) reads = scatter;
  if (split.core == SplitCore::edge && !split.star)
    reads = 2 * scatter + choose_plan(named_pattern("5-clique"), Induced::edge, stats, formula).predicted_cost;
  return rows + kPairWalkStep * scatter + reads;
}

unsigned __int128 edge_vertex_cut_sum(const Graph& g, int commons, int edges, const ExecOptions& opt) {
  const unsigned __int128 once = sum_roots_by_work(
      g, opt, [&](const LowerDegrees& l) { return std::make_unique<JoinedEdgeCounter>(g, l, commons, edges); });
  if (once >> 125) throw DataError("a decomposition's partial sum exceeds 2^126");
  return 2 * once;  // both orientations of each edge
}

double edge_vertex_cut_cost(const Graph& g, const GraphStats& stats, int commons) {
  double rows = 0;
  for (Vertex a = 0; a < g.n(); ++a) rows += neighbour_intersection_work(g, a, true);
  // Per edge and common neighbour u, N(u) marked, scanned and cleared (the scatter's steps, 3 times); per edge of
  // some G_T (6 per 4-clique) a list scanned at scattered marks, its length the mean degree of a triangle's vertex.
  const double scatter = stats.n * stats.walks.triangle_scan / 2;
  const double triangle_degree = scatter / std::max(1.0, 3 * stats.triangles);
  return rows + 3 * scatter + kPairWalkStep * 6 * stats.four_cliques * triangle_degree +
         (commons ? 2 * kPairWalkStep * scatter : 0);
}

}  // namespace core::graph
