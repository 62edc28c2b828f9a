// Small pattern graphs (up to kMaxPatternSize vertices): construction from names, edge strings
// and files; the automorphism group (backtracking over degree/label-refined vertex classes); a
// canonical form (the largest adjacency code over all class-respecting relabellings); and the list
// of all connected k-vertex graphs up to isomorphism (grown one non-cut vertex at a time).
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace core::graph {

constexpr int kMaxPatternSize = 10;

using Perm = std::array<std::uint8_t, kMaxPatternSize>;

class Pattern {
 public:
  Pattern() = default;
  explicit Pattern(int k);

  int size() const { return k_; }
  void add_edge(int u, int v);
  bool has_edge(int u, int v) const { return (adj_[u] >> v) & 1u; }
  std::uint32_t neighbor_mask(int v) const { return adj_[v]; }
  int degree(int v) const;
  int edge_count() const;
  std::vector<std::pair<int, int>> edges() const;  // u < v, sorted
  bool connected() const;

  // Labels: empty (unlabeled) or one non-negative label per vertex.
  const std::vector<int>& labels() const { return labels_; }
  void set_labels(std::vector<int> labels);
  bool labeled() const { return !labels_.empty(); }
  int label(int v) const { return labels_.empty() ? -1 : labels_[v]; }

  // "0-1,0-2,1-2" (plus " labels=a,b,c" when labeled).
  std::string to_string() const;
  // The same pattern with vertex v renamed perm[v].
  Pattern permuted(const Perm& perm) const;

  bool operator==(const Pattern& o) const { return k_ == o.k_ && adj_ == o.adj_ && labels_ == o.labels_; }

 private:
  int k_ = 0;
  std::array<std::uint32_t, kMaxPatternSize> adj_{};
  std::vector<int> labels_;
};

// The automorphisms of p (label-preserving), identity first.
std::vector<Perm> automorphisms(const Pattern& p);

// Canonical relabelling: isomorphic patterns give equal canonical_form(); the string of the
// canonical form serves as the pattern's canonical name.
Pattern canonical_form(const Pattern& p);

// All connected graphs on k vertices (1 <= k <= 8), canonical, ordered by edge count then code.
std::vector<Pattern> connected_patterns(int k);

// Named patterns: triangle, wedge, diamond, tailed-triangle (paw), rectangle/square (4-cycle),
// pentagon (5-cycle), house, bowtie, dumbbell (two triangles joined by an edge), and the families
// K-clique, K-cycle, K-path, K-star, all of K vertices: K-star is a hub with K-1 leaves (3-star is a
// wedge; GraphMiner's "3star" has 3 leaves, our 4-star). Throws UsageError for unknown names.
Pattern named_pattern(const std::string& name);
std::vector<std::string> pattern_names();

// "0-1,1-2,2-0": vertices 0..max must all be used (a gap is a UsageError naming the unused ids).
Pattern parse_edge_string(const std::string& spec);

// File: one edge per line ('u v' or 'u-v'), '#' comments, optional 'labels a b c ...' line.
Pattern read_pattern_file(const std::filesystem::path& path);

// A name, an edge string or an existing file, in that order; the pattern must be connected.
Pattern parse_pattern(const std::string& spec);

}  // namespace core::graph
