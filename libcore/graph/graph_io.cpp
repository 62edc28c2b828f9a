// Graph file readers and the binary CSR cache (see graph_io.hpp). Parsing works on the whole file
// in memory with std::from_chars; every error names the file and the 1-based line.
#include "graph/graph_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "common/cpu_time.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"
#include "common/timer.hpp"
#include "graph/generators.hpp"

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

// Version 3: the checksum runs in four lanes, the header has flags, the arrays are laid out for mapping.
constexpr char kMagic[8] = {'G', 'Z', 'C', 'S', 'R', '0', '0', '3'};
constexpr std::size_t kMagicFamily = 5;  // "GZCSR": a cache of some version

std::uint64_t mix(std::uint64_t h, std::uint64_t w) {
  h ^= w + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

// 64-bit checksum of a byte range: four independent multiply-xorshift lanes over 32-byte blocks (so a
// core overlaps their multiplies: a few GB/s), then the tail and the lanes folded into one. Any flipped
// bit changes it with overwhelming probability. It guards against damage, not against deliberate forgery.
std::uint64_t checksum(const void* data, std::size_t size, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t lane[4] = {h, h ^ 0x243F6A8885A308D3ull, h ^ 0x13198A2E03707344ull, h ^ 0xA4093822299F31D0ull};
  std::size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int k = 0; k < 4; ++k) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = mix(lane[k], w);
    }
  for (; i + 8 <= size; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    lane[0] = mix(lane[0], w);
  }
  std::uint64_t tail = 0;
  if (size > i) std::memcpy(&tail, p + i, size - i);
  h = mix(h, tail ^ (static_cast<std::uint64_t>(size) << 56));
  for (std::uint64_t l : lane) h = mix(h, l);
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

namespace {

// Where a source's cache file goes in the folder `folder`: its name and a hash of what identifies it.
fs::path cache_file(const fs::path& folder, const std::string& stem, const std::string& identity, bool relabel) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016zx", std::hash<std::string>{}(identity));
  return folder / (stem + "-" + hex + (relabel ? ".deg.csr" : ".csr"));
}

constexpr std::uint64_t kRelabelled = 1, kGenerated = 2;  // header flags

// What a cache was built from: a file's size and mtime, or (generated) 0 and a hash of spec and seed.
struct SourceStamp {
  std::uint64_t size = 0, time_or_hash = 0;
  bool operator==(const SourceStamp&) const = default;
};

SourceStamp file_stamp(const fs::path& source) {
  std::error_code ec;
  const auto size = fs::file_size(source, ec);
  return {ec ? ~std::uint64_t{0} : size, file_mtime_ns(source)};
}

std::string generator_identity(const std::string& spec, std::uint64_t seed) {
  return spec + " seed " + std::to_string(seed);
}

SourceStamp generator_stamp(const std::string& spec, std::uint64_t seed) {
  return {0, checksum(generator_identity(spec, seed).data(), generator_identity(spec, seed).size(), 0)};
}

struct CacheHeader {
  char magic[8];
  std::uint64_t flags;
  SourceStamp source;
  CleanReport report;
  std::uint64_t n, adj_size;
  std::uint64_t checksum;  // of the header before this field (without the magic) and the three arrays
};
static_assert(sizeof(CacheHeader) == 104 && sizeof(CacheHeader) % 8 == 0, "the arrays after it stay aligned");

std::uint64_t expected_size(const CacheHeader& h) {
  return sizeof h + (2 * h.n + 1) * sizeof(EdgeIndex) + h.adj_size * sizeof(Vertex);
}

std::uint64_t cache_checksum(const CacheHeader& h, const Graph& g) {
  std::uint64_t c = checksum(&h.flags, offsetof(CacheHeader, checksum) - offsetof(CacheHeader, flags), 0);
  c = checksum(g.offsets.data(), g.offsets.size() * sizeof(EdgeIndex), c);
  c = checksum(g.original_ids.data(), g.original_ids.size() * sizeof(std::uint64_t), c);
  return checksum(g.adj.data(), g.adj.size() * sizeof(Vertex), c);
}

void write_cache(const fs::path& cache, const SourceStamp& source, const LoadedGraph& g) {
  CacheHeader h{};
  std::memcpy(h.magic, kMagic, 8);
  h.flags = (g.relabelled ? kRelabelled : 0) | (g.generated ? kGenerated : 0);
  h.source = source;
  h.report = g.report;
  h.n = g.graph.n();
  h.adj_size = g.graph.adj.size();
  h.checksum = cache_checksum(h, g.graph);
  if (cache.has_parent_path()) fs::create_directories(cache.parent_path());
  AtomicFile file(cache);
  std::ofstream& out = file.stream();
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  const auto append = [&](const auto& array) {
    out.write(reinterpret_cast<const char*>(array.data()), static_cast<std::streamsize>(array.size() * sizeof(array[0])));
  };
  append(g.graph.offsets);
  append(g.graph.original_ids);
  append(g.graph.adj);
  file.commit();
}

