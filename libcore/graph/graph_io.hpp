// Reading graphs: SNAP / gapbs edge lists ('u v' per line, optional third weight column, '#' or
// '%' comments), Matrix Market coordinate files (1-based, any field, general or symmetric), and
// the binary CSR cache written after the first load of a text file and memory-mapped by later loads
// (rebuilt with a warning when the source's size or modification time changes, or silently when it has
// another format version; a damaged cache is a DataError naming it, never trusted). Vertex labels: one label per line for ids 0.. (or 'id label').
// Malformed lines throw DataError naming file and line; a missing file throws InputMissingError.
#pragma once
#include <filesystem>
#include <string>

#include "graph/csr.hpp"

namespace core::graph {

namespace fs = std::filesystem;

enum class GraphFormat { edge_list, matrix_market };

// Format from the extension: .mtx -> Matrix Market, anything else an edge list.
GraphFormat format_of(const fs::path& path);

Graph read_edge_list(const fs::path& path, CleanReport* report = nullptr);
Graph read_matrix_market(const fs::path& path, CleanReport* report = nullptr);

struct LoadOptions {
  // "auto": the user cache folder ($XDG_CACHE_HOME or ~/.cache, then /toolkit/graphs);
  // "off": never read or write a cache; anything else: the folder to keep caches in.
  std::string cache = "auto";
  // Relabel by degree (relabel_by_degree) before caching: the cache then holds the graph the miner
  // uses, so a later load maps it and does nothing else. Such caches have their own file name.
  bool relabel = false;
  int threads = 0;  // relabelling threads (0: core::thread_count())
};

struct LoadedGraph {
  Graph graph;
  CleanReport report;
  bool from_cache = false;  // the graph's arrays are mapped from cache_path
  bool generated = false;   // built by a generator spec (generators.hpp)
  bool relabelled = false;  // relabel_by_degree was applied (here or before the cache was written)
  double relabel_s = 0;     // seconds spent relabelling in this load
  double relabel_cpu_s = 0; // CPU seconds of the process (all threads) spent relabelling in this load
  fs::path cache_path;      // empty when no cache was used or written
};

LoadedGraph load_graph(const fs::path& path, const LoadOptions& options = {});

// A graph input: a generator spec (generate_from_spec with `seed`; cached only where options.cache names
// a folder, keyed by the spec and seed), a CSR cache file (mapped as it is, see map_csr_cache), or a
// graph file (load_graph).
LoadedGraph load_graph_input(const std::string& spec, std::uint64_t seed, const LoadOptions& options = {});

// The folder of caches under `options` (options.cache itself unless "auto"; meaningless for "off").
fs::path graph_cache_folder(const LoadOptions& options);
// Where the cache of `source` lives under `options` (empty path for "off").
fs::path cache_path_for(const fs::path& source, const LoadOptions& options);

// Binary CSR cache, format version 3 (little-endian, this machine's layout): a 104-byte header (magic
// "GZCSR003"; flags: relabelled, generated; the source's size and modification time in ns, or 0 and a hash
// of a generator's spec and seed; the clean report; n; 2m; a checksum of the header and arrays), then
// offsets (n + 1 x u64), original ids (n x u64) and the adjacency (2m x u32). Written once through a
// temporary file and a rename; read by mapping it (private, copy-on-write), so every process of a host
// shares its pages. Before use the size must match the counts, the checksum the contents, and the arrays
// must pass check_structure.
void write_csr_cache(const fs::path& cache, const fs::path& source, const LoadedGraph& g);
// False when the cache is absent, of another format version or stale (the source changed: a warning);
// a DataError naming the cache file when it is damaged (truncated, wrong checksum, not a CSR) or was
// not written from `source`.
bool read_csr_cache(const fs::path& cache, const fs::path& source, LoadedGraph& out);
// Maps a cache file without a source to compare with (a graph given as its cache, or the file rank 0
// wrote for the other ranks). A DataError naming the file when it is no valid cache of this version.
LoadedGraph map_csr_cache(const fs::path& cache);
// Whether `path` starts with a CSR cache's magic (of any version).
bool is_csr_cache(const fs::path& path);

// Attaches labels indexed by original vertex id; every vertex of g needs one.
void read_vertex_labels(const fs::path& path, Graph& g);

}  // namespace core::graph
