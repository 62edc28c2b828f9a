// Pattern decomposition: cut sets, quotient patterns, the planner's choice and the counting (see
// decompose.hpp).
#include "graph/decompose.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

#include "common/errors.hpp"
#include "graph/apex.hpp"
#include "graph/clique_tables.hpp"
#include "graph/cycle_tables.hpp"
#include "graph/matcher.hpp"
#include "graph/set_ops.hpp"
#include "graph/triangle_tables.hpp"

namespace core::graph {

Pattern subpattern(const Pattern& p, const std::vector<int>& vertices) {
  Pattern q(static_cast<int>(vertices.size()));
  for (std::size_t i = 0; i < vertices.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (p.has_edge(vertices[i], vertices[j])) q.add_edge(static_cast<int>(i), static_cast<int>(j));
  if (p.labeled()) {
    std::vector<int> labels;
    for (int v : vertices) labels.push_back(p.label(v));
    q.set_labels(labels);
  }
  return q;
}

namespace {

using Memo = std::map<std::string, CountPlan>;

// Larger patterns are not decomposed: their quotients (up to Bell(k-1) partitions, each planned)
// would make planning slower than most counts.
constexpr int kMaxDecomposed = 7;

std::vector<int> members(std::uint32_t mask) {
  std::vector<int> out;
  for (int v = 0; mask; ++v, mask >>= 1)
    if (mask & 1u) out.push_back(v);
  return out;
}

// The vertices reachable from `from` inside `within`.
std::uint32_t reach(const Pattern& p, std::uint32_t from, std::uint32_t within) {
  std::uint32_t seen = from & within, frontier = seen;
  while (frontier) {
    const int v = std::countr_zero(frontier);
    frontier &= frontier - 1;
    const std::uint32_t next = p.neighbor_mask(v) & within & ~seen;
    seen |= next;
    frontier |= next;
  }
  return seen;
}

// Whether a component (of one vertex: admissible_components) attached at `attach` is counted during the cut's
// enumeration (Decomposition::Component::common): no vertex or edge table is indexed by its attachment.
bool counted_in_cut(const Pattern& p, const std::vector<int>& attach) {
  return attach.size() > 2 || (attach.size() == 2 && !p.has_edge(attach[0], attach[1]));
}

// The components of P - cut when `cut` is admissible: P[cut] connected, two or more components (or one vertex
// counted in the cut), each with one neighbour in the cut or two adjacent ones, or a single vertex with any
// neighbours in the cut (written to attach, ascending). Empty otherwise.
std::vector<std::uint32_t> admissible_components(const Pattern& p, std::uint32_t cut,
                                                 std::vector<std::vector<int>>& attach) {
  const std::uint32_t all = (1u << p.size()) - 1;
  if (reach(p, cut & -cut, cut) != cut) return {};
  std::vector<std::uint32_t> comps;
  attach.clear();
  for (std::uint32_t rest = all & ~cut; rest;) {
    const std::uint32_t comp = reach(p, rest & -rest, all & ~cut);
    rest &= ~comp;
    std::uint32_t nb = 0;
    for (int v : members(comp)) nb |= p.neighbor_mask(v);
    nb &= cut;
    const auto at = members(nb);
    if (std::popcount(comp) > 1 && (at.size() > 2 || (at.size() == 2 && !p.has_edge(at[0], at[1])))) return {};
    comps.push_back(comp);
    attach.push_back(at);
  }
  // One component only where it is a single vertex counted in the cut's enumeration (counted_in_cut): the cut's
  // matches weighed by its common neighbours, the distinct vertices left to the quotients.
  if (comps.size() == 1 && std::popcount(comps[0]) == 1 && counted_in_cut(p, attach[0])) return comps;
  return comps.size() < 2 ? std::vector<std::uint32_t>{} : comps;
}

// H_C: the automorphisms of p mapping `cut` onto itself, restricted to it (in cut-index numbering),
// distinct, identity first.
std::vector<Perm> cut_group(const std::vector<Perm>& autos, const std::vector<int>& cut) {
  std::uint32_t mask = 0;
  for (int v : cut) mask |= 1u << v;
  std::set<Perm> seen;
  std::vector<Perm> out;
  for (const Perm& a : autos) {  // the identity comes first
    Perm r{};
    bool maps = true;
    for (std::size_t i = 0; i < cut.size() && maps; ++i) {
      const int image = a[cut[i]];
      maps = (mask >> image) & 1u;
      if (maps) r[i] = static_cast<std::uint8_t>(std::find(cut.begin(), cut.end(), image) - cut.begin());
    }
    if (maps && seen.insert(r).second) out.push_back(r);
  }
  return out;
}

// A weight evaluation per image (Decomposition::cut_images) costs what a match did; past this many images the cut's
// own symmetry saves less enumeration than its weights cost.
constexpr std::size_t kMaxCutImages = 24;

// One member r of each left coset r H of `sub` in `group` (both over k points, identity first): the identity first.
std::vector<Perm> left_coset_representatives(const std::vector<Perm>& group, const std::vector<Perm>& sub, int k) {
  std::vector<Perm> reps;
  for (const Perm& a : group) {
    const bool covered = std::any_of(reps.begin(), reps.end(), [&](const Perm& r) {
      return std::any_of(sub.begin(), sub.end(), [&](const Perm& h) {
        for (int i = 0; i < k; ++i)
          if (r[h[i]] != a[i]) return false;
        return true;
      });
    });
    if (!covered) reps.push_back(a);
  }
  return reps;
}

// The automorphisms of q fixing vertices 0..fixed-1 (identity first).
std::vector<Perm> prefix_stabiliser(const Pattern& q, int fixed) {
  std::vector<Perm> out;
  for (const Perm& a : automorphisms(q)) {
    bool fixes = true;
    for (int v = 0; v < fixed; ++v) fixes = fixes && a[v] == v;
    if (fixes) out.push_back(a);
  }
  return out;
}

// Canonical quotients P/pi over the partitions pi != identity whose blocks hold at most one vertex
// of each piece (C, and each a_i + K_i) and one label, with the number of partitions giving each.
std::map<std::string, std::pair<Pattern, std::uint64_t>> quotients(const Pattern& p, std::uint32_t cut,
                                                                   const std::vector<std::uint32_t>& comps,
                                                                   const std::vector<std::vector<int>>& attach) {
  const int k = p.size();
  std::vector<std::uint32_t> pieces(k, 0);  // bit 0: C; bit i+1: a_i + K_i
  for (int v : members(cut)) pieces[v] |= 1u;
  for (std::size_t i = 0; i < comps.size(); ++i) {
    for (int v : members(comps[i])) pieces[v] |= 2u << i;
    for (int a : attach[i]) pieces[a] |= 2u << i;
  }
  std::map<std::string, std::pair<Pattern, std::uint64_t>> out;
  std::vector<int> block(k);
  std::vector<std::uint32_t> block_pieces;
  std::vector<int> block_label;
  auto rec = [&](auto&& self, int v) -> void {
    if (v == k) {
      const int b = static_cast<int>(block_pieces.size());
      if (b == k) return;  // the identity partition: the pattern itself
      Pattern q(b);
      for (const auto& [x, y] : p.edges())
        if (!q.has_edge(block[x], block[y])) q.add_edge(block[x], block[y]);
      if (p.labeled()) q.set_labels(block_label);
      const Pattern c = canonical_form(q);
      auto [it, fresh] = out.try_emplace(c.to_string(), c, 0);
      ++it->second.second;
      return;
    }
    for (std::size_t b = 0; b < block_pieces.size(); ++b) {
      if ((block_pieces[b] & pieces[v]) || block_label[b] != p.label(v)) continue;
      block[v] = static_cast<int>(b);
      block_pieces[b] |= pieces[v];
      self(self, v + 1);
      block_pieces[b] &= ~pieces[v];
    }
    block[v] = static_cast<int>(block_pieces.size());
    block_pieces.push_back(pieces[v]);
    block_label.push_back(p.label(v));
    self(self, v + 1);
    block_pieces.pop_back();
    block_label.pop_back();
  };
  rec(rec, 0);
  return out;
}

CountPlan choose(const Pattern& p, const GraphStats& stats, Formula formula, Memo& memo);

// Whether a table counts one vertex adjacent to the single attachment (an unlabeled edge rooted at a
// vertex): the table is then the degree.
bool is_pendant(const Plan& table, int fixed) {
  return fixed == 1 && table.pattern.size() == 2 && !table.pattern.labeled() && table.induced == Induced::edge;
}

// r when a table counts K_{2,r} rooted at one of its two vertices of degree r (unlabeled, edge-induced,
// r >= 1: the root's one non-neighbour b, every other vertex adjacent to exactly the root and b): the
// table then comes from the root's wedge walks (rooted_pair_star_counts). 0 otherwise.
int rooted_common_power(const Plan& table, int fixed) {
  const Pattern& q = table.pattern;
  if (fixed != 1 || q.labeled() || table.induced != Induced::edge || q.size() < 3) return 0;
  const std::uint32_t others = ((1u << q.size()) - 1) & ~1u & ~q.neighbor_mask(0);
  if (std::popcount(others) != 1) return 0;
  for (int v = 1; v < q.size(); ++v)
    if (!((others >> v) & 1u) && q.neighbor_mask(v) != (1u | others)) return 0;
  return q.size() - 2;
}

// r + 1 when a table rooted at an edge (vertices 0, 1) counts a diamond hanging off it by a tip's neighbour: root r
// adjacent to the other root and to v2 only, v2 adjacent to r and to an edge v3-v4 whose both ends are adjacent to
// the other root (a diamond with tips v2 and the other root; unlabeled, edge-induced). The table then comes from the
// joined pairs' walks (tip_diamond_edge_table). 0 otherwise.
int rooted_tip_diamond(const Plan& table, int fixed) {
  const Pattern& p = table.pattern;
  if (fixed != 2 || p.labeled() || table.induced != Induced::edge || p.size() != 5 || p.edge_count() != 7) return 0;
  for (int r = 0; r < 2; ++r) {
    const std::uint32_t root = 1u << r, other = 1u << (1 - r), tip_neighbour = p.neighbor_mask(r) & ~other;
    if (std::popcount(tip_neighbour) != 1) continue;
    const std::uint32_t edge = 0b11111u & ~(root | other | tip_neighbour);
    if (p.neighbor_mask(std::countr_zero(tip_neighbour)) == (root | edge) && p.neighbor_mask(1 - r) == (root | edge))
      return r + 1;
  }
  return 0;
}

// Whether table t (rooted at its first `fixed` levels) has a pass of its own, not its rooted plan.
bool special_table(const Plan& t, int fixed) {
  return is_rooted_triangle(t, fixed) || rooted_clique_size(t, fixed) || is_pendant(t, fixed) ||
         rooted_cycle_length(t, fixed) || rooted_square_pendant(t, fixed) || rooted_common_power(t, fixed) ||
         rooted_tip_diamond(t, fixed);
}

// Whether R is summed over the cut's embeddings directly (one vertex: every vertex; an edge: every
// CSR slot, both directions) instead of through the cut plan's weighted enumeration.
bool summed_directly(const Decomposition& d) { return d.cut.size() <= 2 && !d.pattern.labeled(); }

// k when `comp` holds the inner vertices of a path a-v1-...-vk-b (k = 1..3, in either orientation),
// each vi adjacent to its two path neighbours only; 0 otherwise.
int inner_path_length(const Pattern& p, std::uint32_t comp, int a, int b) {
  const int k = std::popcount(comp);
  if (k > 3 || std::popcount(comp & p.neighbor_mask(a)) != 1) return 0;
  std::uint32_t prev = 1u << a;
  int v = std::countr_zero(comp & p.neighbor_mask(a));
  for (int i = 1; i < k; ++i) {
    const std::uint32_t next = p.neighbor_mask(v) & ~prev;
    if (std::popcount(next) != 1 || !(next & comp)) return 0;
    prev = 1u << v;
    v = std::countr_zero(next);
  }
  return p.neighbor_mask(v) == (prev | (1u << b)) ? k : 0;
}

// Whether `comp` is an edge x-y with x and y adjacent to a and b and nothing else (a diamond's middle
// edge, a and b its tips).
bool joined_edge(const Pattern& p, std::uint32_t comp, int a, int b) {
  if (std::popcount(comp) != 2) return false;
  const int x = std::countr_zero(comp), y = 31 - std::countl_zero(comp);
  const std::uint32_t ends = (1u << a) | (1u << b);
  return p.neighbor_mask(x) == (ends | (1u << y)) && p.neighbor_mask(y) == (ends | (1u << x));
}

// Whether `comp` is a path a-x-y-b (either orientation) with one pendant z on x or on y: three vertices, z adjacent
// to one of the others only, the other two a path between a and b once z is set aside.
bool pendant_path(const Pattern& p, std::uint32_t comp, int a, int b) {
  if (std::popcount(comp) != 3) return false;
  for (int z : members(comp)) {
    const std::uint32_t nz = p.neighbor_mask(z);
    if (std::popcount(nz) != 1 || !(nz & comp)) continue;
    const int x = std::countr_zero(nz);
    const std::uint32_t rest = comp & ~(1u << z);
    const std::uint32_t ends = (1u << a) | (1u << b);
    const int y = std::countr_zero(rest & ~(1u << x));
    // x keeps z, y and one end; y the other end.
    const std::uint32_t x_end = p.neighbor_mask(x) & ends, y_end = p.neighbor_mask(y) & ends;
    return p.neighbor_mask(x) == ((1u << z) | (1u << y) | x_end) && p.neighbor_mask(y) == ((1u << x) | y_end) &&
           std::popcount(x_end) == 1 && std::popcount(y_end) == 1 && x_end != y_end;
  }
  return false;
}

// Whether `comp` is a joined edge x-y (adjacent to a and b) with a cap z adjacent to x, y and one of a, b only
// (s018 of the 7-vertex sample: the triangle x-y-z on a's side).
bool capped_edge(const Pattern& p, std::uint32_t comp, int a, int b) {
  if (std::popcount(comp) != 3) return false;
  const std::uint32_t ends = (1u << a) | (1u << b);
  for (int z : members(comp)) {
    const std::uint32_t edge = comp & ~(1u << z), z_end = p.neighbor_mask(z) & ends;
    if ((p.neighbor_mask(z) & ~ends) != edge || std::popcount(z_end) != 1) continue;
    const auto joined = [&](int v) { return p.neighbor_mask(v) == (ends | (comp & ~(1u << v))); };
    return std::ranges::all_of(members(edge), joined);
  }
  return false;
}

// What a component of a pair cut between a and b is (Decomposition::pair_cut).
enum class PairPiece { none, common, path3, path4, joined_edge, pendant_path, capped_edge };

PairPiece pair_piece(const Pattern& p, std::uint32_t comp, int a, int b) {
  switch (inner_path_length(p, comp, a, b)) {
    case 1: return PairPiece::common;
    case 2: return PairPiece::path3;
    case 3: return PairPiece::path4;
    default: break;
  }
  return joined_edge(p, comp, a, b)    ? PairPiece::joined_edge
         : pendant_path(p, comp, a, b) ? PairPiece::pendant_path
         : capped_edge(p, comp, a, b)  ? PairPiece::capped_edge
                                       : PairPiece::none;
}

// Whether `cut` is two non-adjacent vertices a < b joined by the components of p - cut, two or more,
// each a path of one, two or three inner vertices (inner_path_length), a joined edge (joined_edge), a path of two
// inner vertices with a pendant (pendant_path, one at most) or a joined edge with a cap (capped_edge, one at most,
// with common neighbours and joined edges only); not joined edges or a pendant path with paths of three inner
// vertices (Decomposition::pair_cut; unlabeled). Fills comps and attach.
bool pair_path_cut(const Pattern& p, std::uint32_t cut, std::vector<std::uint32_t>& comps,
                   std::vector<std::vector<int>>& attach) {
  const auto ab = members(cut);
  if (ab.size() != 2 || p.has_edge(ab[0], ab[1]) || p.labeled()) return false;
  const std::uint32_t all = (1u << p.size()) - 1;
  comps.clear();
  attach.clear();
  int count[7] = {};  // per PairPiece
  for (std::uint32_t rest = all & ~cut; rest;) {
    const std::uint32_t comp = reach(p, rest & -rest, all & ~cut);
    rest &= ~comp;
    const PairPiece piece = pair_piece(p, comp, ab[0], ab[1]);
    if (piece == PairPiece::none) return false;
    ++count[static_cast<int>(piece)];
    comps.push_back(comp);
    attach.push_back(ab);
  }
  const int long_paths = count[static_cast<int>(PairPiece::path4)];
  const int pendants = count[static_cast<int>(PairPiece::pendant_path)];
  const int caps = count[static_cast<int>(PairPiece::capped_edge)];
  return comps.size() >= 2 && pendants <= 1 && caps <= 1 &&
         !(long_paths && (count[static_cast<int>(PairPiece::joined_edge)] || pendants)) &&
         !(caps && (long_paths || pendants || count[static_cast<int>(PairPiece::path3)]));
}

// The powers of an edge-and-vertex cut (Decomposition::edge_vertex) when `cut` is one: three vertices, one edge x-y
// among them, z adjacent to neither; two or more components of p - cut, each a single vertex or an edge whose
// vertices are adjacent to x, y and z and (an edge's) to each other only, one edge at least (unlabeled). Fills comps
// and attach.
std::optional<Decomposition::EdgeVertex> edge_vertex_cut(const Pattern& p, std::uint32_t cut,
                                                         std::vector<std::uint32_t>& comps,
                                                         std::vector<std::vector<int>>& attach) {
  const auto xyz = members(cut);
  if (xyz.size() != 3 || p.labeled()) return std::nullopt;
  int cut_edges = 0;
  for (int v : xyz) cut_edges += std::popcount(p.neighbor_mask(v) & cut);
  if (cut_edges != 2) return std::nullopt;  // one edge, counted at both ends
  const std::uint32_t all = (1u << p.size()) - 1;
  comps.clear();
  attach.clear();
  Decomposition::EdgeVertex powers;
  for (std::uint32_t rest = all & ~cut; rest;) {
    const std::uint32_t comp = reach(p, rest & -rest, all & ~cut);
    rest &= ~comp;
    const int size = std::popcount(comp);
    const auto joined = [&](int v) { return p.neighbor_mask(v) == (cut | (comp & ~(1u << v))); };
    if (size > 2 || !std::ranges::all_of(members(comp), joined)) return std::nullopt;
    ++(size == 1 ? powers.commons : powers.edges);
    comps.push_back(comp);
    attach.push_back(xyz);
  }
  if (comps.size() < 2 || powers.edges == 0) return std::nullopt;
  return powers;
}

// The predicted cost of a pair cut's R with paths of two or three inner vertices: every wedge walk
// (2 m d), then per root its distinct wedge ends and their lists above the root (p3), as
// GraphStats::walks measured them; or (p4: sum_pair_long_paths, which also fills a triangle table)
// their full lists, then the distinct ends of those walks (at most n, at most the lists' lengths),
// each with its list above the root (half the mean degree).
double pair_path_cost(const GraphStats& stats, bool long_paths) {
  const auto& w = stats.walks;
  const double wedges = 2 * stats.m * stats.degree_biased;
  if (!long_paths) return kPairWalkStep * (wedges + stats.n * (w.wedge_ends + w.wedge_end_scan_up)) + 2 * stats.n;
  const double path3_ends = std::min(stats.n, w.wedge_end_scan), half_degree = stats.m / std::max(1.0, stats.n);
  return kPairWalkStep * (wedges + stats.n * (w.wedge_ends + w.wedge_end_scan + path3_ends * (1 + half_degree))) +
         triangle_table_cost(stats) + 2 * stats.n;
}

// A pendant path's weights (PendantPaths) are summed in 64 bits: below 2^64 while the largest degree is below
// 2^20 (a path count p3 < 2^40 times weights < 2^21); so are a cap's (sum_pair_edges: per b at most d^2 triangles
// a-x-y, each weighed by fewer than d 4-cliques).
constexpr double kPendantPathMaxDegree = 1 << 20;

// The predicted cost a pendant path adds to its pair cut's pass (PendantPaths): the edge triangle counts, one more
// walk over every root's wedges with two weights updated per step, the neighbours' degrees summed, and a second
// scattered add per step of the path scan, over the ends' lists above the root (sum_pair_paths) or below it
// (sum_pair_edges). Without that last term the pentagon with a pendant (q016) took the pendant path on all four
// graphs, 1.1-1.6x slower than its 5-cycle table.
double pendant_path_cost(const GraphStats& stats, bool below) {
  const auto& w = stats.walks;
  const double scan = below ? w.wedge_end_scan - w.wedge_end_scan_up : w.wedge_end_scan_up;
  return triangle_table_cost(stats) + kPairWalkStep * (2 * 2 * stats.m * stats.degree_biased + stats.n * scan) +
         2 * stats.m;
}

// The predicted cost of sum_pair_edges, from the steps GraphStats::walks measured: per root a its
// wedge walk below a and that walk's ends (scattered counter updates), per neighbour x of a N(x)
// marked, tested and unmarked (sequential, 3 x the wedges sum d^2 over all roots), and per ordered
// triangle a-x-y the part of N(y) below a. Degree and closure alone (2 m d wedges, closure x wedges
// triangles, a quarter of d scanned each) priced as-22july06's pass 6x its measured steps (its
// closure sample misses the hubs' open wedges), so K_{2,2} plus a joined edge stayed enumerated there
// at 5x the time of the cut. With paths of two inner vertices, every root's whole wedge walk and its ends' lists
// below the root (p3) on top. With a cap, the walk and the triangles' scans reach every b, not only those below
// a, and each triangle's shorter list is scanned twice (its 4-cliques counted, then the weights added): at most
// the ordered triangles' N(y), GraphStats::walks.triangle_scan (q083 on as-22july06: priced 0.75 of its
// enumeration, 0.80 of its time).
double pair_edge_cost(const GraphStats& stats, bool paths, bool capped) {
  const auto& w = stats.walks;
  if (capped)
    return kPairWalkStep * (2 * stats.m * stats.degree_biased + stats.n * w.wedge_ends) +
           3 * 2 * stats.m * stats.degree_biased + 2 * stats.n * w.triangle_scan + 2 * stats.n;
  const double p3 = paths ? kPairWalkStep * (2 * stats.m * stats.degree_biased +
                                             stats.n * (w.wedge_ends + w.wedge_end_scan - w.wedge_end_scan_up))
                          : 0;
  return kPairWalkStep * stats.n * (w.wedge_walk_below + w.wedge_ends_below) + 3 * 2 * stats.m * stats.degree_biased +
         stats.n * w.triangle_scan_below + 2 * stats.n + p3;
}

// The predicted cost of a k-cycle's table rooted at `fixed` vertices (rooted_cycle_length): for the
// 4-cycle two walks over the wedges a-w-y with w, y > a (four_cycle_table); for the 5-cycle at a
// vertex the pair cut's pass with paths of length 3 plus the triangle tables (five_cycle_vertex_table),
// at an edge every root's wedges, their ends' full lists (p3) and the lists of its neighbours (S), plus
// the triangle tables (five_cycle_edge_table); and one pass over the CSR.
double cycle_table_cost(const GraphStats& stats, int k, int fixed) {
  if (k == 4) return kPairWalkStep * 2 * stats.oriented_wedges + 2 * stats.n + (fixed == 2 ? 2 * stats.m : 0);
  if (fixed == 2) {
    const double wedges = 2 * stats.m * stats.degree_biased;
    return kPairWalkStep * (2 * wedges + stats.n * (stats.walks.wedge_ends + stats.walks.wedge_end_scan)) +
           triangle_table_cost(stats) + 2 * stats.m;
  }
  return pair_path_cost(stats, false) + triangle_table_cost(stats) + 2 * stats.m;
}

// The predicted cost of square_pendant_edge_table: every root's full wedge walk (2 m d scattered
// steps), then per neighbour b of the root N(b) scanned with a scattered read of c(a, .) each (2 m d
// again), and one pass over the CSR.
double square_pendant_cost(const GraphStats& stats) {
  return kPairWalkStep * 2 * (2 * stats.m * stats.degree_biased) + 2 * stats.m + stats.n;
}

// The predicted cost of sum_pendant_triangles: the edge lists, every root's full wedge walk (2 m d scattered steps),
// and per root a and b in N(a) the edges among N(b), each with two scattered reads of c(a, .) for both orders: half
// the cut's embeddings (its plan's matches times its symmetry), a pass step each. Infinite where the lists, their
// triangles estimated from the closure (3 T = closure x the wedges), would not fit in kTriangleListBytes. The mean
// field's matches err by graph: q050 (`0-3,0-5,1-3,1-5,2-4,2-5,3-4,4-5`) takes this cut on all four test graphs, 2.5x
// faster than its edge cut on as-22july06 but 15-20% slower on astro-ph and wiki-Vote; a dearer step (1.25-1.5)
// turned those choices the wrong way round.
double pendant_triangle_cost(const GraphStats& stats, const Plan& cut_plan) {
  const double edge_list_entries = stats.closure * stats.m * std::max(0.0, stats.degree_biased - 1);
  if (8 * edge_list_entries > static_cast<double>(kTriangleListBytes)) return std::numeric_limits<double>::infinity();
  return triangle_edge_lists_cost(stats) +
         kPairWalkStep * (2 * stats.m * stats.degree_biased +
                          cut_plan.predicted_matches * static_cast<double>(cut_plan.automorphisms) / 2);
}

// The predicted cost of tip_diamond_edge_table: per root its joined pairs over every b (N(x) marked for every
// neighbour x, 2 m d sequential; per ordered triangle a-x-y all of N(y), scattered: GraphStats::walks), then per
// neighbour u of the root N(u) read and cleared (2 x 2 m d), plus the triangle pass and its CSR table.
double tip_diamond_cost(const GraphStats& stats) {
  return kPairWalkStep * stats.n * stats.walks.triangle_scan + 3 * 2 * stats.m * stats.degree_biased +
         triangle_table_cost(stats) + 2 * stats.m;
}

// The plan of a component's table: P[attach + vertices] rooted at the attachment (its first levels, in order),
// symmetry broken by the attachment's pointwise stabiliser.
Plan table_plan(const Pattern& p, const std::vector<int>& attach, const std::vector<int>& vertices, const GraphStats& stats,
                Formula formula) {
  std::vector<int> rooted = attach;
  rooted.insert(rooted.end(), vertices.begin(), vertices.end());
  const Pattern q = subpattern(p, rooted);
  const int fixed = static_cast<int>(attach.size());
  std::vector<int> prefix(fixed);
  std::iota(prefix.begin(), prefix.end(), 0);
  Plan t = choose_plan_in_group(q, prefix_stabiliser(q, fixed), Induced::edge, stats, formula, prefix);
  t.root_common = false;  // count_per_edge runs level 1 itself (no B tables)
  return t;
}

// The predicted cost of filling table t (rooted at its first `fixed` levels): by its special pass where it has
// one, else by its plan (*generic = true: count_per_root, count_per_edge).
double table_cost(const Plan& t, int fixed, const GraphStats& stats, Formula formula, bool& generic) {
  generic = !special_table(t, fixed);
  if (generic) return t.predicted_cost;
  if (is_rooted_triangle(t, fixed)) return triangle_table_cost(stats);
  if (rooted_clique_size(t, fixed)) return clique_table_cost(stats, choose_plan(t.pattern, Induced::edge, stats, formula));
  if (is_pendant(t, fixed)) return stats.n;
  if (const int cycle = rooted_cycle_length(t, fixed)) return cycle_table_cost(stats, cycle, fixed);
  if (rooted_square_pendant(t, fixed)) return square_pendant_cost(stats);
  if (rooted_common_power(t, fixed)) return 2 * (stats.m * stats.degree_biased + 2 * stats.n);
  return tip_diamond_cost(stats);  // rooted_tip_diamond
}

// The mask of the positions in `cut` of `vertices` (pattern vertices in the cut).
std::uint32_t cut_index_mask(const std::vector<int>& cut, const std::vector<int>& vertices) {
  std::uint32_t mask = 0;
  for (int v : vertices) mask |= 1u << (std::find(cut.begin(), cut.end(), v) - cut.begin());
  return mask;
}

// The pendant triangle form of a cut (Decomposition::pendant_triangle), or none.
std::optional<Decomposition::PendantTriangle> pendant_triangle_form(const Decomposition& d) {
  const Pattern& p = d.pattern;
  if (p.labeled() || d.cut.size() != 4 || d.components.size() < 2) return std::nullopt;  // as sum_pendant_triangles
  Decomposition::PendantTriangle t;
  std::uint32_t cut = 0;
  for (int v : d.cut) cut |= 1u << v;
  for (int v : d.cut)
    if (std::popcount(p.neighbor_mask(v) & cut) == 1) t.a = v;
  if (t.a < 0) return std::nullopt;
  t.b = std::countr_zero(p.neighbor_mask(t.a) & cut);
  const std::uint32_t rest = cut & ~(1u << t.a) & ~(1u << t.b);
  t.x = std::countr_zero(rest);
  t.y = 31 - std::countl_zero(rest);
  if (!p.has_edge(t.x, t.y) || !p.has_edge(t.b, t.x) || !p.has_edge(t.b, t.y)) return std::nullopt;
  // Each component at a and a vertex not adjacent to a: x or y.
  for (const auto& c : d.components) {
    if (!c.common || c.attach.size() != 2 || (c.attach[0] != t.a && c.attach[1] != t.a)) return std::nullopt;
    ++(c.attach[0] + c.attach[1] - t.a == t.x ? t.power_x : t.power_y);
  }
  return t;
}

// A step of a binary search in a list elsewhere in memory (a cache miss), in merged elements.
constexpr double kSearchStep = 12;

// The decomposition of p at `cut`, its predicted cost the sum of its parts'; none where no order of the cut counts
// its components' common neighbours at a finite price (choose_plan_in_group).
std::optional<CountPlan> decompose_at(const Pattern& p, std::uint32_t cut_mask, const std::vector<std::uint32_t>& comps,
                       const std::vector<std::vector<int>>& attach, const std::vector<Perm>& autos, const GraphStats& stats,
                       Formula formula, Memo& memo) {
  auto d = std::make_shared<Decomposition>();
  d->pattern = p;
  d->cut = members(cut_mask);
  // The plans of the quotient patterns (their counts are subtracted) complete the decomposition.
  const auto with_quotients = [&](double cost) {
    for (auto& [name, q] : quotients(p, cut_mask, comps, attach)) {
      d->quotients.push_back({q.second, choose(q.first, stats, formula, memo)});
      cost += d->quotients.back().plan.predicted_cost;
    }
    CountPlan cp;
    cp.decomposition = std::move(d);
    cp.predicted_cost = cost;
    return cp;
  };
  std::vector<std::uint32_t> edge_vertex_comps;
  std::vector<std::vector<int>> edge_vertex_attach;
  if (const auto powers = edge_vertex_cut(p, cut_mask, edge_vertex_comps, edge_vertex_attach)) {
    // Priced from the counted triangles and 4-cliques (none in stats made by hand).
    if (!stats.graph || stats.four_cliques < 0) return std::nullopt;
    for (std::size_t i = 0; i < comps.size(); ++i) d->components.push_back({members(comps[i]), attach[i], -1});
    d->edge_vertex = powers;
    return with_quotients(edge_vertex_cut_cost(*stats.graph, stats, powers->commons));
  }
  if (!p.has_edge(d->cut[0], d->cut.back()) && d->cut.size() == 2) {  // pair_path_cut
    for (std::size_t i = 0; i < comps.size(); ++i) {
      d->components.push_back({members(comps[i]), attach[i], -1});
      switch (pair_piece(p, comps[i], d->cut[0], d->cut[1])) {
        case PairPiece::common: ++d->common_power; break;
        case PairPiece::path3: ++d->path3_power; break;
        case PairPiece::path4: ++d->path4_power; break;
        case PairPiece::joined_edge: ++d->edge_power; break;
        case PairPiece::pendant_path: d->pendant_path = true; break;
        case PairPiece::capped_edge: d->capped_edge = true; break;
        case PairPiece::none: break;
      }
    }
    // The pendant path's and the cap's weights stay below 2^64 (kPendantPathMaxDegree).
    if ((d->pendant_path || d->capped_edge) && stats.max_degree >= kPendantPathMaxDegree) return std::nullopt;
    const double pendant = d->pendant_path ? pendant_path_cost(stats, d->edge_power > 0) : 0;
    if (d->edge_power || d->capped_edge)
      return with_quotients(pair_edge_cost(stats, d->path3_power > 0 || d->pendant_path, d->capped_edge) + pendant);
    // Common neighbours alone: K_{2,r} from the wedge walks below the root (half of all), one pass
    // over the touched vertices per root; the 4-cycle (r = 2) from the walks a-w-y with w, y > a.
    const bool paths = d->path3_power + d->path4_power > 0 || d->pendant_path;
    const double stars = d->common_power == 2 ? kPairWalkStep * stats.oriented_wedges : stats.m * stats.degree_biased;
    return with_quotients(paths ? pair_path_cost(stats, d->path4_power > 0) + pendant : stars + 2 * stats.n);
  }
  // Components of one vertex attached where no table is indexed (three or more cut vertices, two non-adjacent
  // ones): their common neighbours are counted during the cut's enumeration, which should place their attachments
  // early (masks over the cut's indices).
  std::vector<CountedSet> counted_sets;
  std::uint32_t weighed = 0;  // the cut vertices some component is attached at (cut indices)
  for (std::size_t i = 0; i < attach.size(); ++i) {
    weighed |= cut_index_mask(d->cut, attach[i]);
    if (counted_in_cut(p, attach[i]))
      counted_sets.push_back({cut_index_mask(d->cut, attach[i]), p.label(std::countr_zero(comps[i])) < 0});
  }
  const Pattern cut_pattern = subpattern(p, d->cut);
  const std::vector<Perm> held = cut_group(autos, d->cut);
  d->cut_plan = choose_plan_in_group(cut_pattern, held, Induced::edge, stats, Formula::never, {}, counted_sets, weighed);
  if (std::isinf(d->cut_plan.predicted_cost)) return std::nullopt;
  // Each weight evaluation finds each edge's entry in its table by a binary search in the first end's list, a cache
  // miss a step (as-22july06: q050's cut 3-4-5 weighed by the triangles of 4-5 took 50 ns a call and, unpriced, was
  // taken over its pendant triangle sum, 5x faster; at 24 a step q036, q057 and q072 left faster weighed cuts); the
  // tables of one edge share the search.
  std::set<std::vector<int>> searched_edges;
  for (const auto& a : attach)
    if (a.size() == 2 && !counted_in_cut(p, a)) searched_edges.insert(a);
  const double per_term = static_cast<double>(searched_edges.size()) * kSearchStep *
                          std::log2(std::max(2.0, stats.degree_biased));
  const auto cut_cost = [&](const Plan& plan, std::size_t terms) {
    return weighed_cost(plan, static_cast<double>(terms)) + plan.predicted_calls * static_cast<double>(terms) * per_term;
  };
  // A vertex or edge cut of an unlabeled pattern is summed in one pass over the vertices or the CSR.
  double cost = summed_directly(*d) ? stats.n + (d->cut.size() == 2 ? 2 * stats.m : 0) : cut_cost(d->cut_plan, 1);
  for (std::size_t i = 0; i < comps.size(); ++i) {
    Decomposition::Component c{members(comps[i]), attach[i], -1};
    if ((c.common = counted_in_cut(p, attach[i]))) {
      d->components.push_back(std::move(c));
      continue;
    }
    // A component that an automorphism maps onto an earlier one (attachments onto attachments, in
    // order) has the same table.
    for (std::size_t j = 0; j < i && c.table < 0; ++j) {
      if (attach[i].size() != attach[j].size()) continue;
      const bool same = std::any_of(autos.begin(), autos.end(), [&](const Perm& a) {
        for (std::size_t x = 0; x < attach[i].size(); ++x)
          if (a[attach[i][x]] != attach[j][x]) return false;
        for (int v : c.vertices)
          if (!((comps[j] >> a[v]) & 1u)) return false;
        return true;
      });
      if (same) c.table = d->components[j].table;
    }
    if (c.table < 0) {
      c.table = static_cast<int>(d->tables.size());
      bool generic = false;
      d->tables.push_back(table_plan(p, attach[i], c.vertices, stats, formula));
      const int fixed = static_cast<int>(attach[i].size());
      double table = table_cost(d->tables.back(), fixed, stats, formula, generic);
      d->reversed.push_back(false);
      // An edge's table filled by a plan rooted at its second end, then transposed, where that is cheaper (the
      // root's wedge table sizes the sets N(root) ∩ N(x): Plan::common_count).
      if (generic && fixed == 2) {
        Plan r = table_plan(p, {attach[i][1], attach[i][0]}, c.vertices, stats, formula);
        bool r_generic = false;
        const double r_cost = table_cost(r, fixed, stats, formula, r_generic) + 2 * stats.m;
        if (r_generic && r_cost < table) {
          d->tables.back() = std::move(r);
          d->reversed.back() = true;
          table = r_cost;
        }
      }
      cost += table;
    }
    d->components.push_back(std::move(c));
  }
  // The cut enumerated once per orbit of its own automorphisms, each match weighed in its images, where that is priced
  // below its enumeration under H_C (q074's K4 weighed by a degree and an edge's triangles: 0.034 s against 0.023 on
  // as-22july06, 0.44 against 0.34 on email-Enron). The decomposition keeps H_C's price: the mean field underprices
  // the cliques a widened cut lists once (as-22july06's K4s: 1313 priced, 114716 found), and so priced, widened cuts
  // were taken over vertex cuts with clique tables and over apex forms 2-3x faster (q018, q059, q090 there).
  // Stabilisers of a cut vertex, between the two groups, lost to both (q074 and q090, 1.3-2x).
  if (auto widened = with_cut_images(*d, stats);
      widened && cut_cost(widened->cut_plan, widened->cut_images.size()) < cut_cost(d->cut_plan, 1))
    *d = std::move(*widened);
  // The same sum as the cut's weighed enumeration, without a merge or look-up per match: taken wherever the lists
  // fit (the weighed cut, its ends looked up in the root's table, took 0.33 s on as-22july06 for q050, this 0.12 s).
  if (const auto t = pendant_triangle_form(*d)) {
    const double summed = pendant_triangle_cost(stats, d->cut_plan);
    if (std::isfinite(summed)) {
      d->pendant_triangle = t;
      cost = summed;
    }
  }
  return with_quotients(cost);
}

// Counting through an apex (apex.hpp) is priced only where the best plan is predicted to take longer than
// this (~40 ms; a decomposition, whose tables the model prices better, ~0.1 s): the sampled neighbourhoods
// cost 5-20 ms of planning (as-22july06's K5 minus an edge, 3.5e7 units: 0.023 CPU s either way, planning
// 7 ms instead of 2).
constexpr double kApexWorthPricing = 4e7;
constexpr double kApexWorthPricingDecomposed = 1e8;

// p through each of its cone forms, without the enumerating plan (CountPlan::plan); *enumerated as
// cone_count_plans says.
std::vector<CountPlan> priced_cones(const Pattern& p, const GraphStats& stats, Formula formula, double* enumerated) {
  std::vector<CountPlan> out;
  if (enumerated) *enumerated = 0;
  if (!stats.graph) return out;
  for (const Cone& c : cones(p)) {
    const ConeRest rest = cone_rest(p, c);
    ApexPricing priced = apex_pricing(*stats.graph, rest, c.twin >= 0, formula);
    CountPlan cp;
    cp.apex = std::make_shared<const ApexPlan>(ApexPlan{c.vertex, c.twin, rest.isolated, std::move(priced.rest)});
    cp.predicted_cost = priced.cost;
    out.push_back(std::move(cp));
    if (c.twin >= 0 || !enumerated) continue;
    // Enumerating p breaks the symmetry between apexes in one orbit (K5 minus an edge has three), which the
    // neighbourhoods' own enumeration, the apex fixed, does not.
    std::uint32_t orbit = 0;
    for (const Perm& sigma : automorphisms(p)) orbit |= 1u << sigma[c.vertex];
    *enumerated = priced.enumerated / std::popcount(orbit);
  }
  return out;
}

CountPlan choose(const Pattern& p, const GraphStats& stats, Formula formula, Memo& memo) {
  const std::string key = canonical_form(p).to_string();
  if (auto it = memo.find(key); it != memo.end()) return it->second;  // counts do not depend on numbering
  CountPlan best;
  best.plan = choose_plan(p, Induced::edge, stats, formula);
  best.predicted_cost = best.plan.predicted_cost;
  // Formula::always keeps a plan with an inclusion-exclusion tail; otherwise the first admissible
  // cut replaces the plan, and the cheapest cut wins.
  const bool keep = formula == Formula::never || (formula == Formula::always && best.plan.iep);
  if (!keep && p.size() >= 3 && p.size() <= kMaxDecomposed) {
    const auto autos = automorphisms(p);
    const std::uint32_t all = (1u << p.size()) - 1;
    bool forced = formula == Formula::always;
    std::vector<std::vector<int>> attach;
    const auto split = stats.graph ? as_complete_split(p) : std::nullopt;
    for (std::uint32_t cut = 1; cut < all; ++cut) {
      auto comps = admissible_components(p, cut, attach);
      if (comps.empty() && !pair_path_cut(p, cut, comps, attach)) continue;
      // A complete split's clique cut (its only cut of that size) sums the same products as the split below,
      // without its rows: as-22july06's K6 minus an edge, priced alike, took 0.069 s against 0.004.
      if (split && std::popcount(cut) == split->clique) continue;
      std::optional<CountPlan> cp = decompose_at(p, cut, comps, attach, autos, stats, formula, memo);
      if (cp && (forced || cp->predicted_cost < best.predicted_cost)) {
        cp->plan = std::move(best.plan);
        best = std::move(*cp);
        forced = false;
      }
    }
  }
  // A complete split pattern (K5 minus an edge, K_{3,3} plus an edge): its core's common neighbours from rows
  // over whole neighbourhoods or per-edge scatters.
  if (!keep && stats.graph)
    if (const auto split = as_complete_split(p)) {
      if (const double cost = complete_split_cost(*stats.graph, stats, *split, formula); cost < best.predicted_cost) {
        CountPlan cp;
        cp.plan = std::move(best.plan);
        cp.complete_split = split;
        cp.predicted_cost = cost;
        best = std::move(cp);
      }
    }
  // A cone pattern whose best count takes long enough to pay for sampling its neighbourhoods.
  // An enumerating plan is priced by the sampled neighbourhoods too where that says more: the whole graph's
  // closure underprices the dense neighbourhoods (wiki-Vote's 4-wheel: 2.5e8 units for 3.6 CPU s).
  if (!keep && best.predicted_cost > (best.decomposition ? kApexWorthPricingDecomposed : kApexWorthPricing)) {
    double enumerated = 0;
    auto cones = priced_cones(p, stats, formula, &enumerated);
    const double incumbent = best.decomposition ? best.predicted_cost : std::max(best.predicted_cost, enumerated);
    auto cheapest = std::min_element(cones.begin(), cones.end(), [](const CountPlan& a, const CountPlan& b) {
      return a.predicted_cost < b.predicted_cost;
    });
    if (cheapest != cones.end() && cheapest->predicted_cost < incumbent) {
      cheapest->plan = std::move(best.plan);
      best = std::move(*cheapest);
    }
  }
  memo[key] = best;
  return best;
}

}  // namespace

CountPlan choose_count_plan(const Pattern& p, Induced induced, const GraphStats& stats, Formula formula) {
  if (!p.connected()) throw UsageError("pattern is not connected");
  if (induced == Induced::vertex) {
    CountPlan cp;
    cp.plan = choose_plan(p, induced, stats, formula);
    cp.predicted_cost = cp.plan.predicted_cost;
    return cp;
  }
  Memo memo;
  return choose(p, stats, formula, memo);
}

std::optional<Decomposition> with_cut_images(const Decomposition& d, const GraphStats& stats) {
  if (summed_directly(d) || d.own_pass() || d.pendant_triangle ||
      std::any_of(d.components.begin(), d.components.end(), [](const auto& c) { return c.common; }))
    return std::nullopt;
  const Pattern cut_pattern = subpattern(d.pattern, d.cut);
  const std::vector<Perm> held = cut_group(automorphisms(d.pattern), d.cut);
  const std::vector<Perm> own = automorphisms(cut_pattern);
  if (own.size() <= held.size() || own.size() > kMaxCutImages * held.size()) return std::nullopt;
  Decomposition widened = d;
  widened.cut_plan = choose_plan_in_group(cut_pattern, own, Induced::edge, stats, Formula::never);
  widened.cut_images = left_coset_representatives(own, held, cut_pattern.size());
  return widened;
}

std::vector<CountPlan> decompositions(const Pattern& p, const GraphStats& stats, Formula formula) {
  Memo memo;
  const auto autos = automorphisms(p);
  const Plan plan = choose_plan(p, Induced::edge, stats, formula);
  std::vector<CountPlan> out;
  std::vector<std::vector<int>> attach;
  for (std::uint32_t cut = 1; cut + 1 < (1u << p.size()); ++cut) {
    auto comps = admissible_components(p, cut, attach);
    if (comps.empty() && !pair_path_cut(p, cut, comps, attach) && !edge_vertex_cut(p, cut, comps, attach)) continue;
    auto cp = decompose_at(p, cut, comps, attach, autos, stats, formula, memo);
    if (!cp) continue;
    out.push_back(std::move(*cp));
    out.back().plan = plan;
  }
  return out;
}

std::optional<CountPlan> edge_vertex_decomposition(const Pattern& p, const GraphStats& stats) {
  std::vector<std::uint32_t> comps;
  std::vector<std::vector<int>> attach;
  for (std::uint32_t cut = 7; cut + 1 < (1u << p.size()); ++cut) {
    if (std::popcount(cut) != 3 || !edge_vertex_cut(p, cut, comps, attach)) continue;
    Memo memo;
    auto cp = decompose_at(p, cut, comps, attach, automorphisms(p), stats, Formula::by_cost, memo);
    if (!cp) continue;
    cp->plan = choose_plan(p, Induced::edge, stats, Formula::by_cost);
    return cp;
  }
  return std::nullopt;
}

std::vector<CountPlan> cone_count_plans(const Pattern& p, const GraphStats& stats, Formula formula, double* enumerated) {
  auto out = priced_cones(p, stats, formula, enumerated);
  for (CountPlan& cp : out) cp.plan = choose_plan(p, Induced::edge, stats, formula);
  return out;
}

namespace {

[[noreturn]] void partial_overflow() { throw DataError("a decomposition's partial sum exceeds 2^126"); }

[[noreturn]] void table_overflow() { throw DataError("the match count exceeds 2^64 - 1 (counts are exact or an error)"); }

// x^r, or an overflow error.
unsigned __int128 checked_power(std::uint64_t x, int r) {
  unsigned __int128 y = 1;
  for (int i = 0; i < r; ++i)
    if (__builtin_mul_overflow(y, static_cast<unsigned __int128>(x), &y)) partial_overflow();
  return y;
}

// The threads' partial sums times `times` (a pair cut's, 2: each sums one orientation of every vertex pair),
// checked against overflow and kept below 2^126 for the signed embedding share.
unsigned __int128 checked_total(const std::vector<unsigned __int128>& sums, unsigned times) {
  unsigned __int128 total = 0;
  for (auto x : sums)
    if (__builtin_add_overflow(total, x, &total)) partial_overflow();
  if (__builtin_mul_overflow(total, static_cast<unsigned __int128>(times), &total) || total >> 126) partial_overflow();
  return total;
}

// R from per-root passes: `times` the sum over this rank's roots a of root(s, a, sum), which adds a's terms to its
// thread's partial sum with its thread's Scratch (a pair cut's: one side of its pairs, times 2); the roots in the
// tasks of `split` where given.
template <class Scratch, class Root>
unsigned __int128 root_sums(const Graph& g, const ExecOptions& opt, unsigned times, const Root& root,
                            const RootSplit* split = nullptr) {
  std::vector<unsigned __int128> sums(opt.threads, 0);
  std::vector<Scratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    unsigned __int128 sum = 0;
    for (Vertex a = begin; a < end; ++a) root(scratch[t], a, sum);
    if (__builtin_add_overflow(sums[t], sum, &sums[t])) partial_overflow();
  }, nullptr, split);
  return checked_total(sums, times);
}

// A pendant path's weights (Decomposition::pendant_path) for a root a and each b on one side of it:
//   V(a, b) = W(a, b) + W(b, a),  W(a, b) = sum over paths a-x-y-b of (deg(x) - 2 - [x ~ b]),
// the pendant z in N(x) other than a, y and b (its piece a, b, x, y, z injective; coincidences with other pieces are
// the quotients'), its two orientations together, so that the pair's other (symmetric) factors are summed once per
// unordered pair. Over the walks a-x-y-b, sum of deg(x) + deg(y) = sum over wedge ends y of (d(a, y) + c(a, y) deg(y))
// added to each b in N(y), d(a, y) = sum over x in N(a) ∩ N(y) of deg(x); the walks a-b-y-b (b ~ a) are not paths:
// deg(b)(deg(b) - 1) + nd(b) - deg(a) of them, nd(b) the sum of b's neighbours' degrees. Then less 4 p3(a, b), and
// less the paths with x ~ b (x in N(a) ∩ N(b), y in N(x) ∩ N(b) - a: sum over x of t(x, b), less c(a, b) where
// a ~ b) and likewise those with y ~ a: tau(a, b) = sum over x in N(a) ∩ N(b) of t(a, x) + t(x, b) (t the edge
// triangle counts), from one more walk over a's wedges.
struct PendantPaths {
  CountTable triangles;                          // t per CSR slot
  std::vector<std::uint64_t> neighbour_degrees;  // nd(v)
  PendantPaths(const Graph& g, const ExecOptions& opt)
      : triangles(edge_triangle_counts(g, whole_graph(opt))), neighbour_degrees(g.n(), 0) {
    for (Vertex v = 0; v < g.n(); ++v)
      for (Vertex w : g.neighbors(v)) neighbour_degrees[v] += g.degree(w);
  }
};

// Per-thread scratch of a pendant path's weights from one root a (zero between roots).
struct alignas(64) PendantPathScratch {
  PopulatedVector<std::uint64_t> degrees;    // d(a, y) per wedge end y
  PopulatedVector<std::uint64_t> triangles;  // tau(a, y) per wedge end y
  PopulatedVector<std::uint64_t> weights;    // per path end b: the walks' degree sums, corrected in add_three_paths
};

// d(a, .) and tau(a, .) over a's wedges (every end).
void walk_pendant_wedges(const Graph& g, const PendantPaths& pp, Vertex a, PendantPathScratch& s) {
  if (s.degrees.empty()) {
    s.degrees.assign(g.n(), 0);
    s.triangles.assign(g.n(), 0);
    s.weights.assign(g.n(), 0);
  }
  for (EdgeIndex i = g.offsets[a]; i < g.offsets[a + 1]; ++i) {
    const Vertex x = g.adj[i];
    const std::uint64_t dx = g.degree(x), tax = pp.triangles[i];
    for (EdgeIndex j = g.offsets[x]; j < g.offsets[x + 1]; ++j) {
      const Vertex y = g.adj[j];
      if (y == a) continue;
      s.degrees[y] += dx;
      s.triangles[y] += tax + pp.triangles[j];
    }
  }
}

// V(a, b) once add_three_paths has filled the weights and paths[b] = p3(a, b).
std::uint64_t pendant_weight(const PendantPathScratch& s, const PopulatedVector<std::uint64_t>& paths, Vertex b) {
  return s.weights[b] - 4 * paths[b] - s.triangles[b];
}

// Clears d(a, .) and tau(a, .) at the wedge ends and the weights at the path ends.
void reset_pendant(PendantPathScratch& s, const WedgeScratch& wedges, const std::vector<Vertex>& path_ends) {
  for (Vertex y : wedges.ends) s.degrees[y] = s.triangles[y] = 0;
  for (Vertex b : path_ends) s.weights[b] = 0;
}

// p3(a, b) for the b on one side of a (b > a where `above`, else b < a) into paths[b] (zero on entry), each b
// touched appended to ends once: the walks a-x-y-b over every wedge end y (wedges: c(a, .) of an unbounded walk),
// less for b ~ a the deg(b) - 1 walks a-b-y-b, which are not paths. With a pendant path also its walks' degree sums
// into its weights, corrected likewise (PendantPaths; walk_pendant_wedges first).
void add_three_paths(const Graph& g, Vertex a, bool above, const WedgeScratch& wedges,
                     PopulatedVector<std::uint64_t>& paths, std::vector<Vertex>& ends,
                     const PendantPaths* pendant = nullptr, PendantPathScratch* ps = nullptr) {
  // The side's part of N(y), each b given c(a, y) (and the pendant's weight): one loop per case, no test inside.
  const auto scan = [&]<bool kWeighted>(std::uint64_t* weights) {
    std::uint64_t* const p3 = paths.data();
    for (Vertex y : wedges.ends) {
      const std::uint64_t c = wedges.common[y];
      const std::uint64_t w = kWeighted ? ps->degrees[y] + c * g.degree(y) : 0;
      const auto add = [&](Vertex b) {
        if (p3[b] == 0) ends.push_back(b);
        p3[b] += c;
        if constexpr (kWeighted) weights[b] += w;
      };
      const auto nb = g.neighbors(y);
      const Vertex *first = nb.data(), *last = first + nb.size();
      if (above)
        for (const Vertex* it = last; it != first && *(it - 1) > a;) add(*--it);
      else
        for (const Vertex* it = first; it != last && *it < a; ++it) add(*it);
    }
  };
  if (pendant)
    scan.template operator()<true>(ps->weights.data());
  else
    scan.template operator()<false>(nullptr);
  for (Vertex b : g.neighbors(a)) {
    if (above ? b <= a : b >= a) continue;
    const std::uint64_t db = g.degree(b);
    paths[b] -= db - 1;
    if (pendant)
      ps->weights[b] -=
          db * (db - 1) + pendant->neighbour_degrees[b] - g.degree(a) - 2 * std::uint64_t{wedges.common[b]};
  }
}

// A pair cut's R (Decomposition::pair_cut): 2 sum over a, b of c(a, b)^r1 p3(a, b)^r2, over b < a
// when r2 = 0 and b > a otherwise (the path ends above the root: fewer, as ids fall with degree).
// With per_vertex (n entries, zero; r2 > 0): per vertex v also its own sum over b != v, each pair's
// term added at both ends (a DataError past 2^64 - 1). With a pendant path, each term times V(a, b)
// (PendantPaths: both orientations, so the sum is not doubled).
unsigned __int128 sum_pair_paths(const Graph& g, int r1, int r2, const ExecOptions& opt,
                                 std::uint64_t* per_vertex = nullptr, const PendantPaths* pendant = nullptr) {
  struct alignas(64) Scratch {
    WedgeScratch wedges;
    PopulatedVector<std::uint64_t> paths;  // p3(a, b), b > a
    std::vector<Vertex> path_ends;
    PendantPathScratch pendant;
  };
  const bool walk_paths = r2 > 0 || pendant;
  std::vector<unsigned __int128> sums(opt.threads, 0);
  std::vector<Scratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    Scratch& s = scratch[t];
    if (walk_paths && s.paths.empty()) s.paths.assign(g.n(), 0);
    unsigned __int128 sum = 0;
    const auto add = [&](std::uint64_t c, std::uint64_t p3, std::uint64_t weight) {
      unsigned __int128 x = checked_power(c, r1);
      if (__builtin_mul_overflow(x, checked_power(p3, r2), &x) ||
          __builtin_mul_overflow(x, static_cast<unsigned __int128>(weight), &x) || __builtin_add_overflow(sum, x, &sum))
        partial_overflow();
      return x;
    };
    // Other roots' entries are shared between threads.
    const auto add_at = [&](Vertex v, unsigned __int128 x) {
      const std::uint64_t old = opt.threads > 1 ? std::atomic_ref<std::uint64_t>(per_vertex[v]).fetch_add(
                                                      static_cast<std::uint64_t>(x), std::memory_order_relaxed)
                                                : std::exchange(per_vertex[v], per_vertex[v] + static_cast<std::uint64_t>(x));
      if (x >> 64 || old + static_cast<std::uint64_t>(x) < old) table_overflow();
    };
    const auto& common = s.wedges.common;
    for (Vertex a = begin; a < end; ++a) {
      walk_wedges(g, a, walk_paths ? g.n() : a, s.wedges);  // every wedge end when paths continue from it
      if (walk_paths) {
        if (pendant) walk_pendant_wedges(g, *pendant, a, s.pendant);
        add_three_paths(g, a, true, s.wedges, s.paths, s.path_ends, pendant, &s.pendant);
        unsigned __int128 at_a = 0;
        for (Vertex b : s.path_ends) {
          const unsigned __int128 x = add(common[b], s.paths[b], pendant ? pendant_weight(s.pendant, s.paths, b) : 1);
          if (per_vertex && x) {
            add_at(b, x);
            at_a += x;
          }
          s.paths[b] = 0;
        }
        if (at_a) add_at(a, at_a);
        if (pendant) reset_pendant(s.pendant, s.wedges, s.path_ends);
        s.path_ends.clear();
      } else {
        for (Vertex b : s.wedges.ends) add(common[b], 1, 1);
      }
      reset_wedges(s.wedges);
    }
    if (__builtin_add_overflow(sums[t], sum, &sums[t])) partial_overflow();
  });
  return checked_total(sums, pendant ? 1 : 2);
}

