// The outer loop of every back-end: root vertices 0..n-1 cut into chunks; chunk c belongs to
// rank c mod world_size (the MPI split), and the threads of a rank take its chunks dynamically
// from an atomic counter (low ids are the high-degree vertices, so static splits balance badly).
// parallel_chunks: the same dynamic taking for loops outside the matcher (graph building).
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "graph/csr.hpp"
#include "graph/populated.hpp"

namespace core::graph {

// Whether count_matches counts cliques in the roots' local graphs (Plan::local_graph): as the plan
// says (the cost model's choice), never, or wherever the plan is a clique chain.
enum class LocalGraph : std::uint8_t { by_plan, never, where_applicable };
LocalGraph parse_local_graph(const std::string& s);  // "auto" | "off" | "on", else UsageError

// What parallel_roots measured (summed over its calls): the idle tail, the sum over threads of the
// wall time from each thread's last task's end to the end of the last thread's; and the thread CPU
// time of the longest single task to within 1 ms (a lower bound on any tail, unaffected by other
// processes; read at most once a millisecond, see parallel_roots).
struct ExecStats {
  double idle_s = 0;
  double largest_task_s = 0;
};

// For every vertex v, how many neighbours have a smaller id (the oriented prefix of N(v)): lower_degrees
// (matcher.hpp). Populated (populated.hpp): fresh pages of a large graph's array cost a fault each.
using LowerDegrees = PopulatedVector<std::uint32_t>;

struct ExecOptions {
  int threads = 1;
  int rank = 0;        // this process's share of the outer loop ...
  int world_size = 1;  // ... among this many processes
  LocalGraph local_graph = LocalGraph::by_plan;
  bool split_roots = true;    // count_matches, sum_over_matches: heavy roots become several tasks (RootSplit)
  ExecStats* stats = nullptr;  // when set, parallel_roots adds its measurements
  const LowerDegrees* lower = nullptr;  // the graph's, computed once with it (else by every call that needs them)
  // No task starts after this time (a timed sample: the count is then partial; every pass of a decomposition
  // under the same deadline); none by default.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // A race's timed sample (plan_race.hpp): a decomposition's rooted-plan tables are filled over this rank's share
  // of the roots like its cut, not whole (their entries, and so the count, are then partial).
  bool sampled_tables = false;
};

// The options of a table every rank fills whole (it is read at any vertex, not only this rank's).
ExecOptions whole_graph(const ExecOptions& opt);

// A task of one heavy root: its level-1 candidates at positions [first, last).
struct RootPiece {
  Vertex v;
  std::uint32_t first, last;
};

// Work-balanced tasks: heavy roots done as pieces (in root order) instead of inside a chunk, the
// other roots in chunks of about equal estimated work, and the body that runs one piece:
// body(thread_index, piece).
struct RootSplit {
  std::vector<RootPiece> pieces;
  std::vector<Vertex> heavy;   // the roots the pieces cover, ascending, each once
  std::vector<Vertex> starts;  // first root of each chunk, ascending from 0
  std::function<void(int, const RootPiece&)> body;
};

// The tasks for roots with level1[v] level-1 candidates over `parts` shares (all ranks). The work of
// a root is estimated as 1 + L^2 (L = level1[v]: each candidate merges lists about that long). A root
// whose estimate exceeds an eighth of a share of the total becomes pieces of about 1/64 of a share
// each (equal ranges of its candidates, at most one piece per candidate); chunks end where their
// estimated work reaches 1/64 of a share or after 256 roots.
RootSplit balance_roots(std::span<const std::uint32_t> level1, int parts);
// Chunks of roots (no pieces) whose estimated work[v] sums to about 1/64 of a share of `parts` (a root
// above that is a chunk alone), at most 256 roots each: tasks for roots that cannot be split.
RootSplit chunk_roots(std::span<const std::uint64_t> work, int parts);

// Calls body(thread_index, begin, end) for root ranges until all chunks are done or `stop` is set.
// With `split`, its pieces are tasks taken first (heavy work early, so no thread is left with one
// big root at the end), its chunks replace the equal ones and its heavy roots are left out of them. Tasks are numbered pieces
// then chunks; task c belongs to rank c mod world_size. A stop signal (core::stop_requested():
// SIGTERM, SIGUSR1) ends it between tasks with an Error of ExitCode::interrupted.
void parallel_roots(Vertex n, const ExecOptions& opt, const std::function<void(int, Vertex, Vertex)>& body,
                    const std::atomic<bool>* stop = nullptr, const RootSplit* split = nullptr);

// fn(t) once for every t in [0, ran) at the same time, on `ran` threads, ran <= n: the caller runs t = 0, the
// others are parked threads of a process-wide pool (started on first use, added on demand), so a short parallel
// phase does not pay for starting threads (~80-100 us each here). When the system refuses a new thread, the
// threads there are run the call (ran < n, with a warning). A call made while another holds the pool (from inside
// fn, or from another thread) starts threads of its own. fn must not throw on the other threads; the caller's
// fn(0) may (rethrown once the others are done).
int run_on_threads(int n, const std::function<void(int)>& fn);

// Starts the pool's threads for a later run_on_threads(n) now, without waiting for them: a command calls it
// before loading its input, so the threads' start-up (a thread, its stack and heap pages: ~0.5 ms here)
// overlaps the load instead of the first parallel phase. Returns n.
int prestart_threads(int n);

// f(t, i) for every i in [0, count), on up to `threads` threads (t: the thread), items taken in turn.
template <class F>
void parallel_chunks(int threads, std::uint64_t count, const F& f) {
  threads = static_cast<int>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, count)));
  std::atomic<std::uint64_t> next{0};
  const auto work = [&](int t) {
    for (std::uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) f(t, i);
  };
  if (threads == 1) return work(0);
  run_on_threads(threads, work);
}

// Counters that several threads add to (tables of pattern decomposition): thread 0 adds into the result,
// every other thread into its own copy (allocated on its first use, summed into the result by take()) while
// those copies fit in private_bytes; beyond that all threads add to the result, atomically (atomic()).
template <class T>
class ThreadCounters {
 public:
  ThreadCounters(std::size_t size, int threads, std::size_t private_bytes)
      : result_(size, 0), copies_(std::max(1, threads)),
        atomic_(threads > 1 && size * sizeof(T) * static_cast<std::size_t>(threads - 1) > private_bytes) {}
  bool atomic() const { return atomic_; }
  // Where `thread` adds (the result itself when atomic()).
  T* of(int thread) {
    if (thread == 0 || atomic_) return result_.data();
    auto& copy = copies_[thread];
    if (copy.empty()) copy.assign(result_.size(), 0);
    return copy.data();
  }
  // The sums, once every thread is done.
  PopulatedVector<T> take() {
    for (const auto& copy : copies_)
      for (std::size_t i = 0; i < copy.size(); ++i) result_[i] += copy[i];
    copies_.clear();
    return std::move(result_);
  }

 private:
  PopulatedVector<T> result_;
  std::vector<PopulatedVector<T>> copies_;
  bool atomic_;
};

}  // namespace core::graph
