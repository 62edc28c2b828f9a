// Patterns, automorphisms, canonical forms and connected-pattern enumeration (see pattern.hpp).
#include "graph/pattern.hpp"

#include <algorithm>
#include <bit>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "common/errors.hpp"

namespace core::graph {

Pattern::Pattern(int k) : k_(k) {
  if (k < 1 || k > kMaxPatternSize)
    throw UsageError("patterns need 1.." + std::to_string(kMaxPatternSize) + " vertices, got " + std::to_string(k));
}

void Pattern::add_edge(int u, int v) {
  if (u < 0 || v < 0 || u >= k_ || v >= k_) throw UsageError("pattern edge " + std::to_string(u) + "-" + std::to_string(v) + " out of range");
  if (u == v) throw UsageError("pattern edge " + std::to_string(u) + "-" + std::to_string(v) + " is a self-loop");
  adj_[u] |= 1u << v;
  adj_[v] |= 1u << u;
}

int Pattern::degree(int v) const { return std::popcount(adj_[v]); }

int Pattern::edge_count() const {
  int s = 0;
  for (int v = 0; v < k_; ++v) s += degree(v);
  return s / 2;
}

std::vector<std::pair<int, int>> Pattern::edges() const {
  std::vector<std::pair<int, int>> e;
  for (int u = 0; u < k_; ++u)
    for (int v = u + 1; v < k_; ++v)
      if (has_edge(u, v)) e.emplace_back(u, v);
  return e;
}

bool Pattern::connected() const {
  if (k_ == 0) return false;
  std::uint32_t seen = 1, frontier = 1;
  while (frontier) {
    std::uint32_t next = 0;
    for (int v = 0; v < k_; ++v)
      if ((frontier >> v) & 1u) next |= adj_[v];
    frontier = next & ~seen;
    seen |= next;
  }
  return seen == (k_ == 32 ? ~0u : (1u << k_) - 1);
}

void Pattern::set_labels(std::vector<int> labels) {
  if (!labels.empty() && static_cast<int>(labels.size()) != k_)
    throw UsageError("pattern has " + std::to_string(k_) + " vertices but " + std::to_string(labels.size()) + " labels were given");
  for (int l : labels)
    if (l < 0) throw UsageError("pattern labels must be >= 0");
  labels_ = std::move(labels);
}

std::string Pattern::to_string() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [u, v] : edges()) {
    os << (first ? "" : ",") << u << "-" << v;
    first = false;
  }
  if (k_ == 1) os << "0";
  if (labeled()) {
    os << " labels=";
    for (int v = 0; v < k_; ++v) os << (v ? "," : "") << labels_[v];
  }
  return os.str();
}

Pattern Pattern::permuted(const Perm& perm) const {
  Pattern q(k_);
  for (const auto& [u, v] : edges()) q.add_edge(perm[u], perm[v]);
  if (labeled()) {
    std::vector<int> l(k_);
    for (int v = 0; v < k_; ++v) l[perm[v]] = labels_[v];
    q.labels_ = std::move(l);
  }
  return q;
}

namespace {

// Vertex invariants: label, degree and the sorted neighbour degrees. Equal keys = same class.
std::vector<std::vector<int>> vertex_keys(const Pattern& p) {
  std::vector<std::vector<int>> keys(p.size());
  for (int v = 0; v < p.size(); ++v) {
    std::vector<int> nd;
    for (int w = 0; w < p.size(); ++w)
      if (p.has_edge(v, w)) nd.push_back(p.degree(w));
    std::sort(nd.begin(), nd.end());
    keys[v] = {p.label(v), p.degree(v)};
    keys[v].insert(keys[v].end(), nd.begin(), nd.end());
  }
  return keys;
}

}  // namespace

std::vector<Perm> automorphisms(const Pattern& p) {
  const int k = p.size();
  const auto keys = vertex_keys(p);
  std::vector<Perm> out;
  Perm sigma{};
  std::uint32_t used = 0;
  // Assign sigma(0), sigma(1), ... keeping adjacency with all earlier vertices consistent.
  auto extend = [&](auto&& self, int v) -> void {
    if (v == k) {
      out.push_back(sigma);
      return;
    }
    for (int w = 0; w < k; ++w) {
      if ((used >> w) & 1u || keys[w] != keys[v]) continue;
      bool ok = true;
      for (int u = 0; u < v && ok; ++u) ok = p.has_edge(u, v) == p.has_edge(sigma[u], w);
      if (!ok) continue;
      sigma[v] = static_cast<std::uint8_t>(w);
      used |= 1u << w;
      self(self, v + 1);
      used &= ~(1u << w);
    }
  };
  extend(extend, 0);
  // Lexicographic order puts the identity first.
  std::sort(out.begin(), out.end(), [k](const Perm& a, const Perm& b) {
    return std::lexicographical_compare(a.begin(), a.begin() + k, b.begin(), b.begin() + k);
  });
  return out;
}