// e2(a, b) for every b below `bound` added to pairs[b] (b = a too; up to c(a, b)^2, past 32 bits where hubs share
// more than 2^16 neighbours): the ordered pairs (x, y) of adjacent common neighbours of a and b, found from N(a)
// marked in in_a, then for every x in N(a) N(x) marked in in_x and every y in N(a) ∩ N(x) scanning N(y) below bound
// for marked b. in_a and in_x are zero on entry and on return. Every b with e2 > 0 is a wedge end of a. With caps (a
// joined edge x-y with a cap z adjacent to a, x and y), also Z(a, b) added to caps[b]: per such pair (x, y) the
// vertices z != b in N(a) ∩ N(x) ∩ N(y), whose number k (a's 4-cliques through the triangle a-x-y) one scan of N(y)
// more counts first; b itself is one of them where b ~ a. Both terms are symmetric in x and y, so each pair is
// scanned once, from y > x (the shorter list under degree order), and added twice.
void add_joined_pairs(const Graph& g, Vertex a, Vertex bound, PopulatedVector<std::uint64_t>& pairs,
                      PopulatedVector<std::uint8_t>& in_a, PopulatedVector<std::uint8_t>& in_x,
                      PopulatedVector<std::uint64_t>* caps = nullptr) {
  const auto na = g.neighbors(a);
  for (Vertex x : na) in_a[x] = 1;
  for (Vertex x : na) {
    const auto nx = g.neighbors(x);
    for (Vertex y : nx) in_x[y] = 1;
    for (Vertex y : nx) {
      if (!in_a[y]) continue;
      const auto ny = g.neighbors(y);
      if (caps) {
        if (y < x) continue;  // (y, x) counted with (x, y), from the shorter list under degree order
        std::uint64_t k = 0;
        for (Vertex z : ny) k += in_x[z] & in_a[z];
        for (Vertex b : ny) {
          if (b >= bound) break;
          pairs[b] += 2 * in_x[b];
          (*caps)[b] += 2 * in_x[b] * (k - in_a[b]);  // 0 unless b ~ x (k >= 1 where b ~ a too)
        }
        continue;
      }
      for (Vertex b : ny) {
        if (b >= bound) break;
        pairs[b] += in_x[b];
      }
    }
    for (Vertex y : nx) in_x[y] = 0;
  }
  for (Vertex x : na) in_a[x] = 0;
}