// A read-only file mapping (private, copy-on-write), unmapped with its last owner.
std::shared_ptr<unsigned char> map_file(const fs::path& path, std::uint64_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open the graph cache '" + path.string() + "': " + std::strerror(errno));
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw IoError("cannot map the graph cache '" + path.string() + "': " + std::strerror(err));
  return {static_cast<unsigned char*>(p), [size](unsigned char* q) { ::munmap(q, size); }};
}

// What reading a cache found.
enum class CacheState { usable, absent, other_version, stale };

// Maps `cache` into out (state usable), or says why it cannot be used. `source`: the stamp it must carry
// (none: any); `origin` names the source in messages. Damage is a DataError naming the file.
CacheState read_cache(const fs::path& cache, const std::optional<SourceStamp>& source, const std::string& origin,
                      LoadedGraph& out) {
  std::error_code ec;
  const std::uint64_t size = fs::file_size(cache, ec);
  if (ec) return CacheState::absent;
  const std::string fix = origin.empty() ? "write it again"
                                         : "delete it to rebuild it from " + origin + ", or use --graph-cache off";
  const auto damaged = [&](const std::string& why) {
    return DataError("graph cache '" + cache.string() + "' is damaged (" + why + "): " + fix);
  };
  CacheHeader h{};
  {
    std::ifstream in(cache, std::ios::binary);
    if (!in) throw IoError("cannot open the graph cache '" + cache.string() + "'");
    in.read(reinterpret_cast<char*>(&h), sizeof h);
    if (std::memcmp(h.magic, kMagic, kMagicFamily) != 0)
      throw damaged("it does not start with '" + std::string(kMagic, kMagicFamily) + "': not a graph cache");
    if (std::memcmp(h.magic, kMagic, 8) != 0) return CacheState::other_version;
    if (static_cast<std::uint64_t>(in.gcount()) < sizeof h) throw damaged("shorter than its header");
  }
  if (source && !(h.source == *source)) return CacheState::stale;
  // The size must match the header's counts before anything is mapped; then the arrays must match the
  // checksum and form a CSR whose ids are in range.
  if (h.n >= std::numeric_limits<Vertex>::max() || h.adj_size > size || h.n > size)
    throw damaged("impossible counts in its header");
  if (size != expected_size(h))
    throw damaged(std::to_string(size) + " bytes, its header's counts need " + std::to_string(expected_size(h)) +
                  " (truncated?)");
  const auto map = map_file(cache, size);
  const auto at = [&](std::uint64_t offset) { return map.get() + offset; };
  Graph g;
  g.offsets = CsrArray<EdgeIndex>::view(reinterpret_cast<EdgeIndex*>(at(sizeof h)), h.n + 1, map);
  g.original_ids = CsrArray<std::uint64_t>::view(
      reinterpret_cast<std::uint64_t*>(at(sizeof h + (h.n + 1) * sizeof(EdgeIndex))), h.n, map);
  g.adj = CsrArray<Vertex>::view(reinterpret_cast<Vertex*>(at(sizeof h + (2 * h.n + 1) * sizeof(EdgeIndex))),
                                 h.adj_size, map);
  if (cache_checksum(h, g) != h.checksum) throw damaged("checksum mismatch");
  if (const std::string why = check_structure(g); !why.empty()) throw damaged(why);
  out.graph = std::move(g);
  out.report = h.report;
  out.from_cache = true;
  out.relabelled = (h.flags & kRelabelled) != 0;
  out.generated = (h.flags & kGenerated) != 0;
  out.cache_path = cache;
  return CacheState::usable;
}

// Relabels the loaded graph by degree, timing it (wall and process CPU).
void relabel_loaded(LoadedGraph& out, int threads) {
  const Timer t;
  const double cpu0 = process_cpu_seconds();
  out.graph = relabel_by_degree(out.graph, threads);
  out.relabelled = true;
  out.relabel_s = t.seconds();
  out.relabel_cpu_s = process_cpu_seconds() - cpu0;
}