Pattern canonical_form(const Pattern& p) {
  const int k = p.size();
  const auto keys = vertex_keys(p);
  // Order vertices by key; positions of one class are filled by all arrangements of its members.
  std::vector<int> by_key(k);
  std::iota(by_key.begin(), by_key.end(), 0);
  std::stable_sort(by_key.begin(), by_key.end(), [&](int a, int b) { return keys[a] < keys[b]; });
  std::vector<int> class_start(k);
  for (int i = 0; i < k; ++i)
    class_start[i] = (i > 0 && keys[by_key[i]] == keys[by_key[i - 1]]) ? class_start[i - 1] : i;
  // pos[i] = the vertex at canonical position i. Enumerate with partial-code pruning: the code
  // is read position pair by position pair (i, j < i), so a prefix worse than the best is cut.
  std::vector<int> pos(k, -1);
  std::uint32_t used = 0;
  std::vector<int> best_bits, cur_bits;
  auto place = [&](auto&& self, int i) -> void {
    if (i == k) {
      if (cur_bits > best_bits) best_bits = cur_bits;
      return;
    }
    const int cs = class_start[i];
    for (int t = cs; t < k && keys[by_key[t]] == keys[by_key[cs]]; ++t) {
      const int v = by_key[t];
      if ((used >> v) & 1u) continue;
      const std::size_t mark = cur_bits.size();
      for (int j = 0; j < i; ++j) cur_bits.push_back(p.has_edge(pos[j], v) ? 1 : 0);
      // Prune when the prefix is already smaller than the best complete code's prefix.
      const bool can_win = best_bits.empty() ||
                           !std::lexicographical_compare(cur_bits.begin(), cur_bits.end(), best_bits.begin(),
                                                         best_bits.begin() + cur_bits.size());
      if (can_win) {
        pos[i] = v;
        used |= 1u << v;
        self(self, i + 1);
        used &= ~(1u << v);
      }
      cur_bits.resize(mark);
    }
  };
  place(place, 0);
  // Rebuild the best arrangement from its code.
  Pattern q(k);
  std::size_t b = 0;
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < i; ++j)
      if (best_bits[b++]) q.add_edge(j, i);
  if (p.labeled()) {
    std::vector<int> l(k);
    for (int i = 0; i < k; ++i) l[i] = keys[by_key[i]][0];
    q.set_labels(std::move(l));
  }
  return q;
}

std::vector<Pattern> connected_patterns(int k) {
  if (k < 1 || k > 8) throw UsageError("connected patterns are listed for 1..8 vertices, got " + std::to_string(k));
  std::vector<Pattern> level{Pattern(1)};
  for (int size = 2; size <= k; ++size) {
    std::map<std::string, Pattern> seen;
    for (const Pattern& p : level) {
      // Every connected graph has a vertex whose removal leaves it connected: attach the new
      // vertex to every non-empty subset of the old ones.
      for (std::uint32_t mask = 1; mask < (1u << (size - 1)); ++mask) {
        Pattern q(size);
        for (const auto& [u, v] : p.edges()) q.add_edge(u, v);
        for (int u = 0; u < size - 1; ++u)
          if ((mask >> u) & 1u) q.add_edge(u, size - 1);
        Pattern c = canonical_form(q);
        seen.emplace(c.to_string(), c);
      }
    }
    level.clear();
    for (auto& [name, p] : seen) level.push_back(p);
  }
  std::stable_sort(level.begin(), level.end(),
                   [](const Pattern& a, const Pattern& b) { return a.edge_count() < b.edge_count(); });
  return level;
}

namespace {

int family_size(const std::string& name, const std::string& suffix) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string num = name.substr(0, name.size() - suffix.size());
  if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos || num.size() > 3) return -1;
  return std::stoi(num);
}

Pattern from_edges(int k, std::initializer_list<std::pair<int, int>> edges) {
  Pattern p(k);
  for (const auto& [u, v] : edges) p.add_edge(u, v);
  return p;
}

}  // namespace

std::vector<std::string> pattern_names() {
  return {"triangle", "wedge", "diamond", "tailed-triangle", "paw", "rectangle", "square", "pentagon", "house",
          "bowtie", "dumbbell", "K-clique", "K-cycle", "K-path", "K-star"};
}