// A pair cut with joined edges (Decomposition::edge_power r2, common_power r1, path3_power r3): R = 2 sum
// over b < a of c(a, b)^r1 e2(a, b)^r2 p3(a, b)^r3 (with a pendant path not doubled, each term times V(a, b):
// PendantPaths). Per root a: c(a, b) from the wedge walks below a (every wedge end, with paths: add_three_paths
// below a); e2(a, b) = the ordered pairs (x, y) of adjacent common
// neighbours, found from N(a) marked, then for every x in N(a) N(x) marked and every y in N(a) ∩ N(x) scanning
// N(y) below a for marked b. Every b with e2 > 0 is a wedge end below a, whose entries are summed and cleared.
// With a cap (Decomposition::capped_edge; no paths) the weight Z(a, b) is not symmetric: R = the sum over every
// ordered pair, each term times Z(a, b) (add_joined_pairs), from walks that reach every b.
unsigned __int128 sum_pair_edges(const Graph& g, int r1, int r2, int r3, bool capped, const ExecOptions& opt,
                                 const PendantPaths* pendant = nullptr) {
  struct alignas(64) Scratch {
    WedgeScratch wedges;
    PopulatedVector<std::uint64_t> pairs;      // e2(a, b), b < a (with a cap every b)
    PopulatedVector<std::uint8_t> in_a, in_x;  // N(a), N(x) marked
    PopulatedVector<std::uint64_t> paths;      // p3(a, b), b < a
    PopulatedVector<std::uint64_t> caps;       // Z(a, b), every b
    std::vector<Vertex> path_ends;
    PendantPathScratch pendant;
  };
  const bool walk_paths = r3 > 0 || pendant;
  return root_sums<Scratch>(g, opt, pendant || capped ? 1 : 2, [&](Scratch& s, Vertex a, unsigned __int128& sum) {
    if (s.pairs.empty()) {
      s.pairs.assign(g.n(), 0);
      s.in_a.assign(g.n(), 0);
      s.in_x.assign(g.n(), 0);
      if (walk_paths) s.paths.assign(g.n(), 0);
      if (capped) s.caps.assign(g.n(), 0);
    }
    walk_wedges(g, a, walk_paths || capped ? g.n() : a, s.wedges);
    if (s.wedges.ends.empty()) return;
    if (pendant) walk_pendant_wedges(g, *pendant, a, s.pendant);
    if (walk_paths) add_three_paths(g, a, false, s.wedges, s.paths, s.path_ends, pendant, &s.pendant);
    add_joined_pairs(g, a, capped ? g.n() : a, s.pairs, s.in_a, s.in_x, capped ? &s.caps : nullptr);
    for (Vertex b : s.wedges.ends) {
      if (b > a && !capped) continue;  // ends above a: from the unbounded walk for the paths
      unsigned __int128 x = checked_power(s.wedges.common[b], r1);
      const unsigned __int128 weight = pendant ? pendant_weight(s.pendant, s.paths, b) : capped ? s.caps[b] : 1;
      if (__builtin_mul_overflow(x, checked_power(s.pairs[b], r2), &x) ||
          (r3 && __builtin_mul_overflow(x, checked_power(s.paths[b], r3), &x)) ||
          __builtin_mul_overflow(x, weight, &x) || __builtin_add_overflow(sum, x, &sum))
        partial_overflow();
      s.pairs[b] = 0;
      if (capped) s.caps[b] = 0;
    }
    if (capped) s.pairs[a] = s.caps[a] = 0;  // the scans reach a itself, no wedge end
    for (Vertex b : s.path_ends) s.paths[b] = 0;
    if (pendant) reset_pendant(s.pendant, s.wedges, s.path_ends);
    s.path_ends.clear();
    reset_wedges(s.wedges);
  });
}

