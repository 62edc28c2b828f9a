// R-MAT and G(n, p) generators (see generators.hpp). R-MAT builds its CSR from the edge stream
// without an edge list: the blocks are generated twice in parallel (degrees, then the lists), each
// list sorted and deduplicated in place, ids compacted in place.
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
#include "graph/parallel.hpp"

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
    // Scramble ids so vertex id does not reveal degree (a fixed permutation from the seed).
    const std::uint64_t nv = ids();
    perm_.resize(nv);
    for (std::uint64_t i = 0; i < nv; ++i) perm_[i] = i;
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
    for (std::uint64_t e = blk * kRmatBlock; e < std::min(edges_, (blk + 1) * kRmatBlock); ++e) {
      std::uint64_t u = 0, v = 0;
      for (int bit = 0; bit < p_.scale; ++bit) {
        const double r = rng.uniform();
        const int quadrant = r < p_.a ? 0 : r < p_.a + p_.b ? 1 : r < p_.a + p_.b + p_.c ? 2 : 3;
        u = (u << 1) | static_cast<std::uint64_t>(quadrant >> 1);
        v = (v << 1) | static_cast<std::uint64_t>(quadrant & 1);
      }
      emit(perm_[u], perm_[v]);
    }
  }

 private:
  RmatParams p_;
  Rng base_;
  std::uint64_t edges_ = 0;
  std::vector<std::uint64_t> perm_;
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

Graph generate_rmat(const RmatParams& p, std::uint64_t seed, CleanReport* report) {
  const RmatStream stream(p, seed);
  const int threads = p.threads > 0 ? p.threads : thread_count();
  const std::uint64_t nv = stream.ids();
  CleanReport r;
  r.input_edges = stream.edges();
  // Pass 1: degrees (both directions, self-loops dropped).
  std::vector<EdgeIndex> offsets(nv + 1, 0);
  {
    std::vector<std::atomic<std::uint32_t>> degree(nv);
    std::vector<std::uint64_t> loops(threads, 0), max_id(threads, 0);
    parallel_chunks(threads, stream.blocks(), [&](int t, std::uint64_t blk) {
      stream.block(blk, [&](std::uint64_t u, std::uint64_t v) {
        max_id[t] = std::max({max_id[t], u, v});
        if (u == v) return void(++loops[t]);
        degree[u].fetch_add(1, std::memory_order_relaxed);
        degree[v].fetch_add(1, std::memory_order_relaxed);
      });
    });
    for (int t = 0; t < threads; ++t) {
      r.self_loops += loops[t];
      r.max_input_id = std::max(r.max_input_id, max_id[t]);
    }
    for (std::uint64_t v = 0; v < nv; ++v) offsets[v + 1] = offsets[v] + degree[v].load(std::memory_order_relaxed);
  }
  // Pass 2: the same edges again, each written into both endpoints' lists.
  std::vector<Vertex> adj(offsets[nv]);
  {
    std::vector<std::atomic<EdgeIndex>> cursor(nv);
    for (std::uint64_t v = 0; v < nv; ++v) cursor[v].store(offsets[v], std::memory_order_relaxed);
    parallel_chunks(threads, stream.blocks(), [&](int, std::uint64_t blk) {
      stream.block(blk, [&](std::uint64_t u, std::uint64_t v) {
        if (u == v) return;
        adj[cursor[u].fetch_add(1, std::memory_order_relaxed)] = static_cast<Vertex>(v);
        adj[cursor[v].fetch_add(1, std::memory_order_relaxed)] = static_cast<Vertex>(u);
      });
    });
  }
  // Each list sorted, duplicates dropped in place (its new length kept in `kept`).
  std::vector<std::uint32_t> kept(nv);
  constexpr std::uint64_t kVerticesPerChunk = 4096;
  parallel_chunks(threads, (nv + kVerticesPerChunk - 1) / kVerticesPerChunk, [&](int, std::uint64_t c) {
    for (std::uint64_t v = c * kVerticesPerChunk; v < std::min(nv, (c + 1) * kVerticesPerChunk); ++v) {
      Vertex* first = adj.data() + offsets[v];
      Vertex* last = adj.data() + offsets[v + 1];
      std::sort(first, last);
      kept[v] = static_cast<std::uint32_t>(std::unique(first, last) - first);
    }
  });
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
