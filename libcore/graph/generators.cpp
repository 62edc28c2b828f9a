// R-MAT and G(n, p) generators (see generators.hpp). R-MAT builds its CSR from the edge stream
// without an edge list: a counting pass over the blocks (in parallel) sizes every bucket of sources,
// then, a round of buckets at a time, a fill pass writes the round's directed entries grouped by
// bucket (a radix partition by source) and each bucket's lists are built within its own small range
// (counting sort by source, each list sorted (sort_ids) and deduplicated); ids are compacted in place. Every
// random access of the build stays inside one bucket, so time grows linearly with the edges.
#include "graph/generators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "common/memory.hpp"
#include "common/rng.hpp"
#include "common/threads.hpp"
#include "graph/large_vector.hpp"
#include "graph/parallel.hpp"
#include "graph/sort_ids.hpp"

namespace core::graph {

namespace {
// A generator whose expected edge count cannot fit is refused before it allocates: `bytes_per_edge`
// is a lower bound on the peak per expected edge.
void check_memory(const char* what, double expected_edges, double bytes_per_edge, double other_bytes = 0) {
  const double need = bytes_per_edge * expected_edges + other_bytes;
  const std::uint64_t avail = available_memory_bytes();
  if (avail > 0 && need > static_cast<double>(avail))
    throw UsageError(fmt::format("{} expects about {:.3g} edges, at least {:.3g} GB, more than the {:.3g} GB "
                                 "available",
                                 what, expected_edges, need / 1e9, static_cast<double>(avail) / 1e9));
}

// Edges come in blocks with independent streams, so every block can be generated (again) alone.
constexpr std::uint64_t kRmatBlock = 1 << 16;

// The R-MAT edge stream of (p, seed): checked parameters, the id scramble, and block generation.
class RmatStream {
 public:
  RmatStream(const RmatParams& p, std::uint64_t seed) : p_(p), base_(seed) {
    if (p.scale < 1 || p.scale > 40) throw UsageError("rmat scale must be in [1, 40]");
    if (!(p.edge_factor > 0) || !std::isfinite(p.edge_factor)) throw UsageError("rmat edge factor must be finite and > 0");
    if (!(p.a > 0 && p.b >= 0 && p.c >= 0 && p.a + p.b + p.c < 1))
      throw UsageError("rmat probabilities need a > 0, b, c >= 0, a + b + c < 1");
    const double edges_wanted = std::floor(p.edge_factor * std::ldexp(1.0, p.scale));
    if (edges_wanted < 1) throw UsageError("rmat edge factor times 2^scale is below one edge; raise it");
    if (edges_wanted > 0x1p48) throw UsageError("rmat edge factor times 2^scale is over 2^48 edges");
    // The CSR of both directions (8 bytes an edge) and the relabelled copy the miner makes of it;
    // per vertex id the scramble, degrees, offsets, cursors and ranks.
    check_memory("rmat", edges_wanted, 16.0, 32.0 * std::ldexp(1.0, p.scale));
    if (p.scale > 32) throw UsageError("rmat scale must be at most 32 (32-bit vertex ids)");
    edges_ = static_cast<std::uint64_t>(edges_wanted);
    // uniform() is k 2^-53 for k = rng() >> 11, so uniform() < t exactly when k < ceil(t 2^53).
    const double bounds[3] = {p.a, p.a + p.b, p.a + p.b + p.c};
    for (int i = 0; i < 3; ++i) below_[i] = static_cast<std::uint64_t>(std::ceil(std::ldexp(bounds[i], 53)));
    // Scramble ids so vertex id does not reveal degree (a fixed permutation from the seed).
    const std::uint64_t nv = ids();
    perm_.resize(nv);
    for (std::uint64_t i = 0; i < nv; ++i) perm_[i] = static_cast<std::uint32_t>(i);
    Rng prng = base_.split(~std::uint64_t(0));
    for (std::uint64_t i = nv - 1; i > 0; --i) std::swap(perm_[i], perm_[prng.below(i + 1)]);
  }
  std::uint64_t edges() const { return edges_; }
  std::uint64_t ids() const { return std::uint64_t(1) << p_.scale; }
  std::uint64_t blocks() const { return (edges_ + kRmatBlock - 1) / kRmatBlock; }