// One root's terms of a pendant triangle cut's R: for every b in N(a) and every edge (x, y) among N(b) without a,
// c^px(x) c^py(y) + c^px(y) c^py(x) (both orders), c = c(a, .). With px + py <= 2 each product is below 2^64 (c <
// 2^32) and is taken in 64 bits; each term is below 2^97 and the root's sum below 2^125 (its terms are at most the
// lists' 2^28 edges, kTriangleListBytes).
template <int kPx, int kPy>
unsigned __int128 pendant_triangle_root(const Graph& g, const TriangleEdges& te, Vertex a, const std::uint32_t* c) {
  using Product = std::conditional_t<kPx + kPy <= 2, std::uint64_t, unsigned __int128>;
  const auto term = [](Product u, Product v) {
    Product y = 1;
    for (int i = 0; i < kPx; ++i) y *= u;
    for (int i = 0; i < kPy; ++i) y *= v;
    return y;
  };
  unsigned __int128 sum = 0;
  for (Vertex b : g.neighbors(a)) {
    const auto e = te.at(b);
    for (std::size_t i = 0; i < e.size(); i += 2) {
      const Vertex x = e[i], y = e[i + 1];
      if (x == a || y == a) continue;
      sum += static_cast<unsigned __int128>(term(c[x], c[y])) + term(c[y], c[x]);
    }
  }
  return sum;
}

