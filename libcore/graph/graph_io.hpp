// Reading graphs: SNAP / gapbs edge lists ('u v' per line, optional third weight column, '#' or
// '%' comments), Matrix Market coordinate files (1-based, any field, general or symmetric), and
// the binary CSR cache written after the first load of a text file (invalidated when the source's
// size or modification time changes; a cache of another format version, with a wrong checksum or that
// fails check_structure is rebuilt with a warning, never trusted). Vertex labels: one label per line for ids 0.. (or 'id label').
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
};

struct LoadedGraph {
  Graph graph;
  CleanReport report;
  bool from_cache = false;
  fs::path cache_path;  // empty when no cache was used or written
};

LoadedGraph load_graph(const fs::path& path, const LoadOptions& options = {});

// Where the cache of `source` lives under `options` (empty path for "off").
fs::path cache_path_for(const fs::path& source, const LoadOptions& options);

// Binary CSR cache: raw arrays plus the source's size and mtime.
void write_csr_cache(const fs::path& cache, const fs::path& source, const LoadedGraph& g);
// Returns false when the cache is absent, stale or unreadable (then it is rebuilt).
bool read_csr_cache(const fs::path& cache, const fs::path& source, LoadedGraph& out);

// Attaches labels indexed by original vertex id; every vertex of g needs one.
void read_vertex_labels(const fs::path& path, Graph& g);

}  // namespace core::graph
