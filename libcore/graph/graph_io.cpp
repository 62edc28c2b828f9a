// Graph file readers and the binary CSR cache (see graph_io.hpp). Parsing works on the whole file
// in memory with std::from_chars; every error names the file and the 1-based line.
#include "graph/graph_io.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"

namespace core::graph {

namespace {

// `what` names the input in errors ("graph input", "vertex label file").
std::string read_all(const fs::path& path, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputMissingError(what + " '" + path.string() + "' does not exist");
  if (fs::is_directory(path, ec)) throw InputMissingError(what + " '" + path.string() + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputMissingError("cannot open '" + path.string() + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IoError("error reading '" + path.string() + "'");
  return ss.str();
}

// Splits a line into whitespace-separated tokens (at most `max` are kept; the count is returned).
struct Tokens {
  std::string_view tok[4];
  int count = 0;
};
Tokens tokenize(std::string_view line) {
  Tokens t;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '\r')) ++i;
    if (i >= line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != ',' && line[j] != '\r') ++j;
    if (t.count < 4) t.tok[t.count] = line.substr(i, j - i);
    ++t.count;
    i = j;
  }
  return t;
}

[[noreturn]] void bad_line(const fs::path& path, std::size_t line_no, const std::string& what,
                           std::string_view line) {
  std::string shown(line.substr(0, 80));
  if (!shown.empty() && shown.back() == '\r') shown.pop_back();
  throw DataError(path.string() + ":" + std::to_string(line_no) + ": " + what + " (line: '" + shown + "')");
}

std::uint64_t parse_id(std::string_view s, const fs::path& path, std::size_t line_no, std::string_view line) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    bad_line(path, line_no, "expected a non-negative integer vertex id, got '" + std::string(s) + "'", line);
  return v;
}

bool parse_number(std::string_view s) {
  double d = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  return ec == std::errc() && p == s.data() + s.size();
}

// Calls fn(line_no, line) for every line.
template <class Fn>
void for_each_line(const std::string& text, Fn&& fn) {
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line_no;
    fn(line_no, std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
  }
}

bool blank_or_comment(std::string_view line, bool mm) {
  std::size_t i = line.find_first_not_of(" \t\r");
  if (i == std::string_view::npos) return true;
  return line[i] == '%' || (!mm && line[i] == '#');
}

std::uint64_t file_mtime_ns(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
}

// Format version 2 added the checksum; a cache of another version is rebuilt.
constexpr char kMagic[8] = {'G', 'Z', 'C', 'S', 'R', '0', '0', '2'};

// 64-bit checksum of a byte range, eight bytes a step (multiply-xorshift mixing; any flipped bit changes it with
// overwhelming probability). It guards the cache against damage, not against deliberate forgery.
std::uint64_t checksum(const void* data, std::size_t size, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  const auto mix = [&h](std::uint64_t w) {
    h ^= w + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  };
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(w);
  }
  std::uint64_t tail = 0;
  if (size > i) std::memcpy(&tail, p + i, size - i);
  mix(tail ^ (static_cast<std::uint64_t>(size) << 56));
  return h;
}

}  // namespace

GraphFormat format_of(const fs::path& path) {
  std::string ext = path.extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".mtx") return GraphFormat::matrix_market;
  // Any other name: a Matrix Market header still says what the file is (to the edge-list reader
  // it is a '%' comment, and the size line 'rows cols entries' would become an edge).
  std::ifstream in(path, std::ios::binary);
  char head[14] = {};
  in.read(head, sizeof head);
  std::string start(head, static_cast<std::size_t>(in.gcount()));
  for (auto& c : start) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return start == "%%matrixmarket" ? GraphFormat::matrix_market : GraphFormat::edge_list;
}

Graph read_edge_list(const fs::path& path, CleanReport* report) {
  const std::string text = read_all(path, "graph input");
  std::vector<RawEdge> edges;
  edges.reserve(text.size() / 10);
  for_each_line(text, [&](std::size_t line_no, std::string_view line) {
    if (blank_or_comment(line, false)) return;
    const Tokens t = tokenize(line);
    if (t.count < 2) bad_line(path, line_no, "expected 'u v' (two vertex ids)", line);
    if (t.count > 3) bad_line(path, line_no, "expected 'u v' or 'u v weight', got more columns", line);
    if (t.count == 3 && !parse_number(t.tok[2])) bad_line(path, line_no, "the weight column is not a number", line);
    edges.emplace_back(parse_id(t.tok[0], path, line_no, line), parse_id(t.tok[1], path, line_no, line));
  });
  if (edges.empty()) throw DataError(path.string() + ": no edges found");
  return build_graph(std::move(edges), report);
}