// The table of a diamond hanging off an edge by a tip's neighbour (rooted_tip_diamond): for the edge (u, w), the maps
// (v2, v3, v4) with v2 in N(u) - w and (v3, v4) an ordered adjacent pair of common neighbours of v2 and w other than
// u. u is always one of those common neighbours, paired with each of N(u) ∩ N(v2) ∩ N(w), so
//   T(u, w) = sum over v2 in N(u) - w of e2(w, v2) - 2 sum over v4 in N(u) ∩ N(w) of (t(u, v4) - 1)
// (the pairs through u counted from its side: v2 ranges over N(u) ∩ N(v4) - w). Per root w: e2(w, .) from its
// joined pairs over every b (add_joined_pairs), N(w) marked, then for every u in N(w) one scan of N(u) that sums
// e2 and, at the marked v4, the triangle table t (CSR slots); e2 cleared by a second scan. The sum for (u, w) lands
// at the slot of w's row; at u's (the table indexed from the tip's neighbour first) after a transposition.
CountTable tip_diamond_edge_table(const Graph& g, const CountTable& t, bool tip_neighbour_first, const ExecOptions& opt) {
  CountTable table(g.adj.size(), 0);  // each slot written once, by one root
  struct alignas(64) Scratch {
    PopulatedVector<std::uint64_t> pairs;  // e2(w, .)
    PopulatedVector<std::uint8_t> in_w, in_x;
  };
  std::vector<Scratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int th, Vertex begin, Vertex end) {
    Scratch& s = scratch[th];
    if (s.pairs.empty()) {
      s.pairs.assign(g.n(), 0);
      s.in_w.assign(g.n(), 0);
      s.in_x.assign(g.n(), 0);
    }
    for (Vertex w = begin; w < end; ++w) {
      add_joined_pairs(g, w, g.n(), s.pairs, s.in_w, s.in_x);
      const auto nw = g.neighbors(w);
      for (Vertex u : nw) s.in_w[u] = 1;
      for (std::size_t j = 0; j < nw.size(); ++j) {
        const Vertex u = nw[j];
        const auto nu = g.neighbors(u);
        __int128 sum = 0;
        for (std::size_t i = 0; i < nu.size(); ++i) {
          const Vertex v = nu[i];
          if (v == w) continue;
          sum += s.pairs[v];
          if (s.in_w[v]) sum -= 2 * (static_cast<__int128>(t[g.offsets[u] + i]) - 1);
        }
        if (sum < 0) throw std::logic_error("tip_diamond_edge_table: negative count");
        if (sum > static_cast<__int128>(~std::uint64_t{0})) table_overflow();
        table[g.offsets[w] + j] = static_cast<std::uint64_t>(sum);
      }
      for (Vertex u : nw) {
        s.in_w[u] = 0;
        for (Vertex v : g.neighbors(u)) s.pairs[v] = 0;
      }
    }
  });
  return tip_neighbour_first ? transposed_edge_table(g, table, opt) : table;
}

// R of a pendant triangle cut (Decomposition::pendant_triangle): per root a, c(a, .) from its full wedge walk, then
// pendant_triangle_root (R is the same with px and py swapped: both orders are summed). Roots in chunks of about
// equal work (their walks and the lists they read).
unsigned __int128 sum_pendant_triangles(const Graph& g, const TriangleEdges& te, const Decomposition::PendantTriangle& t,
                                        const ExecOptions& opt) {
  const int px = std::max(t.power_x, t.power_y), py = std::min(t.power_x, t.power_y);
  // px + py <= 3 (seven pattern vertices, four in the cut), 2 or more (two components or more).
  const auto root = px == 1 ? pendant_triangle_root<1, 1>
                    : px == 2 ? (py ? pendant_triangle_root<2, 1> : pendant_triangle_root<2, 0>)
                    : px == 3 && !py ? pendant_triangle_root<3, 0>
                                     : nullptr;
  if (!root || px + py < 2) throw std::logic_error("sum_pendant_triangles: not two or three components");
  std::vector<std::uint64_t> work(g.n());
  for (Vertex a = 0; a < g.n(); ++a) {
    work[a] = 1;
    for (Vertex b : g.neighbors(a)) work[a] += g.degree(b) + (te.first[b + 1] - te.first[b]);
  }
  const RootSplit chunks = chunk_roots(work, opt.threads * opt.world_size);
  return root_sums<WedgeScratch>(g, opt, 1, [&](WedgeScratch& w, Vertex a, unsigned __int128& sum) {
    walk_wedges(g, a, g.n(), w);
    if (__builtin_add_overflow(sum, root(g, te, a, w.common.data()), &sum)) partial_overflow();
    reset_wedges(w);
  }, &chunks);
}