// Loads through the cache `cache` (empty: none): maps it when usable, else builds the graph with
// `build`, relabels it when asked and writes the cache.
template <class Build>
LoadedGraph load_cached(const fs::path& cache, const SourceStamp& stamp, const std::string& origin,
                        const LoadOptions& options, const Build& build) {
  LoadedGraph out;
  if (!cache.empty()) {
    switch (read_cache(cache, stamp, origin, out)) {
      case CacheState::usable:
        if (out.relabelled != options.relabel)
          throw DataError("graph cache '" + cache.string() + "' does not hold the " +
                          (options.relabel ? "degree-relabelled" : "input-ordered") + " graph its name says: delete it");
        return out;
      case CacheState::stale:
        core::log::warn("graph cache {} is stale ({} changed): rebuilding it", cache.string(), origin);
        break;
      case CacheState::other_version:
        core::log::info("graph cache {} has another format version: rebuilding it", cache.string());
        break;
      case CacheState::absent:
        break;
    }
  }
  build(out);
  if (options.relabel) relabel_loaded(out, options.threads);
  if (!cache.empty()) {
    try {
      write_cache(cache, stamp, out);
      out.cache_path = cache;
    } catch (const std::exception& e) {  // the cache only saves time; never fail the run for it
      core::log::warn("could not write the graph cache {}: {}", cache.string(), e.what());
    }
  }
  return out;
}

}  // namespace

fs::path graph_cache_folder(const LoadOptions& options) {
  if (options.cache != "auto") return options.cache;
  // The user's cache folder: a dataset folder is not ours to write, even when it is writable.
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg && *xdg ? fs::path(xdg) : home && *home ? fs::path(home) / ".cache" : fs::temp_directory_path();
  return base / "toolkit" / "graphs";
}

fs::path cache_path_for(const fs::path& source, const LoadOptions& options) {
  if (options.cache == "off") return {};
  const fs::path abs = fs::absolute(source).lexically_normal();
  return cache_file(graph_cache_folder(options), abs.filename().string(), abs.string(), options.relabel);
}

void write_csr_cache(const fs::path& cache, const fs::path& source, const LoadedGraph& g) {
  write_cache(cache, file_stamp(source), g);
}

bool read_csr_cache(const fs::path& cache, const fs::path& source, LoadedGraph& out) {
  return read_cache(cache, file_stamp(source), "'" + source.string() + "'", out) == CacheState::usable;
}

LoadedGraph map_csr_cache(const fs::path& cache) {
  if (!fs::exists(cache)) throw InputMissingError("graph cache '" + cache.string() + "' does not exist");
  LoadedGraph out;
  if (read_cache(cache, std::nullopt, "", out) == CacheState::other_version)
    throw DataError("graph cache '" + cache.string() + "' has another format version (this build reads " +
                    std::string(kMagic, 8) + "): write it again");
  return out;
}

bool is_csr_cache(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[kMagicFamily] = {};
  in.read(head, sizeof head);
  return in.gcount() == static_cast<std::streamsize>(kMagicFamily) && std::memcmp(head, kMagic, kMagicFamily) == 0;
}

LoadedGraph load_graph(const fs::path& path, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputMissingError("graph input '" + path.string() + "' does not exist");
  return load_cached(cache_path_for(path, options), file_stamp(path), "'" + path.string() + "'", options,
                     [&](LoadedGraph& out) {
                       out.graph = format_of(path) == GraphFormat::matrix_market ? read_matrix_market(path, &out.report)
                                                                                 : read_edge_list(path, &out.report);
                     });
}

LoadedGraph load_graph_input(const std::string& spec, std::uint64_t seed, const LoadOptions& options) {
  if (!is_generator_spec(spec)) {
    if (!is_csr_cache(spec)) return load_graph(spec, options);
    LoadedGraph out = map_csr_cache(spec);
    if (options.relabel && !out.relabelled) relabel_loaded(out, options.threads);
    return out;
  }
  // Generated graphs are cached only in a folder the user named (a bare run must not fill ~/.cache).
  const bool cached = options.cache != "auto" && options.cache != "off";
  std::string stem = spec;
  for (char& c : stem)
    if (c == ':' || c == '/') c = '-';
  const fs::path cache = cached ? cache_file(options.cache, stem + "-seed" + std::to_string(seed),
                                             generator_identity(spec, seed), options.relabel)
                                : fs::path();
  return load_cached(cache, generator_stamp(spec, seed), "the generator '" + spec + "'", options,
                     [&](LoadedGraph& out) {
                       out.graph = std::move(*generate_from_spec(spec, seed, &out.report));  // not a copy
                       out.generated = true;
                     });
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