  // emit(u, v) for every edge of block `blk`, scrambled ids, in generation order.
  template <class Emit>
  void block(std::uint64_t blk, const Emit& emit) const {
    Rng rng = base_.split(blk);
    // Edges in batches: the unscrambled ids first, then the scramble's table lookups (cache misses on
    // large scales) all together, so that they overlap instead of each waiting behind a whole edge.
    constexpr std::uint64_t kBatch = 64;
    std::uint32_t us[kBatch], vs[kBatch];
    const std::uint64_t end = std::min(edges_, (blk + 1) * kRmatBlock);
    for (std::uint64_t e = blk * kRmatBlock; e < end; e += kBatch) {
      const std::uint64_t count = std::min(kBatch, end - e);
      for (std::uint64_t i = 0; i < count; ++i) {
        std::uint32_t u = 0, v = 0;
        for (int bit = 0; bit < p_.scale; ++bit) {
          // The quadrant of r = uniform() against a, a + b, a + b + c, without branches (they mispredict).
          const std::uint64_t k = rng() >> 11;
          const auto quadrant = static_cast<std::uint32_t>(k >= below_[0]) + (k >= below_[1]) + (k >= below_[2]);
          u = (u << 1) | (quadrant >> 1);
          v = (v << 1) | (quadrant & 1);
        }
        us[i] = u;
        vs[i] = v;
      }
      for (std::uint64_t i = 0; i < count; ++i) {
        us[i] = perm_[us[i]];
        vs[i] = perm_[vs[i]];
      }
      for (std::uint64_t i = 0; i < count; ++i) emit(std::uint64_t{us[i]}, std::uint64_t{vs[i]});
    }
  }