// The 4-cycle's pair cut (Decomposition::common_power 2 alone): R = sum over a != b of c(a, b)^2 =
// 8 C4 + sum over w of deg(w)(deg(w) - 1) (the ordered pairs of distinct common neighbours are the
// embeddings; c(a, b) alone counts the wedges a-w-b). C4 is counted at each cycle's smallest id a,
// opposite y: C4 = sum over a < y of C(c+(a, y), 2), c+ counting the common neighbours w > a
// (walk_upper_wedges, as four_cycle_table); the full c(a, b) of every wedge would take m d steps (d
// the size-biased degree).
unsigned __int128 sum_pair_four_cycles(const Graph& g, const ExecOptions& opt) {
  std::vector<unsigned __int128> sums(opt.threads, 0);
  std::vector<WedgeScratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    WedgeScratch& s = scratch[t];
    unsigned __int128 sum = 0;
    for (Vertex a = begin; a < end; ++a) {
      walk_upper_wedges(g, a, s);
      for (Vertex y : s.ends) {
        const std::uint64_t c = s.common[y];
        sum += static_cast<unsigned __int128>(c) * (c - 1) / 2;
      }
      reset_wedges(s);
    }
    sums[t] += sum;
  });
  unsigned __int128 cycles = 0, relaxed = 0;
  for (auto x : sums) cycles += x;
  if (opt.rank == 0)  // the wedge term once, in rank 0's share
    for (Vertex w = 0; w < g.n(); ++w) relaxed += static_cast<unsigned __int128>(g.degree(w)) * (g.degree(w) - 1);
  if (cycles >> 120) partial_overflow();
  return relaxed + 8 * cycles;
}

// A pair cut's R with paths of three inner vertices (Decomposition::path4_power > 0): 2 sum over
// a < b of c(a, b)^r1 p3(a, b)^r2 p4(a, b)^r3. Per root a: c(a, .) from the wedge walks; p3(a, z)
// for every z != a (the paths a-x-y-z continue below the root too); S(b) = sum over z in N(b) of
// p3(a, z) for b > a, which counts the paths a-x-y-z plus an edge z-b, so p4(a, b) = S(b) less the
// walks that return to b: as x (b ~ a; a-b-y-z-b with y ~ z in N(b) - a: 2 (tri(b) - c(a, b))
// ordered pairs) and as y (a-x-b-z-b with x a common neighbour and z in N(b) - x - a:
// c(a, b)(deg(b) - 1 - [b ~ a])).
unsigned __int128 sum_pair_long_paths(const Graph& g, int r1, int r2, int r3, const ExecOptions& opt) {
  const CountTable tri = vertex_triangle_counts(g, whole_graph(opt));
  struct alignas(64) Scratch {
    PathScratch paths;                   // c(a, .) and p3(a, .)
    PopulatedVector<std::uint64_t> p4;   // S(b), then p4(a, b), for b > a
    std::vector<Vertex> p4_ends;
    PopulatedVector<std::uint8_t> adjacent;  // N(a) marked
  };
  return root_sums<Scratch>(g, opt, 2, [&](Scratch& s, Vertex a, unsigned __int128& sum) {
    if (s.p4.empty()) {
      s.p4.assign(g.n(), 0);
      s.adjacent.assign(g.n(), 0);
    }
    const auto& common = s.paths.wedges.common;
    walk_three_paths(g, a, s.paths);
    for (Vertex z : g.neighbors(a)) s.adjacent[z] = 1;
    for (Vertex z : s.paths.p3_ends) {
      const std::uint64_t p3 = s.paths.p3[z];
      if (p3 == 0) continue;
      const auto nb = g.neighbors(z);
      for (auto it = nb.end(); it != nb.begin() && *(it - 1) > a;) {
        const Vertex b = *--it;
        if (s.p4[b] == 0) s.p4_ends.push_back(b);
        if (__builtin_add_overflow(s.p4[b], p3, &s.p4[b])) table_overflow();
      }
    }
    for (Vertex b : s.p4_ends) {
      const std::uint64_t c = common[b], adj = s.adjacent[b];
      const std::uint64_t p4 = s.p4[b] - (adj ? 2 * (tri[b] - c) : 0) - c * (g.degree(b) - 1 - adj);
      unsigned __int128 x = checked_power(c, r1);
      if (__builtin_mul_overflow(x, checked_power(s.paths.p3[b], r2), &x) ||
          __builtin_mul_overflow(x, checked_power(p4, r3), &x) || __builtin_add_overflow(sum, x, &sum))
        partial_overflow();
      s.p4[b] = 0;
    }
    for (Vertex z : g.neighbors(a)) s.adjacent[z] = 0;
    s.p4_ends.clear();
    reset_three_paths(s.paths);
  });
}

// The table of a component that is K_{2,r} rooted at one of its two vertices of degree r
// (rooted_common_power): per vertex v, sum over b != v of c(v, b)(c(v, b) - 1)...(c(v, b) - r + 1),
// the embeddings (r distinct common neighbours in order), from the wedge walks of v.
CountTable rooted_pair_star_counts(const Graph& g, int r, const ExecOptions& opt) {
  CountTable ext(g.n(), 0);
  std::vector<WedgeScratch> scratch(opt.threads);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    WedgeScratch& s = scratch[t];
    for (Vertex v = begin; v < end; ++v) {
      walk_wedges(g, v, g.n(), s);
      std::uint64_t sum = 0;
      for (Vertex b : s.ends) {
        std::uint64_t x = 1;
        for (std::uint64_t c = s.common[b], i = 0; i < static_cast<std::uint64_t>(r); ++i)
          if (__builtin_mul_overflow(x, c > i ? c - i : 0, &x)) table_overflow();
        if (__builtin_add_overflow(sum, x, &sum)) table_overflow();
      }
      ext[v] = sum;
      reset_wedges(s);
    }
  });
  return ext;
}

// The table of a 5-cycle rooted at a vertex (rooted_cycle_length): per v its embeddings 2 C5(v) =
// R(v) - D(v). R(v) = sum over b != v of c(v, b) p3(v, b) (the 5-cycle's pair cut at v and a vertex b
// two steps away, either way round: sum_pair_paths per vertex) counts the maps (w, b, x, y) with
// v-w-b and a path v-x-y-b; D(v) those that fold w onto the path: w = x (a triangle x-y-b hanging off
// v, 2 (tri(x) - t(v, x)) per x ~ v) or w = y (a triangle v-x-y and b another neighbour of y,
// t(v, y)(deg(y) - 2) per y ~ v), so D(v) = sum over y ~ v of 2 tri(y) + t(v, y)(deg(y) - 4).
// The triangles come from the cut's one oriented pass (`ot`).
CountTable five_cycle_vertex_table(const Graph& g, const OrientedTriangles& ot, const ExecOptions& opt) {
  CountTable table(g.n(), 0);
  sum_pair_paths(g, 1, 1, opt, table.data());
  const CountTable tri = vertex_triangle_counts(g, ot);
  PopulatedVector<__int128> folded(g.n());
  for (Vertex v = 0; v < g.n(); ++v)
    for (std::uint32_t i = 0; i < ot.lower[v]; ++i) {
      const Vertex u = g.adj[g.offsets[v] + i];
      const auto t = static_cast<__int128>(ot.t[ot.first[v] + i]);
      folded[v] += 2 * static_cast<__int128>(tri[u]) + t * (static_cast<__int128>(g.degree(u)) - 4);
      folded[u] += 2 * static_cast<__int128>(tri[v]) + t * (static_cast<__int128>(g.degree(v)) - 4);
    }
  for (Vertex v = 0; v < g.n(); ++v) {
    const __int128 x = static_cast<__int128>(table[v]) - folded[v];
    if (x < 0 || x % 2) throw std::logic_error("five_cycle_vertex_table: inconsistent fold counts");
    table[v] = static_cast<std::uint64_t>(x);
  }
  return table;
}

// Threads for one pass over the CSR: one below kSerialSlots slots (a few ms), where starting and
// joining threads costs more than it saves (on a loaded machine a new thread waits for a core).
constexpr std::size_t kSerialSlots = std::size_t{1} << 22;
int linear_pass_threads(const Graph& g, const ExecOptions& opt) { return g.adj.size() < kSerialSlots ? 1 : opt.threads; }

// One component's table in R's product: indexed by the graph vertex of cut vertex a, or by the CSR
// slot of the edge between those of cut vertices a and b.
struct Factor {
  const std::uint64_t* table;
  int a, b;                // indices of the attachments in the cut; b = -1 for one
  bool symmetric = false;  // an edge's table with t(v, w) = t(w, v) (swaps_roots)
};

// Whether an automorphism of a rooted table plan's pattern swaps its roots 0 and 1 (an edge's table that is then
// symmetric: its embeddings with the roots at (v, w) map onto those at (w, v)).
bool swaps_roots(const Plan& table) {
  const auto autos = automorphisms(table.pattern);
  return std::any_of(autos.begin(), autos.end(), [](const Perm& a) { return a[0] == 1 && a[1] == 0; });
}

[[noreturn]] void product_overflow() { throw DataError("a decomposition's partial product exceeds 2^128"); }

// The sum over the vertices v of add(v, sum) (which adds v's terms to its thread's partial sum), in
// one pass over the CSR (linear_pass_threads).
template <class Add>
unsigned __int128 sum_over_vertices(const Graph& g, ExecOptions opt, const Add& add) {
  opt.threads = linear_pass_threads(g, opt);
  std::vector<unsigned __int128> sums(opt.threads, 0);
  parallel_roots(g.n(), opt, [&](int t, Vertex begin, Vertex end) {
    unsigned __int128 sum = 0;
    for (Vertex v = begin; v < end; ++v) add(v, sum);
    if (__builtin_add_overflow(sums[t], sum, &sums[t])) partial_overflow();
  });
  unsigned __int128 total = 0;
  for (auto s : sums)
    if (__builtin_add_overflow(total, s, &total) || total >> 126) partial_overflow();
  return total;
}

// sum += the product of the factors, value(f) being factor f's table entry.
template <class Value>
void add_product(const std::vector<Factor>& factors, const Value& value, unsigned __int128& sum) {
  unsigned __int128 w = 1;
  for (const Factor& f : factors)
    if (__builtin_mul_overflow(w, static_cast<unsigned __int128>(value(f)), &w)) product_overflow();
  if (__builtin_add_overflow(sum, w, &sum)) partial_overflow();
}

// R of a cut of one vertex (sum over vertices v of the product of the tables at v) or of one edge
// (sum over CSR slots s = (v, u), both directions being embeddings, of the tables at v, u or s), in
// one pass (summed_directly).
unsigned __int128 direct_cut_sum(const Graph& g, const std::vector<Factor>& factors, bool edge, const ExecOptions& opt) {
  return sum_over_vertices(g, opt, [&](Vertex v, unsigned __int128& sum) {
    if (!edge) return add_product(factors, [&](const Factor& f) { return f.table[v]; }, sum);
    for (EdgeIndex s = g.offsets[v]; s < g.offsets[v + 1]; ++s)
      add_product(factors, [&](const Factor& f) { return f.table[f.b >= 0 ? s : f.a == 0 ? v : g.adj[s]]; }, sum);
  });
}

// R of an edge cut whose edge factors are all triangle counts t (symmetric: the same for (v, u) and
// (u, v)): one pass over the oriented edges, each giving the products for both directions.
unsigned __int128 oriented_edge_cut_sum(const Graph& g, const OrientedTriangles& ot, const std::vector<Factor>& factors,
                                        const ExecOptions& opt) {
  return sum_over_vertices(g, opt, [&](Vertex v, unsigned __int128& sum) {
    for (std::uint32_t i = 0; i < ot.lower[v]; ++i) {
      const Vertex u = g.adj[g.offsets[v] + i];
      const std::uint64_t t = ot.t[ot.first[v] + i];
      for (const auto& [a, b] : {std::pair{v, u}, std::pair{u, v}})
        add_product(factors, [&](const Factor& f) { return f.b >= 0 ? t : f.table[f.a == 0 ? a : b]; }, sum);
    }
  });
}

// Per worker of a weighed cut enumeration: the common-neighbour counts of the components counted in the cut
// (Decomposition::Component::common): from the set a cut level built of the common neighbours of part of the
// attachment (common_set_level; its size where that part is all of it), merged with the rest's lists, and kept for
// the attachment's last images, which the following matches of one prefix share.
class CommonCounts {
 public:
  CommonCounts(const Graph& g, const Decomposition& d) : g_(g) {
    const Plan& plan = d.cut_plan;
    for (const auto& c : d.components) {
      if (!c.common) continue;
      Counted x;
      const std::uint32_t set = cut_index_mask(d.cut, c.attach);
      x.label = d.pattern.label(c.vertices[0]);
      std::uint32_t rest = set;
      if (const int level = common_set_level(plan, set); level >= 0) {
        x.built = plan.order[level];
        for (int j = 0; j < level; ++j)
          if (plan.pattern.has_edge(plan.order[j], x.built)) rest &= ~(1u << plan.order[j]);
      }
      x.rest = members(rest);
      x.all = members(set);
      // The root and one other vertex, any label: the root's wedge table (Plan::weigh_root_common).
      if (plan.weigh_root_common && x.label < 0 && x.all.size() == 2 && ((set >> plan.order[0]) & 1u))
        x.looked_up = x.all[0] + x.all[1] - plan.order[0];
      for (std::size_t j = 0; j < counted_.size() && x.same_as < 0; ++j)
        if (counted_[j].all == x.all && counted_[j].label == x.label) x.same_as = static_cast<int>(j);
      counted_.push_back(std::move(x));
    }
  }
  std::size_t size() const { return counted_.size(); }