Graph read_matrix_market(const fs::path& path, CleanReport* report) {
  const std::string text = read_all(path, "graph input");
  std::vector<RawEdge> edges;
  bool header_seen = false, size_seen = false;
  std::uint64_t rows = 0, cols = 0, nnz = 0;
  std::size_t last_line = 0;
  for_each_line(text, [&](std::size_t line_no, std::string_view line) {
    last_line = line_no;
    if (!header_seen) {
      std::string lower(line);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const Tokens t = tokenize(lower);
      if (t.count < 5 || t.tok[0] != "%%matrixmarket" || t.tok[1] != "matrix")
        bad_line(path, line_no, "expected the header '%%MatrixMarket matrix coordinate <field> <symmetry>'", line);
      if (t.tok[2] != "coordinate") bad_line(path, line_no, "only 'coordinate' (sparse) matrices describe graphs", line);
      header_seen = true;
      return;
    }
    if (blank_or_comment(line, true)) return;
    const Tokens t = tokenize(line);
    if (!size_seen) {
      if (t.count != 3) bad_line(path, line_no, "expected the size line 'rows cols entries'", line);
      rows = parse_id(t.tok[0], path, line_no, line);
      cols = parse_id(t.tok[1], path, line_no, line);
      nnz = parse_id(t.tok[2], path, line_no, line);
      edges.reserve(std::min<std::uint64_t>(nnz, text.size() / 4));  // an entry takes 4 bytes at least
      size_seen = true;
      return;
    }
    if (t.count < 2 || t.count > 4) bad_line(path, line_no, "expected 'i j [value]'", line);
    for (int k = 2; k < t.count; ++k)
      if (!parse_number(t.tok[k])) bad_line(path, line_no, "the value column is not a number", line);
    const std::uint64_t i = parse_id(t.tok[0], path, line_no, line);
    const std::uint64_t j = parse_id(t.tok[1], path, line_no, line);
    if (i < 1 || i > rows || j < 1 || j > cols)
      bad_line(path, line_no, "entry outside the declared " + std::to_string(rows) + " x " + std::to_string(cols) + " matrix (indices are 1-based)", line);
    if (edges.size() == nnz) bad_line(path, line_no, "more entries than the " + std::to_string(nnz) + " declared", line);
    edges.emplace_back(i - 1, j - 1);
  });
  if (!header_seen) throw DataError(path.string() + ":1: empty file, expected a Matrix Market header");
  if (!size_seen) throw DataError(path.string() + ":" + std::to_string(last_line) + ": missing the size line");
  if (edges.size() != nnz)
    throw DataError(path.string() + ":" + std::to_string(last_line) + ": " + std::to_string(edges.size()) +
                    " entries, but the size line declares " + std::to_string(nnz));
  if (edges.empty()) throw DataError(path.string() + ": no entries");
  return build_graph(std::move(edges), report);
}

fs::path cache_path_for(const fs::path& source, const LoadOptions& options) {
  if (options.cache == "off") return {};
  const fs::path abs = fs::absolute(source).lexically_normal();
  if (options.cache == "auto") {
    // The user's cache folder: a dataset folder is not ours to write, even when it is writable.
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    fs::path base = xdg && *xdg ? fs::path(xdg) : home && *home ? fs::path(home) / ".cache" : fs::temp_directory_path();
    return cache_path_for(source, LoadOptions{(base / "toolkit" / "graphs").string()});
  }
  const std::size_t h = std::hash<std::string>{}(abs.string());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016zx", h);
  return fs::path(options.cache) / (abs.filename().string() + "-" + hex + ".csr");
}

namespace {
struct CacheHeader {
  char magic[8];
  std::uint64_t source_size, source_mtime_ns;
  CleanReport report;
  std::uint64_t checksum;  // of report, n, adj_size and the three arrays
  std::uint64_t n, adj_size;
};

std::uint64_t cache_checksum(const CacheHeader& h, const Graph& g) {
  std::uint64_t c = checksum(&h.report, sizeof h.report, 0);
  c = checksum(&h.n, 2 * sizeof h.n, c);
  c = checksum(g.offsets.data(), g.offsets.size() * sizeof(EdgeIndex), c);
  c = checksum(g.adj.data(), g.adj.size() * sizeof(Vertex), c);
  return checksum(g.original_ids.data(), g.original_ids.size() * sizeof(std::uint64_t), c);
}
}  // namespace

void write_csr_cache(const fs::path& cache, const fs::path& source, const LoadedGraph& g) {
  CacheHeader h{};
  std::memcpy(h.magic, kMagic, 8);
  h.source_size = fs::file_size(source);
  h.source_mtime_ns = file_mtime_ns(source);
  h.report = g.report;
  h.n = g.graph.n();
  h.adj_size = g.graph.adj.size();
  h.checksum = cache_checksum(h, g.graph);
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  const auto append = [&](const auto& vec) {
    bytes.append(reinterpret_cast<const char*>(vec.data()), vec.size() * sizeof(vec[0]));
  };
  append(g.graph.offsets);
  append(g.graph.adj);
  append(g.graph.original_ids);
  fs::create_directories(cache.parent_path());
  write_file_atomic(cache, bytes);
}

