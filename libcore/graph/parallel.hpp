// The outer loop of every back-end: root vertices 0..n-1 cut into chunks; chunk c belongs to
// rank c mod world_size (the MPI split), and the threads of a rank take its chunks dynamically
// from an atomic counter (low ids are the high-degree vertices, so static splits balance badly).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "graph/csr.hpp"

namespace core::graph {

// Whether count_matches counts cliques in the roots' local graphs (Plan::local_graph): as the plan
// says (the cost model's choice), never, or wherever the plan is a clique chain.
enum class LocalGraph : std::uint8_t { by_plan, never, where_applicable };
LocalGraph parse_local_graph(const std::string& s);  // "auto" | "off" | "on", else UsageError

struct ExecOptions {
  int threads = 1;
  int rank = 0;        // this process's share of the outer loop ...
  int world_size = 1;  // ... among this many processes
  LocalGraph local_graph = LocalGraph::by_plan;
};

// Calls body(thread_index, begin, end) for root ranges until all chunks are done or `stop` is set.
// A stop signal (core::stop_requested(): SIGTERM, SIGUSR1) ends it between chunks with an Error of
// ExitCode::interrupted.
void parallel_roots(Vertex n, const ExecOptions& opt, const std::function<void(int, Vertex, Vertex)>& body,
                    const std::atomic<bool>* stop = nullptr);

}  // namespace core::graph