  // Component i's count for the cut match m (its vertices: the graph vertex of each cut index).
  std::uint64_t count(std::size_t i, const WeighedMatch& m) {
    Counted& x = counted_[i];
    if (x.same_as >= 0) return counted_[x.same_as].count;  // counted just before, for the same match
    if (x.looked_up >= 0) return x.count = m.root_common[m.vertices[x.looked_up]];
    if (x.built >= 0 && x.rest.empty() && x.label < 0) return x.count = m.sets[x.built].size();
    bool same = x.valid;
    for (std::size_t j = 0; j < x.all.size(); ++j) {
      same = same && x.images[j] == m.vertices[x.all[j]];
      x.images[j] = m.vertices[x.all[j]];
    }
    if (!same) x.count = common_neighbours(x, m);
    x.valid = true;
    return x.count;
  }

 private:
  struct Counted {
    int label = -1;
    int built = -1;         // the cut index whose candidate set holds the common neighbours of part of it, or -1
    std::vector<int> rest;  // the attachment's other cut indices, whose lists are merged
    std::vector<int> all;   // the attachment's cut indices
    int looked_up = -1;     // all = the root and this cut index: the count is the root's wedge table's, or -1
    int same_as = -1;       // an earlier component with the same attachment and label, or -1
    std::array<Vertex, kMaxPatternSize> images{};  // of all, at the last count
    bool valid = false;
    std::uint64_t count = 0;
  };

  // |the built set (or the first list) ∩ the rest's lists| (of x.label), the lists merged from the shortest.
  std::uint64_t common_neighbours(const Counted& x, const WeighedMatch& m) {
    std::array<Vertex, kMaxPatternSize> by_degree{};
    const std::size_t r = x.rest.size();
    for (std::size_t j = 0; j < r; ++j) by_degree[j] = m.vertices[x.rest[j]];
    std::sort(by_degree.begin(), by_degree.begin() + static_cast<std::ptrdiff_t>(r),
              [&](Vertex a, Vertex b) { return g_.degree(a) < g_.degree(b); });
    const auto list = [&](std::size_t j) { return g_.neighbors(by_degree[j]); };
    std::span<const Vertex> first = x.built >= 0 ? m.sets[x.built] : list(0);
    const std::size_t from = x.built >= 0 ? 0 : 1;
    const bool labeled = x.label >= 0;
    if (set_.size() < first.size() + gzk::kSlack) set_.resize(first.size() + gzk::kSlack), next_.resize(set_.size());
    const Vertex* p = first.data();
    std::size_t n = first.size();
    for (std::size_t j = from; j < r && n; ++j) {
      if (j + 1 == r && !labeled) return gzk::intersect_count(p, n, list(j).data(), list(j).size());
      n = gzk::intersect(p, n, list(j).data(), list(j).size(), next_.data());
      std::swap(set_, next_);
      p = set_.data();
    }
    if (!labeled) return n;
    return static_cast<std::uint64_t>(std::count_if(p, p + n, [&](Vertex v) { return g_.labels[v] == x.label; }));
  }

  const Graph& g_;
  std::vector<Counted> counted_;
  std::vector<Vertex> set_, next_;
};

// Embedding shares known within one embedding_share (canonical pattern -> this rank's share): the
// triangles, from a triangle table's sum; a quotient that several decompositions subtract, counted once.
using KnownCounts = std::map<std::string, __int128>;

// R of a connected cut: the cut plan's matches weighted by the components' tables.
unsigned __int128 connected_cut_sum(const Graph& g, const Decomposition& d, const ExecOptions& opt, KnownCounts& known) {
  const auto overflow = [] { throw DataError("the match count exceeds 2^64 - 1 (counts are exact or an error)"); };
  const ExecOptions whole = whole_graph(opt);
  if (d.pendant_triangle)
    if (const auto te = triangle_edge_lists(g, whole, kTriangleListBytes))
      return sum_pendant_triangles(g, *te, *d.pendant_triangle, opt);
  // ext[t][v] (one attachment) or ext[t][offsets[v] + rank of w in N(v)] (two, the edge v-w):
  // embeddings of table t's rooted pattern with its first levels at v (and w).
  std::vector<CountTable> ext(d.tables.size());
  // One oriented triangle pass serves every triangle table (and gives the triangle count).
  std::optional<OrientedTriangles> tri;
  const auto triangles = [&]() -> const OrientedTriangles& {
    if (!tri) {
      tri = oriented_triangle_counts(g, whole);
      // The triangles' embeddings (|Aut| = 6), all of them in rank 0's share.
      known[canonical_form(named_pattern("triangle")).to_string()] =
          opt.rank == 0 ? 6 * static_cast<__int128>(tri->triangles()) : 0;
    }
    return *tri;
  };
  // One local-graph pass per clique size serves its clique tables (and gives the clique count).
  std::map<int, OrientedCliques> cliques;
  const auto clique_pass = [&](const Plan& t) -> const OrientedCliques& {
    const int k = t.size();
    auto it = cliques.find(k);
    if (it == cliques.end()) {
      it = cliques.emplace(k, oriented_clique_counts(g, k, whole)).first;
      __int128 embeddings = static_cast<__int128>(it->second.cliques());
      for (int f = 2; f <= k; ++f) embeddings *= f;  // |Aut| = k!
      known[canonical_form(t.pattern).to_string()] = opt.rank == 0 ? embeddings : 0;
    }
    return it->second;
  };
  const auto triangle_table = [&](const Decomposition::Component& c) {
    return is_rooted_triangle(d.tables[c.table], static_cast<int>(c.attach.size()));
  };
  // An edge cut whose edge tables all count triangles (symmetric) is summed over the oriented edges,
  // without a CSR-wide table.
  const bool oriented = summed_directly(d) && d.cut.size() == 2 &&
                        std::all_of(d.components.begin(), d.components.end(),
                                    [&](const auto& c) { return c.attach.size() == 1 || triangle_table(c); }) &&
                        std::any_of(d.components.begin(), d.components.end(),
                                    [&](const auto& c) { return c.attach.size() == 2; });
  for (const auto& c : d.components) {
    if (c.common) continue;
    const Plan& t = d.tables[c.table];
    if (!ext[c.table].empty()) continue;
    const int fixed = static_cast<int>(c.attach.size());
    if (triangle_table(c)) {  // embeddings: 2 tri(v) (root v and either order of the rest), t(v, w)
      if (fixed == 1) {
        ext[c.table] = vertex_triangle_counts(g, triangles());
        for (auto& x : ext[c.table]) x *= 2;
      } else {
        const OrientedTriangles& ot = triangles();
        if (!oriented) ext[c.table] = edge_triangle_counts(g, ot);
      }
      continue;
    }
    if (const int k = rooted_clique_size(t, fixed)) {  // embeddings: (k-1)! cliques through v, (k-2)! through (v, w)
      const OrientedCliques& oc = clique_pass(t);
      ext[c.table] = fixed == 1 ? vertex_clique_counts(g, oc) : edge_clique_counts(g, oc);
      std::uint64_t orders = 1;
      for (int f = 2; f <= k - fixed; ++f) orders *= f;
      for (auto& x : ext[c.table])
        if (__builtin_mul_overflow(x, orders, &x)) overflow();
      continue;
    }
    if (is_pendant(t, fixed)) {  // one vertex hanging off the cut vertex: its degree
      ext[c.table].resize(g.n());
      for (Vertex v = 0; v < g.n(); ++v) ext[c.table][v] = g.degree(v);
      continue;
    }
    if (const int r = rooted_square_pendant(t, fixed)) {  // a 4-cycle with a pendant through the edge
      ext[c.table] = square_pendant_edge_table(g, r == 2, whole);
      continue;
    }
    if (const int k = rooted_cycle_length(t, fixed)) {  // cycles through each vertex or edge, from walks
      ext[c.table] = k == 4      ? four_cycle_table(g, fixed == 2, whole)
                     : fixed == 2 ? five_cycle_edge_table(g, triangles(), whole)
                                  : five_cycle_vertex_table(g, triangles(), whole);
      // The sum over the table is the cycle's embeddings (2k per cycle: k vertices or 2k edge slots,
      // times 2 or 1), all of them in rank 0's share.
      unsigned __int128 cycles = 0;
      for (std::uint64_t x : ext[c.table]) cycles += x;
      known[canonical_form(t.pattern).to_string()] = opt.rank == 0 ? static_cast<__int128>(cycles) : 0;
      continue;
    }
    if (const int r = rooted_tip_diamond(t, fixed)) {  // a diamond off the edge by a tip's neighbour
      ext[c.table] = tip_diamond_edge_table(g, edge_triangle_counts(g, triangles()), r == 1, whole);
      continue;
    }
    if (const int r = rooted_common_power(t, fixed)) {  // K_{2,r} at the vertex: from its wedge walks
      ext[c.table] = rooted_pair_star_counts(g, r, whole);
      continue;
    }
    const ExecOptions& fill = opt.sampled_tables ? opt : whole;
    ext[c.table] = fixed == 1 ? count_per_root(g, t, fill) : count_per_edge(g, t, fill);
    if (d.reversed[c.table]) ext[c.table] = transposed_edge_table(g, ext[c.table], whole);
    for (auto& x : ext[c.table])
      if (__builtin_mul_overflow(x, t.automorphisms, &x)) overflow();
  }
  std::vector<Factor> factors;
  auto cut_index = [&](int v) { return static_cast<int>(std::find(d.cut.begin(), d.cut.end(), v) - d.cut.begin()); };
  for (const auto& c : d.components)
    if (!c.common)
      factors.push_back({ext[c.table].data(), cut_index(c.attach[0]), c.attach.size() == 2 ? cut_index(c.attach[1]) : -1,
                         c.attach.size() == 2 && swaps_roots(d.tables[c.table])});
  if (oriented) return oriented_edge_cut_sum(g, *tri, factors, opt);
  if (summed_directly(d)) return direct_cut_sum(g, factors, d.cut.size() == 2, opt);
  std::vector<std::optional<CommonCounts>> common(opt.threads);  // per worker
  // The product of the tables at the cut vertices m[r[0]], m[r[1]], ...; `slots` (k x k cut indices, kNoSlot where
  // unknown) keeps the edges' table slots found by earlier factors and images of the call, keyed by the ends' cut
  // indices (in ascending order for a symmetric table).
  constexpr std::size_t kNoSlot = ~std::size_t{0};
  const std::size_t k = d.cut.size();
  const auto table_product = [&](std::span<const Vertex> m, const Perm& r, std::size_t* slots) -> unsigned __int128 {
    unsigned __int128 w = 1;
    for (const Factor& f : factors) {
      std::size_t at = m[r[f.a]];
      if (f.b >= 0) {
        int x = r[f.a], y = r[f.b];
        if (f.symmetric && x > y) std::swap(x, y);
        std::size_t& slot = slots[x * k + y];
        if (slot == kNoSlot) {
          const auto nb = g.neighbors(m[x]);
          slot = g.offsets[m[x]] + static_cast<std::size_t>(std::lower_bound(nb.begin(), nb.end(), m[y]) - nb.begin());
        }
        at = slot;
      }
      if (__builtin_mul_overflow(w, static_cast<unsigned __int128>(f.table[at]), &w)) product_overflow();
      if (w == 0) return 0;
    }
    return w;
  };
  Perm identity{};
  std::iota(identity.begin(), identity.end(), std::uint8_t{0});
  const bool edges = std::any_of(factors.begin(), factors.end(), [](const Factor& f) { return f.b >= 0; });
  const WeightFn weight = [&](const WeighedMatch& match) -> unsigned __int128 {
    const auto m = match.vertices;
    std::array<std::size_t, kMaxPatternSize * kMaxPatternSize> slots;
    if (edges) std::fill_n(slots.begin(), k * k, kNoSlot);
    if (!d.cut_images.empty()) {  // no common counts
      unsigned __int128 sum = 0;
      for (const Perm& r : d.cut_images)
        if (__builtin_add_overflow(sum, table_product(m, r, slots.data()), &sum)) product_overflow();
      return sum;
    }
    unsigned __int128 w = table_product(m, identity, slots.data());
    if (w == 0) return 0;
    auto& counts = common[match.thread];
    if (!counts) counts.emplace(g, d);
    for (std::size_t i = 0; i < counts->size(); ++i) {
      if (__builtin_mul_overflow(w, static_cast<unsigned __int128>(counts->count(i, match)), &w)) product_overflow();
      if (w == 0) return 0;
    }
    return w;
  };
  // An edge's common neighbours that the cut plan would merge under several prefixes are listed once (q062).
  std::optional<EdgeCommonLists> lists;
  if (merges_edge_common(d.cut_plan)) lists = edge_common_lists(g, whole, kTriangleListBytes);
  unsigned __int128 relaxed = sum_over_matches(g, d.cut_plan, opt, weight, lists ? &*lists : nullptr);
  if (__builtin_mul_overflow(relaxed, static_cast<unsigned __int128>(d.cut_weight_multiplier()), &relaxed) ||
      relaxed >> 126)
    partial_overflow();
  return relaxed;
}