Pattern named_pattern(const std::string& name) {
  if (name == "triangle") return named_pattern("3-clique");
  if (name == "wedge") return named_pattern("3-path");
  if (name == "diamond") return from_edges(4, {{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 3}});
  if (name == "tailed-triangle" || name == "paw") return from_edges(4, {{0, 1}, {1, 2}, {2, 0}, {0, 3}});
  if (name == "house") return from_edges(5, {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}});
  if (name == "bowtie") return from_edges(5, {{0, 1}, {1, 2}, {2, 0}, {0, 3}, {3, 4}, {4, 0}});
  if (name == "rectangle" || name == "square") return named_pattern("4-cycle");
  if (name == "pentagon") return named_pattern("5-cycle");
  if (name == "dumbbell") return from_edges(6, {{0, 1}, {1, 2}, {2, 0}, {0, 3}, {3, 4}, {4, 5}, {5, 3}});
  const auto check = [&](int k, int lo) {
    if (k < lo || k > kMaxPatternSize)
      throw UsageError("pattern '" + name + "': size must be in [" + std::to_string(lo) + ", " +
                       std::to_string(kMaxPatternSize) + "]");
    return k;
  };
  if (int k = family_size(name, "-clique"); k >= 0) {
    Pattern p(check(k, 2));
    for (int u = 0; u < k; ++u)
      for (int v = u + 1; v < k; ++v) p.add_edge(u, v);
    return p;
  }
  if (int k = family_size(name, "-cycle"); k >= 0) {
    Pattern p(check(k, 3));
    for (int u = 0; u < k; ++u) p.add_edge(u, (u + 1) % k);
    return p;
  }
  if (int k = family_size(name, "-path"); k >= 0) {
    Pattern p(check(k, 2));
    for (int u = 0; u + 1 < k; ++u) p.add_edge(u, u + 1);
    return p;
  }
  if (int k = family_size(name, "-star"); k >= 0) {
    Pattern p(check(k, 2));
    for (int u = 1; u < k; ++u) p.add_edge(0, u);
    return p;
  }
  std::string known;
  for (const auto& n : pattern_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown pattern '" + name + "' (known: " + known + ", an edge list like 0-1,1-2,2-0, or a pattern file)");
}

namespace {

// The edges of "0-1,1-2,..." on vertices 0..max, without the check that every id is used.
Pattern parse_edges(const std::string& spec) {
  std::vector<std::pair<int, int>> edges;
  int max_v = -1;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto dash = item.find('-');
    const auto bad = [&] { return UsageError("pattern '" + spec + "': cannot read edge '" + item + "' (expected u-v)"); };
    if (dash == std::string::npos) throw bad();
    const std::string a = item.substr(0, dash), b = item.substr(dash + 1);
    if (a.empty() || b.empty() || a.size() > 3 || b.size() > 3 ||
        a.find_first_not_of("0123456789") != std::string::npos || b.find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    edges.emplace_back(std::stoi(a), std::stoi(b));
    max_v = std::max({max_v, edges.back().first, edges.back().second});
  }
  if (edges.empty()) throw UsageError("pattern '" + spec + "' has no edges");
  if (max_v + 1 > kMaxPatternSize) throw UsageError("pattern '" + spec + "' has more than " + std::to_string(kMaxPatternSize) + " vertices");
  Pattern p(max_v + 1);
  for (const auto& [u, v] : edges) p.add_edge(u, v);
  return p;
}

}  // namespace

Pattern parse_edge_string(const std::string& spec) {
  Pattern p = parse_edges(spec);
  const int max_v = p.size() - 1;
  std::string unused;
  int used = 0;
  for (int v = 0; v <= max_v; ++v) {
    if (p.degree(v) > 0) ++used;
    else unused += (unused.empty() ? "" : ", ") + std::to_string(v);
  }
  if (!unused.empty())
    throw UsageError("pattern '" + spec + "': vertex ids must be 0.." + std::to_string(max_v) +
                     " without gaps, but no edge uses " + unused + " (number the " + std::to_string(used) +
                     " vertices 0.." + std::to_string(used - 1) + ")");
  return p;
}

Pattern read_pattern_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputMissingError("cannot open pattern file '" + path.string() + "'");
  std::string edges, line;
  std::vector<int> labels;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    std::stringstream ls(line);
    std::string first;
    if (!(ls >> first)) continue;
    if (first == "labels") {
      for (std::string t; ls >> t;) {
        if (t.find_first_not_of("0123456789") != std::string::npos || t.size() > 7)
          throw DataError(path.string() + ":" + std::to_string(line_no) + ": label '" + t +
                          "' is not a non-negative integer below 10^7");
        labels.push_back(std::stoi(t));
      }
      continue;
    }
    std::string second;
    if (first.find('-') == std::string::npos) {
      if (!(ls >> second)) throw DataError(path.string() + ":" + std::to_string(line_no) + ": expected an edge 'u v' or 'u-v'");
      first += "-" + second;
    }
    if (ls >> second) throw DataError(path.string() + ":" + std::to_string(line_no) + ": expected one edge per line");
    try {
      parse_edges(first);  // this line's edge on its own, so that an error names the line
    } catch (const UsageError& e) {
      throw DataError(path.string() + ":" + std::to_string(line_no) + ": " + e.what());
    }
    edges += (edges.empty() ? "" : ",") + first;
  }
  try {
    Pattern p = parse_edge_string(edges);
    p.set_labels(labels);
    return p;
  } catch (const UsageError& e) {
    throw DataError(path.string() + ": " + e.what());
  }
}

Pattern parse_pattern(const std::string& spec) {
  Pattern p;
  std::error_code ec;
  if (spec.find('-') != std::string::npos && spec.find_first_not_of("0123456789-, ") == std::string::npos)
    p = parse_edge_string(spec);
  else if (std::filesystem::is_regular_file(spec, ec))
    p = read_pattern_file(spec);
  else if (spec.find('/') != std::string::npos || spec.find('.') != std::string::npos)
    throw InputMissingError("pattern file '" + spec + "' does not exist");
  else
    p = named_pattern(spec);
  if (!p.connected()) throw UsageError("pattern '" + spec + "' is not connected");
  return p;
}

}  // namespace core::graph