bool read_csr_cache(const fs::path& cache, const fs::path& source, LoadedGraph& out) {
  std::ifstream in(cache, std::ios::binary);
  if (!in) return false;
  CacheHeader h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return false;
  std::error_code ec;
  if (std::memcmp(h.magic, kMagic, 8) != 0) {
    core::log::info("graph cache {} has another format version: rebuilding it", cache.string());
    return false;
  }
  if (h.source_size != fs::file_size(source, ec) ||
      h.source_mtime_ns != file_mtime_ns(source))
    return false;
  // A damaged cache is rebuilt, never trusted: its size must match the header's counts before
  // anything is allocated, and the arrays must form a CSR whose ids are in range.
  const std::uint64_t cache_size = fs::file_size(cache, ec);
  if (ec || h.n >= std::numeric_limits<Vertex>::max() || h.adj_size > cache_size ||
      cache_size != sizeof h + (h.n + 1) * sizeof(EdgeIndex) + h.adj_size * sizeof(Vertex) +
                        h.n * sizeof(std::uint64_t))
    return false;
  Graph g;
  g.offsets.resize(h.n + 1);
  g.adj.resize(h.adj_size);
  g.original_ids.resize(h.n);
  const auto fill = [&](auto& vec) {
    return static_cast<bool>(in.read(reinterpret_cast<char*>(vec.data()), vec.size() * sizeof(vec[0])));
  };
  if (!fill(g.offsets) || !fill(g.adj) || !fill(g.original_ids)) return false;
  const auto damaged = [&](const std::string& why) {
    core::log::warn("graph cache {} is damaged ({}): rebuilding it from {}", cache.string(), why, source.string());
    return false;
  };
  if (cache_checksum(h, g) != h.checksum) return damaged("checksum mismatch");
  if (const std::string why = check_structure(g); !why.empty()) return damaged(why);
  out.graph = std::move(g);
  out.report = h.report;
  out.from_cache = true;
  out.cache_path = cache;
  return true;
}

LoadedGraph load_graph(const fs::path& path, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputMissingError("graph input '" + path.string() + "' does not exist");
  LoadedGraph out;
  const fs::path cache = cache_path_for(path, options);
  if (!cache.empty() && read_csr_cache(cache, path, out)) return out;
  out.graph = format_of(path) == GraphFormat::matrix_market ? read_matrix_market(path, &out.report)
                                                           : read_edge_list(path, &out.report);
  if (!cache.empty()) {
    try {
      write_csr_cache(cache, path, out);
      out.cache_path = cache;
    } catch (const std::exception& e) {  // the cache only saves time; never fail the run for it
      core::log::warn("could not write the graph cache {}: {}", cache.string(), e.what());
    }
  }
  return out;
}

void read_vertex_labels(const fs::path& path, Graph& g) {
  const std::string text = read_all(path, "vertex label file");
  // Labels of ids the graph does not have (isolated or absent vertices) are not needed; the
  // table is indexed by the graph's vertices, so a huge id costs nothing.
  std::unordered_map<std::uint64_t, Vertex> vertex_of;
  vertex_of.reserve(g.n());
  for (Vertex v = 0; v < g.n(); ++v) vertex_of.emplace(g.original_ids[v], v);
  std::vector<std::int32_t> labels(g.n(), -1);
  std::uint64_t next_id = 0;
  for_each_line(text, [&](std::size_t line_no, std::string_view line) {
    if (blank_or_comment(line, false)) return;
    const Tokens t = tokenize(line);
    if (t.count != 1 && t.count != 2) bad_line(path, line_no, "expected 'label' or 'vertex label'", line);
    const std::uint64_t id = t.count == 2 ? parse_id(t.tok[0], path, line_no, line) : next_id;
    const std::uint64_t label = parse_id(t.tok[t.count - 1], path, line_no, line);
    if (label > 1000000) bad_line(path, line_no, "label out of range (0..1000000)", line);
    if (const auto it = vertex_of.find(id); it != vertex_of.end()) labels[it->second] = static_cast<std::int32_t>(label);
    next_id = id + 1;
  });
  for (Vertex v = 0; v < g.n(); ++v)
    if (labels[v] < 0) throw DataError(path.string() + ": no label for vertex " + std::to_string(g.original_ids[v]));
  g.labels = std::move(labels);
}

}  // namespace core::graph
