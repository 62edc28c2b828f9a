// R-MAT and G(n, p) generators (see generators.hpp).
#include "graph/generators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "common/memory.hpp"
#include "common/rng.hpp"

namespace core::graph {

namespace {
// A generator whose expected edge count cannot fit is refused before it allocates: the raw edge
// list (16 bytes an edge) and the CSR built from it (8 bytes an edge, both directions) are alive
// together, so 24 bytes an edge is a lower bound on the peak.
void check_memory(const char* what, double expected_edges) {
  const double need = 24.0 * expected_edges;
  const std::uint64_t avail = available_memory_bytes();
  if (avail > 0 && need > static_cast<double>(avail))
    throw UsageError(fmt::format("{} expects about {:.3g} edges, at least {:.3g} GB, more than the {:.3g} GB "
                                 "available",
                                 what, expected_edges, need / 1e9, static_cast<double>(avail) / 1e9));
}
}  // namespace

Graph generate_rmat(const RmatParams& p, std::uint64_t seed, CleanReport* report) {
  if (p.scale < 1 || p.scale > 40) throw UsageError("rmat scale must be in [1, 40]");
  if (!(p.edge_factor > 0) || !std::isfinite(p.edge_factor)) throw UsageError("rmat edge factor must be finite and > 0");
  if (!(p.a > 0 && p.b >= 0 && p.c >= 0 && p.a + p.b + p.c < 1))
    throw UsageError("rmat probabilities need a > 0, b, c >= 0, a + b + c < 1");
  const double edges_wanted = std::floor(p.edge_factor * std::ldexp(1.0, p.scale));
  if (edges_wanted < 1) throw UsageError("rmat edge factor times 2^scale is below one edge; raise it");
  if (edges_wanted > 0x1p48) throw UsageError("rmat edge factor times 2^scale is over 2^48 edges");
  check_memory("rmat", edges_wanted);
  const auto m = static_cast<std::uint64_t>(edges_wanted);
  std::vector<RawEdge> edges(m);
  const Rng base(seed);
  // Blocks of edges get independent streams so the result does not depend on generation order.
  constexpr std::uint64_t kBlock = 1 << 16;
  for (std::uint64_t blk = 0; blk * kBlock < m; ++blk) {
    Rng rng = base.split(blk);
    for (std::uint64_t e = blk * kBlock; e < std::min(m, (blk + 1) * kBlock); ++e) {
      std::uint64_t u = 0, v = 0;
      for (int bit = 0; bit < p.scale; ++bit) {
        const double r = rng.uniform();
        const int quadrant = r < p.a ? 0 : r < p.a + p.b ? 1 : r < p.a + p.b + p.c ? 2 : 3;
        u = (u << 1) | static_cast<std::uint64_t>(quadrant >> 1);
        v = (v << 1) | static_cast<std::uint64_t>(quadrant & 1);
      }
      edges[e] = {u, v};
    }
  }
  // Scramble ids so vertex id does not reveal degree (a fixed permutation from the seed).
  const std::uint64_t nv = std::uint64_t(1) << p.scale;
  std::vector<std::uint64_t> perm(nv);
  for (std::uint64_t i = 0; i < nv; ++i) perm[i] = i;
  Rng prng = base.split(~std::uint64_t(0));
  for (std::uint64_t i = nv - 1; i > 0; --i) std::swap(perm[i], perm[prng.below(i + 1)]);
  for (auto& [u, v] : edges) {
    u = perm[u];
    v = perm[v];
  }
  return build_graph(std::move(edges), report);
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
  check_memory("gnp", pairs * p);
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

std::optional<Graph> generate_from_spec(const std::string& spec, std::uint64_t seed, CleanReport* report) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string kind = spec.substr(0, colon);
  if (kind != "rmat" && kind != "gnp") return std::nullopt;
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