 private:
  RmatParams p_;
  Rng base_;
  std::uint64_t edges_ = 0;
  std::uint64_t below_[3] = {};  // the quadrant bounds a, a + b, a + b + c in units of 2^-53
  std::vector<std::uint32_t> perm_;  // 32-bit ids: half the table, fewer cache misses per edge
};

}  // namespace

std::vector<RawEdge> rmat_edges(const RmatParams& p, std::uint64_t seed) {
  const RmatStream stream(p, seed);
  std::vector<RawEdge> edges;
  edges.reserve(stream.edges());
  for (std::uint64_t blk = 0; blk < stream.blocks(); ++blk)
    stream.block(blk, [&](std::uint64_t u, std::uint64_t v) { edges.emplace_back(u, v); });
  return edges;
}

namespace {

// Directed entries (both directions of every non-loop edge) grouped by source into buckets of
// 2^bucket_bits consecutive ids, at least 64 buckets where the scale allows (so small graphs take
// the same path) and at most 2^14 ids each (a bucket's counters and lists stay in cache).
int rmat_bucket_bits(int scale) { return std::clamp(scale - 6, 0, 14); }

// The stream's blocks are cut into at most this many tasks (consecutive blocks each); a task's
// entries per bucket are counted, so the counts table is tasks x buckets.
constexpr std::uint64_t kRmatMaxTasks = 4096;

// One round of the fill: buckets [first, last), their entries at most `entries`.
struct RmatRound {
  std::uint64_t first, last, entries;
};

// Consecutive buckets per round, each round's entries at most `budget` (a larger bucket alone).
std::vector<RmatRound> rmat_rounds(const std::vector<std::uint64_t>& bucket_entries, std::uint64_t budget) {
  std::vector<RmatRound> rounds;
  for (std::uint64_t b = 0; b < bucket_entries.size(); ++b) {
    if (rounds.empty() || (rounds.back().entries > 0 && rounds.back().entries + bucket_entries[b] > budget))
      rounds.push_back({b, b, 0});
    rounds.back().last = b + 1;
    rounds.back().entries += bucket_entries[b];
  }
  return rounds;
}

}  // namespace

Graph generate_rmat(const RmatParams& p, std::uint64_t seed, CleanReport* report) {
  const RmatStream stream(p, seed);
  const int threads = p.threads > 0 ? p.threads : thread_count();
  const std::uint64_t nv = stream.ids();
  const int bucket_bits = rmat_bucket_bits(p.scale);
  const std::uint64_t bucket_ids = std::uint64_t(1) << bucket_bits;
  const std::uint64_t buckets = nv >> bucket_bits;
  const std::uint64_t tasks = std::min(stream.blocks(), kRmatMaxTasks);
  // f(u, v) for both directions of every non-loop edge of task t's blocks; loop(u) for the others.
  const auto task_edges = [&](std::uint64_t t, const auto& f, const auto& loop) {
    for (std::uint64_t blk = t * stream.blocks() / tasks; blk < (t + 1) * stream.blocks() / tasks; ++blk)
      stream.block(blk, [&](std::uint64_t u, std::uint64_t v) {
        if (u == v) return loop(u);
        f(u, v);
        f(v, u);
      });
  };
  CleanReport r;
  r.input_edges = stream.edges();
  // Pass 1: each task's entries per bucket (counts[t * buckets + b]), self-loops and the largest id.
  std::vector<std::uint64_t> counts(tasks * buckets, 0);
  {
    std::vector<std::uint64_t> loops(threads, 0), max_id(threads, 0);
    parallel_chunks(threads, tasks, [&](int th, std::uint64_t t) {
      // The task's own tallies, merged once: the threads' slots share a cache line, and written per edge (the
      // counts' stores may alias them, so they were) the line went back and forth between the cores.
      std::uint64_t* row = counts.data() + t * buckets;
      std::uint64_t task_loops = 0, task_max = 0;
      task_edges(
          t,
          [&](std::uint64_t u, std::uint64_t v) {
            ++row[u >> bucket_bits];
            task_max = std::max(task_max, v);
          },
          [&](std::uint64_t u) {
            ++task_loops;
            task_max = std::max(task_max, u);
          });
      loops[th] += task_loops;
      max_id[th] = std::max(max_id[th], task_max);
    });
    for (int th = 0; th < threads; ++th) {
      r.self_loops += loops[th];
      r.max_input_id = std::max(r.max_input_id, max_id[th]);
    }
  }
  // The buckets' entries and where their lists start in the adjacency array (source order).
  std::vector<std::uint64_t> bucket_entries(buckets, 0), bucket_start(buckets + 1, 0);
  for (std::uint64_t t = 0; t < tasks; ++t)
    for (std::uint64_t b = 0; b < buckets; ++b) bucket_entries[b] += counts[t * buckets + b];
  for (std::uint64_t b = 0; b < buckets; ++b) bucket_start[b + 1] = bucket_start[b] + bucket_entries[b];
  // Entries are buffered (8 bytes each) for a round of buckets at a time: by default as many as a quarter of
  // the memory available holds (all of them where nothing is known), at least 2^25. Each further round
  // generates the stream once more.
  const std::uint64_t total = bucket_start[buckets];
  const std::uint64_t avail = available_memory_bytes();
  const std::uint64_t budget = p.round_entries > 0 ? p.round_entries
                               : avail == 0      ? total
                                                 : std::max<std::uint64_t>(avail / 4 / sizeof(std::uint64_t), 1 << 25);
  const std::vector<RmatRound> rounds = rmat_rounds(bucket_entries, budget);
  std::uint64_t buffer = 0;
  for (const RmatRound& round : rounds) buffer = std::max(buffer, round.entries);
  // An entry: the source's offset in its bucket << 32 | the target.
  std::vector<std::uint64_t> entries = large_vector<std::uint64_t>(buffer);
  std::vector<Vertex> adj = large_vector<Vertex>(total);
  std::vector<EdgeIndex> offsets(nv + 1, 0);
  offsets[nv] = total;
  std::vector<std::uint32_t> kept(nv, 0);  // a list's length once sorted and deduplicated
  std::vector<std::vector<EdgeIndex>> cursors(threads, std::vector<EdgeIndex>(bucket_ids));
  std::vector<std::vector<Vertex>> scratch(threads);  // sort_ids's
  for (const RmatRound& round : rounds) {
    // Pass 2 (once per round): the round's entries, bucket after bucket and within one task after task, so
    // counts turn into each task's write positions.
    const std::uint64_t width = round.last - round.first;
    for (std::uint64_t b = round.first; b < round.last; ++b) {
      std::uint64_t at = bucket_start[b] - bucket_start[round.first];
      for (std::uint64_t t = 0; t < tasks; ++t) at += std::exchange(counts[t * buckets + b], at);
    }
    parallel_chunks(threads, tasks, [&](int, std::uint64_t t) {
      std::uint64_t* at = counts.data() + t * buckets;
      task_edges(
          t,
          [&](std::uint64_t u, std::uint64_t v) {
            const std::uint64_t b = u >> bucket_bits;
            if (b - round.first < width) entries[at[b]++] = (u & (bucket_ids - 1)) << 32 | v;
          },
          [](std::uint64_t) {});
    });
    // Each bucket's lists: counted, scattered into its range of the adjacency, sorted and deduplicated.
    parallel_chunks(threads, width, [&](int th, std::uint64_t i) {
      const std::uint64_t b = round.first + i, first_id = b << bucket_bits;
      const std::uint64_t* const from = entries.data() + (bucket_start[b] - bucket_start[round.first]);
      const std::uint64_t* const to = from + bucket_entries[b];
      std::vector<EdgeIndex>& cursor = cursors[th];
      std::fill(cursor.begin(), cursor.end(), 0);
      for (const std::uint64_t* e = from; e != to; ++e) ++cursor[*e >> 32];
      EdgeIndex at = bucket_start[b];
      for (std::uint64_t k = 0; k < bucket_ids; ++k) {
        offsets[first_id + k] = at;
        at += std::exchange(cursor[k], at);
      }
      for (const std::uint64_t* e = from; e != to; ++e) adj[cursor[*e >> 32]++] = static_cast<Vertex>(*e);
      for (std::uint64_t k = 0; k < bucket_ids; ++k) {  // cursor[k]: the end of list k now
        Vertex* const list = adj.data() + offsets[first_id + k];
        sort_ids(list, adj.data() + cursor[k], p.scale, scratch[th]);
        kept[first_id + k] = static_cast<std::uint32_t>(std::unique(list, adj.data() + cursor[k]) - list);
      }
    });
  }
  entries = std::vector<std::uint64_t>();  // freed (assigning {} would only clear them)
  counts = std::vector<std::uint64_t>();
  // Compaction: the ids that occur, in ascending order, become 0..n-1; lists move down in place.
  std::vector<Vertex> rank(nv, 0);
  std::vector<std::uint64_t> original_ids;
  for (std::uint64_t v = 0; v < nv; ++v)
    if (kept[v] > 0) {
      rank[v] = static_cast<Vertex>(original_ids.size());
      original_ids.push_back(v);
    }
  std::vector<EdgeIndex> compact(original_ids.size() + 1, 0);
  EdgeIndex out = 0;
  for (std::size_t i = 0; i < original_ids.size(); ++i) {
    const std::uint64_t v = original_ids[i];
    for (EdgeIndex s = offsets[v]; s < offsets[v] + kept[v]; ++s) adj[out++] = rank[adj[s]];
    compact[i + 1] = out;
  }
  r.duplicates = (adj.size() - out) / 2;
  adj.resize(out);
  adj.shrink_to_fit();
  Graph g;
  g.offsets = std::move(compact);
  g.adj = std::move(adj);
  g.original_ids = std::move(original_ids);
  r.vertices = g.n();
  r.edges = g.m();
  if (report) *report = r;
  return g;
}

Graph generate_gnp(std::uint64_t n, double p, std::uint64_t seed, CleanReport* report) {
  if (n < 2) throw UsageError("gnp needs n >= 2");
  if (n > std::numeric_limits<Vertex>::max()) throw UsageError("gnp needs n < 2^32");
  if (!(p > 0 && p <= 1)) throw UsageError("gnp needs 0 < p <= 1");
  Rng rng(seed);
  std::vector<RawEdge> edges;
  // Enumerate pairs (v, w), w < v, skipping geometric gaps. A gap beyond the last pair ends the
  // enumeration (at tiny p it can exceed every integer type).
  const double log_q = std::log1p(-p);
  const double pairs = 0.5 * static_cast<double>(n) * static_cast<double>(n - 1);
  check_memory("gnp", pairs * p, 24.0);  // the raw edge list (16 bytes an edge) next to the CSR
  std::int64_t v = 1, w = -1;
  while (static_cast<std::uint64_t>(v) < n) {
    const double r = rng.uniform();
    const double gap = p >= 1 ? 0.0 : std::floor(std::log1p(-r) / log_q);
    if (gap >= pairs) break;
    w += 1 + static_cast<std::int64_t>(gap);
    while (w >= v && static_cast<std::uint64_t>(v) < n) {
      w -= v;
      ++v;
    }
    if (static_cast<std::uint64_t>(v) < n) edges.emplace_back(v, w);
  }
  if (edges.empty()) throw UsageError("gnp produced no edges; raise p");
  return build_graph(std::move(edges), report);
}

bool is_generator_spec(const std::string& spec) { return spec.starts_with("rmat:") || spec.starts_with("gnp:"); }

std::optional<Graph> generate_from_spec(const std::string& spec, std::uint64_t seed, CleanReport* report) {
  if (!is_generator_spec(spec)) return std::nullopt;
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  std::vector<std::string> parts;
  std::stringstream ss(spec.substr(colon + 1));
  for (std::string part; std::getline(ss, part, ':');) parts.push_back(part);
  // Counts (rmat's SCALE, gnp's N) are non-negative integers, written in decimal.
  const auto count = [&](std::size_t i) {
    std::uint64_t x = 0;
    const std::string& t = parts.at(i);
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size())
      throw UsageError("graph spec '" + spec + "': expected a non-negative integer in field " + std::to_string(i + 1));
    return x;
  };
  const auto num = [&](std::size_t i) {
    std::size_t used = 0;
    double x = 0;
    try {
      x = std::stod(parts.at(i), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != parts[i].size())
      throw UsageError("graph spec '" + spec + "': expected a number in field " + std::to_string(i + 1));
    return x;
  };
  if (kind == "rmat") {
    if (parts.empty() || parts.size() > 2) throw UsageError("graph spec '" + spec + "': expected rmat:SCALE[:EDGE_FACTOR]");
    RmatParams p;
    p.scale = static_cast<int>(std::min<std::uint64_t>(count(0), 1000));
    if (parts.size() == 2) p.edge_factor = num(1);
    return generate_rmat(p, seed, report);
  }
  if (parts.size() != 2) throw UsageError("graph spec '" + spec + "': expected gnp:N:P");
  return generate_gnp(count(0), num(1), seed, report);
}

}  // namespace core::graph