// This rank's share of the embeddings of cp's pattern (see embedding_share).
__int128 share_known(const Graph& g, const CountPlan& cp, const ExecOptions& opt, const PlanCounter& count_plan,
                     KnownCounts& known) {
  if (cp.apex) return apex_embedding_share(g, *cp.apex, opt);
  if (cp.complete_split) {
    const __int128 inj = complete_split_embeddings(g, *cp.complete_split, opt);
    if (inj > (static_cast<__int128>(1) << 120) || -inj > (static_cast<__int128>(1) << 120)) partial_overflow();
    return inj;
  }
  if (!cp.decomposition) {
    const std::uint64_t n = count_plan ? count_plan(cp.plan, opt) : count_matches(g, cp.plan, opt);
    return static_cast<__int128>(n) * cp.plan.automorphisms;  // < 2^64 x 7!
  }
  const Decomposition& d = *cp.decomposition;
  std::optional<PendantPaths> pendant;
  if (d.pendant_path) pendant.emplace(g, opt);
  const PendantPaths* weights = pendant ? &*pendant : nullptr;
  const unsigned __int128 relaxed =
      d.edge_vertex ? edge_vertex_cut_sum(g, d.edge_vertex->commons, d.edge_vertex->edges, opt)
      : d.edge_power || d.capped_edge
          ? sum_pair_edges(g, d.common_power, d.edge_power, d.path3_power, d.capped_edge, opt, weights)
      : d.path4_power ? sum_pair_long_paths(g, d.common_power, d.path3_power, d.path4_power, opt)
      : d.common_power == 2 && !d.path3_power && !d.pendant_path ? sum_pair_four_cycles(g, opt)
      : d.pair_cut() ? sum_pair_paths(g, d.common_power, d.path3_power, opt, nullptr, weights)
                     : connected_cut_sum(g, d, opt, known);
  __int128 inj = static_cast<__int128>(relaxed);  // < 2^126
  for (const auto& q : d.quotients) {
    const std::string key = q.plan.plan.pattern.to_string();  // canonical (quotients)
    const auto it = known.find(key);
    const __int128 n = it != known.end() ? it->second : known[key] = share_known(g, q.plan, opt, count_plan, known);
    __int128 term;
    if (__builtin_mul_overflow(n, static_cast<__int128>(q.multiplicity), &term) || __builtin_sub_overflow(inj, term, &inj))
      partial_overflow();
  }
  return inj;
}

}  // namespace

__int128 embedding_share(const Graph& g, const CountPlan& cp, const ExecOptions& opt, const PlanCounter& count_plan) {
  KnownCounts known;
  return share_known(g, cp, opt, count_plan, known);
}

std::uint64_t count_from_shares(const CountPlan& cp, std::span<const __int128> shares) {
  __int128 inj = 0;
  for (const __int128 s : shares)
    if (__builtin_add_overflow(inj, s, &inj)) partial_overflow();
  const auto aut = static_cast<__int128>(cp.plan.automorphisms);
  if (inj < 0 || inj % aut != 0)
    throw std::logic_error("counting " + cp.plan.pattern.to_string() + ": " + (inj < 0 ? "negative" : "indivisible") +
                           " embedding count");
  const __int128 count = inj / aut;
  if (count > static_cast<__int128>(~std::uint64_t{0}))
    throw DataError("the match count exceeds 2^64 - 1 (counts are exact or an error)");
  return static_cast<std::uint64_t>(count);
}

std::uint64_t count_with(const Graph& g, const CountPlan& cp, const ExecOptions& opt) {
  if (opt.world_size != 1) throw std::logic_error("count_with runs in one process (ranks: embedding_share)");
  const __int128 share = embedding_share(g, cp, opt);
  return count_from_shares(cp, {&share, 1});
}

namespace {

std::uint32_t components_mask(const Decomposition::Component& c) {
  std::uint32_t mask = 0;
  for (int v : c.vertices) mask |= 1u << v;
  return mask;
}

// How a k-cycle's table rooted at `fixed` vertices is filled.
std::string cycle_table_kind(int k, int fixed) {
  if (k == 4) return fixed == 2 ? "4-cycles through the edge, smallest-vertex walks" : "4-cycles through the vertex, smallest-vertex walks";
  return fixed == 2 ? "5-cycles through the edge, from the paths of three edges" : "5-cycles through the vertex, from the pair paths";
}

// How a component's table is filled (CountPlan reports).
std::string table_kind(const Decomposition& d, const Decomposition::Component& c) {
  if (c.common) return "common neighbours of the attachment, counted in the cut's enumeration";
  if (d.edge_vertex)
    return c.vertices.size() == 1 ? "common neighbours of the three"
                                  : "edges joined to the three, from per-edge scatters";
  if (c.table < 0)
    return c.vertices.size() == 1                                      ? "common neighbours"
           : joined_edge(d.pattern, components_mask(c), d.cut[0], d.cut[1]) ? "edges joined to both, from triangles"
           : c.vertices.size() == 2                                    ? "paths of length 3"
           : pendant_path(d.pattern, components_mask(c), d.cut[0], d.cut[1])
               ? "paths of length 3 with a pendant, from weighed wedges"
           : capped_edge(d.pattern, components_mask(c), d.cut[0], d.cut[1])
               ? "edges joined to both with a cap, from triangles weighed by their 4-cliques"
               : "paths of length 4";
  const Plan& t = d.tables[c.table];
  const int fixed = static_cast<int>(c.attach.size());
  return is_rooted_triangle(t, fixed)    ? "triangles, one oriented pass"
         : rooted_clique_size(t, fixed) ? std::to_string(t.size()) + "-cliques, one pass over the local graphs"
         : is_pendant(t, fixed)          ? "degrees"
         : rooted_cycle_length(t, fixed) ? cycle_table_kind(rooted_cycle_length(t, fixed), fixed)
         : rooted_square_pendant(t, fixed) ? "4-cycles with a pendant through the edge, from wedge walks"
         : rooted_common_power(t, fixed) ? "common neighbours of the vertex and each other vertex"
         : rooted_tip_diamond(t, fixed)  ? "diamonds off the edge by a tip's neighbour, from joined pairs"
                                         : d.reversed[c.table] ? "rooted plan from the edge's second end, transposed"
                                                               : "rooted plan";
}

}  // namespace

bool rooted_plan_table(const Decomposition& d, const Decomposition::Component& c) {
  return c.table >= 0 && !special_table(d.tables[c.table], static_cast<int>(c.attach.size()));
}

nlohmann::json CountPlan::to_json() const {
  nlohmann::json j = plan.to_json();
  j["predicted_cost"] = predicted_cost;
  if (complete_split) {
    j["formula"] = "complete split";
    j["decomposition"] = nullptr;
    j["apex"] = nullptr;
    j["complete_split"] = {{"core", core_name(*complete_split)},
                           {"clique", complete_split->clique},
                           {"independent", complete_split->independent},
                           {"star", complete_split->star}};
    return j;
  }
  j["complete_split"] = nullptr;
  if (apex) {
    j["formula"] = "apex";
    j["decomposition"] = nullptr;
    j["apex"] = {{"vertex", apex->vertex},
                 {"twin", apex->twin >= 0 ? nlohmann::json(apex->twin) : nlohmann::json(nullptr)},
                 {"isolated", apex->isolated},
                 {"rest", apex->rest.to_json()}};
    return j;
  }
  j["apex"] = nullptr;
  if (!decomposition) {
    j["decomposition"] = nullptr;
    return j;
  }
  const Decomposition& d = *decomposition;
  nlohmann::json comps = nlohmann::json::array(), tables = nlohmann::json::array(), qs = nlohmann::json::array();
  for (const auto& c : d.components)
    comps.push_back({{"vertices", c.vertices},
                     {"attach", c.attach},
                     {"table", c.table},
                     {"table_kind", table_kind(d, c)},
                     {"counted_in_cut", c.common}});
  for (std::size_t i = 0; i < d.tables.size(); ++i) {
    const Plan& t = d.tables[i];
    tables.push_back({{"pattern", t.pattern.to_string()}, {"order", t.order}, {"group", t.automorphisms},
                      {"formula", t.to_json()["formula"]}, {"common_count", t.common_count}, {"reversed", d.reversed[i]}});
  }
  for (const auto& q : d.quotients)
    qs.push_back({{"pattern", q.plan.plan.pattern.to_string()}, {"multiplicity", q.multiplicity},
                  {"decomposed", q.plan.decomposition != nullptr}, {"predicted_cost", q.plan.predicted_cost}});
  j["formula"] = "decomposition";
  j["decomposition"] = {{"cut", d.cut},
                        {"cut_order", d.cut_plan.order},
                        {"cut_symmetry", d.cut_plan.automorphisms},
                        {"cut_images", std::max<std::size_t>(1, d.cut_images.size())},
                        {"cut_summed_directly", !d.pair_cut() && summed_directly(d)},
                        {"pendant_triangle", d.pendant_triangle.has_value()},
                        {"edge_vertex", d.edge_vertex.has_value()},
                        {"common_power", d.common_power},
                        {"path3_power", d.path3_power},
                        {"path4_power", d.path4_power},
                        {"edge_power", d.edge_power},
                        {"pendant_path", d.pendant_path},
                        {"capped_edge", d.capped_edge},
                        {"components", comps},
                        {"tables", tables},
                        {"quotients", qs}};
  return j;
}

std::string CountPlan::to_text() const {
  if (complete_split) {
    std::ostringstream os;
    const CompleteSplit& s = *complete_split;
    os << "pattern " << plan.pattern.to_string() << " (edge-induced, |Aut| = " << plan.automorphisms << ") is ";
    if (s.core == SplitCore::edge) {
      os << "an edge joined to ";
      if (s.star) os << "a star of " << s.star << " leaves and " << s.independent << " isolated vertices";
      else os << "a 4-path";
      os << ": the rest counted in each edge's common neighbourhood from the degrees there (the common neighbours "
            "scattered to their neighbours)";
    } else if (s.core == SplitCore::triangle) {
      os << "a triangle joined to " << (s.star == 1 ? "an edge" : "a star of " + std::to_string(s.star) + " leaves")
         << " and " << s.independent
         << " isolated vertices: the rest counted in each triangle's common neighbourhood from bitmap rows of each "
            "edge's common neighbours";
    } else {
      const bool clique = s.core == SplitCore::clique;
      os << (clique ? "a " : "an ") << core_name(s) << " joined to " << s.independent
         << " independent vertices: summed over the " << (clique ? "cliques" : "core's embeddings")
         << " of C(common neighbours, " << s.independent << "), from "
         << (clique ? "rows over whole neighbourhoods" : "each edge's common neighbours scattered to their neighbours");
    }
    os << "\npredicted cost " << predicted_cost
       << " (enumerating plan: " << plan.predicted_cost << ")\n";
    return os.str();
  }
  if (apex) {
    std::ostringstream os;
    os << "pattern " << plan.pattern.to_string() << " (edge-induced, |Aut| = " << plan.automorphisms << ") counted through ";
    if (apex->twin >= 0)
      os << "its twin apexes, vertices " << apex->vertex << " and " << apex->twin
         << " (not adjacent): the rest counted in every vertex pair's common-neighbourhood graph";
    else
      os << "its apex, vertex " << apex->vertex << ": the rest counted in every vertex's neighbourhood graph";
    if (apex->isolated) os << ", less " << apex->isolated << " vertices with no edge there, chosen among the others";
    os << ", by\n"
       << apex->rest.to_text() << "predicted cost " << predicted_cost << " (enumerating plan: " << plan.predicted_cost
       << ")\n";
    return os.str();
  }
  if (!decomposition) return plan.to_text();
  const Decomposition& d = *decomposition;
  std::ostringstream os;
  os << "pattern " << d.pattern.to_string() << " (edge-induced, |Aut| = " << plan.automorphisms
     << ") counted by decomposition\ncut set:";
  for (int v : d.cut) os << " " << v;
  if (d.pair_cut())
    os << " (non-adjacent: sum over vertex pairs of"
       << (d.common_power ? " common neighbours ^ " + std::to_string(d.common_power) : "")
       << (d.common_power && d.path3_power ? " x" : "")
       << (d.path3_power ? " paths of length 3 ^ " + std::to_string(d.path3_power) : "")
       << ((d.common_power || d.path3_power) && d.path4_power ? " x" : "")
       << (d.path4_power ? " paths of length 4 ^ " + std::to_string(d.path4_power) : "")
       << (d.common_power && d.edge_power ? " x" : "")
       << (d.edge_power ? " joined edges ^ " + std::to_string(d.edge_power) : "")
       << (d.pendant_path ? " x paths of length 3 with a pendant, weighed by degrees" : "")
       << (d.capped_edge ? " x joined edges with a cap, weighed by 4-cliques" : "") << ", from wedges)\n";
  else if (d.edge_vertex)
    os << " (an edge and a vertex: sum over them of"
       << (d.edge_vertex->commons ? " common neighbours ^ " + std::to_string(d.edge_vertex->commons) + " x" : "")
       << " joined edges ^ " << d.edge_vertex->edges << ", from per-edge scatters)\n";
  else if (d.pendant_triangle)
    os << " (a triangle " << d.pendant_triangle->b << "-" << d.pendant_triangle->x << "-" << d.pendant_triangle->y
       << " with a pendant " << d.pendant_triangle->a
       << ": summed per root from its wedge walk and the edges among each neighbourhood)\n";
  else if (summed_directly(d))
    os << (d.cut.size() == 1 ? " (summed over the vertices in one pass)\n" : " (summed over the edges in one pass)\n");
  else
    os << " (enumerated up to " << d.cut_plan.automorphisms << " symmetries"
       << (d.cut_images.empty() ? "" : ", each match weighed in " + std::to_string(d.cut_images.size()) + " images")
       << ")\n";
  for (const auto& c : d.components) {
    os << "component";
    for (int v : c.vertices) os << " " << v;
    if (c.common || d.edge_vertex) {
      os << " attached at vertices";
      for (int a : c.attach) os << " " << a;
      os << ": " << table_kind(d, c) << "\n";
      continue;
    }
    os << (c.attach.size() == 1 ? " attached at vertex " : d.pair_cut() ? " between " : " attached at edge ") << c.attach[0];
    if (c.attach.size() == 2) os << (d.pair_cut() ? " and " : "-") << c.attach[1];
    if (c.table >= 0) os << ": table " << c.table << " (" << table_kind(d, c) << ")";
    os << "\n";
  }
  os << d.quotients.size() << " quotient patterns (shared vertices) subtracted:\n";
  for (const auto& q : d.quotients)
    os << "  " << q.multiplicity << " x " << q.plan.plan.pattern.to_string()
       << (q.plan.decomposition ? " (decomposed)" : "") << "\n";
  os << "predicted cost " << predicted_cost << " (enumerating plan: " << plan.predicted_cost << ")\n";
  return os.str();
}

}  // namespace core::graph
