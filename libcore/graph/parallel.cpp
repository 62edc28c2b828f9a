// Dynamic outer-loop scheduling over threads and static chunk interleaving over ranks.
#include "graph/parallel.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <system_error>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"
#include "graph/populated.hpp"

namespace core::graph {

using Clock = std::chrono::steady_clock;

namespace {
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void warn_refused(int started, int wanted, const std::system_error& e) {
  log::warn("started {} of {} worker threads ({}); continuing with those", started, wanted, e.what());
}

// fn(t) for t in [0, ran) on threads of their own (joined before returning): when the system refuses a
// thread (--threads 100000 hit the process limit), the ones that did start do the work.
int spawn_threads(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int t = 1; t < n; ++t) {
    try {
      threads.emplace_back(fn, t);
    } catch (const std::system_error& e) {
      warn_refused(t, n, e);
      break;
    }
  }
  std::exception_ptr error;
  try {
    fn(0);
  } catch (...) {
    error = std::current_exception();
  }
  for (auto& th : threads) th.join();
  if (error) std::rethrow_exception(error);
  return static_cast<int>(threads.size()) + 1;
}

// A new thread's first touches of its stack and of its malloc arena trap one 4 KiB page at a time (15-40 us
// each in a virtual machine; a first parallel phase of ~1 ms was all start-up for its second thread): the
// pooled threads pay them once, as they start.
void warm_up_thread() {
  constexpr std::size_t kStack = std::size_t{64} << 10;  // the interpreter's frames use a few KiB
  constexpr std::size_t kHeap = std::size_t{64} << 10;   // below malloc's mmap threshold: stays in the arena
  char stack[kStack];
  for (std::size_t i = 0; i < kStack; i += 4096) stack[i] = 0;
  asm volatile("" : : "r"(stack) : "memory");
  if (void* heap = std::malloc(kHeap)) {
    std::memset(heap, 0, kHeap);
    asm volatile("" : : "r"(heap) : "memory");
    std::free(heap);
  }
}

// Parked threads for run_on_threads, one call at a time. Pooled thread i (from 1) runs fn(i) of each call
// with n > i, woken by its own semaphore (a call on two threads wakes one, however many the pool holds);
// the caller runs fn(0) and waits for the others. Never destroyed (its threads wait until the process
// exits).
class ThreadPool {
 public:
  // Starts the pooled threads a later run(n) needs, and returns without waiting for them.
  void prestart(int n) {
    std::lock_guard lock(mu_);
    grow(n);
  }

  // The count of threads that ran fn, or 0 when another call holds the pool.
  int run(int n, const std::function<void(int)>& fn) {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    grow(n);
    const int ran = std::min(n, static_cast<int>(threads_.size()) + 1);
    job_ = &fn;
    pending_.store(ran - 1, std::memory_order_relaxed);
    for (int i = 0; i + 1 < ran; ++i) threads_[i]->go.release();
    // The pooled threads use fn until they are done: wait for them even when the caller's part throws.
    std::exception_ptr error;
    try {
      fn(0);
    } catch (...) {
      error = std::current_exception();
    }
    if (ran > 1) done_.acquire();
    job_ = nullptr;
    if (error) std::rethrow_exception(error);
    return ran;
  }

 private:
  struct Pooled {
    std::binary_semaphore go{0};  // released once per call the thread takes part in
    std::thread thread;
  };

  // Threads up to n - 1 (mu_ held), each warmed up before it parks.
  void grow(int n) {
    while (static_cast<int>(threads_.size()) < n - 1) {
      auto pooled = std::make_unique<Pooled>();
      const int id = static_cast<int>(threads_.size()) + 1;
      try {
        pooled->thread = std::thread(&ThreadPool::loop, this, std::ref(pooled->go), id);
      } catch (const std::system_error& e) {
        warn_refused(id, n, e);
        break;
      }
      threads_.push_back(std::move(pooled));
    }
  }

  void loop(std::binary_semaphore& go, int id) {
    warm_up_thread();
    // The first count's tables come from the pool (populated.hpp): its first huge page (~0.3 ms to fault)
    // is mapped here too, while the command loads its graph.
    if (id == 1) populated_detail::reserve_pool_page();
    for (;;) {
      go.acquire();
      (*job_)(id);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.release();
    }
  }

  std::mutex mu_;  // held by the call in progress
  std::vector<std::unique_ptr<Pooled>> threads_;
  const std::function<void(int)>* job_ = nullptr;  // the call in progress
  std::atomic<int> pending_{0};                    // pooled threads still in the call
  std::binary_semaphore done_{0};                  // released by the call's last pooled thread
};

ThreadPool& thread_pool() {
  static ThreadPool* pool = new ThreadPool;
  return *pool;
}

}  // namespace

int run_on_threads(int n, const std::function<void(int)>& fn) {
  if (const int ran = thread_pool().run(n, fn)) return ran;
  return spawn_threads(n, fn);
}

int prestart_threads(int n) {
  thread_pool().prestart(n);
  return n;
}

LocalGraph parse_local_graph(const std::string& s) {
  if (s == "auto") return LocalGraph::by_plan;
  if (s == "off") return LocalGraph::never;
  if (s == "on") return LocalGraph::where_applicable;
  throw UsageError("local_graph must be 'auto', 'on' or 'off', got '" + s + "'");
}

// Roots of one chunk at most: fewer tasks on large sparse graphs (each costs an atomic increment
// and, with stats, a thread-CPU reading), still hundreds for two threads.
constexpr Vertex kChunkRoots = 256;

// ExecStats::largest_task_s: the least wall time between two readings of a thread's CPU time.
constexpr auto kCpuReading = std::chrono::milliseconds(1);

namespace {

// Appends roots to RootSplit::starts' chunks: a new chunk once the current one holds `piece` work or
// kChunkRoots roots.
struct ChunkCutter {
  std::uint64_t piece;
  std::uint64_t chunk = 0;
  Vertex roots = 0;
  void add(RootSplit& split, Vertex v, std::uint64_t est) {
    if (split.starts.empty() || chunk >= piece || roots == kChunkRoots) {
      split.starts.push_back(v);
      chunk = 0;
      roots = 0;
    }
    chunk += est;
    ++roots;
  }
};

}  // namespace

RootSplit balance_roots(std::span<const std::uint32_t> level1, int parts) {
  // Integer work (sum L^2 <= 2m max_degree stays far below 2^64): no per-root estimate array, and
  // the sum vectorises.
  const auto work = [](std::uint32_t l) { return 1 + std::uint64_t{l} * l; };
  std::uint64_t total = 0;
  for (const std::uint32_t l : level1) total += work(l);
  const std::uint64_t share = total / static_cast<std::uint64_t>(std::max(1, parts));
  const std::uint64_t piece = std::max<std::uint64_t>(1, share / 64);
  RootSplit split;
  ChunkCutter chunks{piece};
  for (Vertex v = 0; v < level1.size(); ++v) {
    const std::uint64_t est = work(level1[v]);
    if (est > share / 8 && level1[v] >= 2) {
      const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(level1[v], (est + piece - 1) / piece));
      for (std::uint32_t p = 0; p < count; ++p)
        split.pieces.push_back({v, static_cast<std::uint32_t>(std::uint64_t{level1[v]} * p / count),
                                static_cast<std::uint32_t>(std::uint64_t{level1[v]} * (p + 1) / count)});
      split.heavy.push_back(v);
      continue;
    }
    chunks.add(split, v, est);
  }
  return split;
}

RootSplit chunk_roots(std::span<const std::uint64_t> work, int parts) {
  std::uint64_t total = 0;
  for (const std::uint64_t w : work) total += w;
  const std::uint64_t piece = std::max<std::uint64_t>(1, total / static_cast<std::uint64_t>(std::max(1, parts)) / 64);
  RootSplit split;
  ChunkCutter chunks{piece};
  for (Vertex v = 0; v < work.size(); ++v) chunks.add(split, v, work[v]);
  return split;
}

ExecOptions whole_graph(const ExecOptions& opt) {
  ExecOptions whole = opt;
  whole.rank = 0;
  whole.world_size = 1;
  return whole;
}

void parallel_roots(Vertex n, const ExecOptions& opt, const std::function<void(int, Vertex, Vertex)>& body,
                    const std::atomic<bool>* stop, const RootSplit* split) {
  if (opt.threads < 1) throw UsageError("threads must be >= 1");
  if (opt.world_size < 1 || opt.rank < 0 || opt.rank >= opt.world_size) throw UsageError("bad rank / world size");
  const std::uint64_t parts = static_cast<std::uint64_t>(opt.threads) * opt.world_size;
  const Vertex chunk = static_cast<Vertex>(std::clamp<std::uint64_t>(n / (parts * 64), 1, 64));
  const std::uint64_t pieces = split ? split->pieces.size() : 0;
  const bool balanced = split && !split->starts.empty();
  const std::uint64_t chunks = balanced ? split->starts.size() : (static_cast<std::uint64_t>(n) + chunk - 1) / chunk;
  const std::uint64_t tasks = pieces + chunks;
  // body over [begin, end) without the heavy roots (done as pieces).
  auto range = [&](int t, Vertex begin, Vertex end) {
    if (!split || split->heavy.empty()) return body(t, begin, end);
    auto h = std::lower_bound(split->heavy.begin(), split->heavy.end(), begin);
    for (; h != split->heavy.end() && *h < end; ++h) {
      if (begin < *h) body(t, begin, *h);
      begin = *h + 1;
    }
    if (begin < end) body(t, begin, end);
  };
  std::atomic<std::uint64_t> next{0};
  const auto deadline = opt.deadline;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  std::vector<Clock::time_point> finished(opt.threads, Clock::now());
  std::vector<double> largest(opt.threads, 0.0);
  auto worker = [&](int t) {
    // With stats, the thread's CPU time (a system call, ~4 us in a virtual machine, against 70 ns for
    // the wall clock) is read at a task's end only once kCpuReading of wall time has passed since the
    // last reading. Every task lies within one interval between readings, so the largest interval
    // bounds the largest task from above, by less than kCpuReading (the tasks before it in its interval
    // took less wall time than that).
    Clock::time_point read_at = Clock::now();
    double cpu0 = opt.stats ? thread_cpu_seconds() : 0;
    const auto read_cpu = [&](Clock::time_point now) {
      const double cpu1 = thread_cpu_seconds();
      largest[t] = std::max(largest[t], cpu1 - cpu0);
      cpu0 = cpu1;
      read_at = now;
    };
    try {
      for (;;) {
        if (failed.load(std::memory_order_relaxed) || (stop && stop->load(std::memory_order_relaxed)) ||
            stop_requested() || Clock::now() >= deadline)
          break;
        const std::uint64_t c = next.fetch_add(1, std::memory_order_relaxed) * opt.world_size + opt.rank;
        if (c >= tasks) break;
        if (c < pieces) {
          split->body(t, split->pieces[c]);
        } else {
          const std::uint64_t i = c - pieces;
          if (balanced) {
            range(t, split->starts[i], i + 1 < chunks ? split->starts[i + 1] : n);
          } else {
            const Vertex begin = static_cast<Vertex>(i * chunk);
            range(t, begin, static_cast<Vertex>(std::min<std::uint64_t>(n, begin + std::uint64_t(chunk))));
          }
        }
        if (opt.stats)
          if (const auto now = Clock::now(); now - read_at >= kCpuReading) read_cpu(now);
      }
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
    finished[t] = Clock::now();
    if (opt.stats) read_cpu(finished[t]);
  };
  // No more threads than tasks.
  const int wanted = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(opt.threads), std::max<std::uint64_t>(tasks, 1)));
  const int threads = wanted == 1 ? (worker(0), 1) : run_on_threads(wanted, worker);
  if (opt.stats) {
    const auto ran = static_cast<std::ptrdiff_t>(threads);
    const auto last = *std::max_element(finished.begin(), finished.begin() + ran);
    for (std::ptrdiff_t t = 0; t < ran; ++t) opt.stats->idle_s += std::chrono::duration<double>(last - finished[t]).count();
    opt.stats->largest_task_s = std::max(opt.stats->largest_task_s, *std::max_element(largest.begin(), largest.begin() + ran));
  }
  if (error) std::rethrow_exception(error);
  // SIGTERM/SIGUSR1 (kill, scancel, preemption): stop between chunks. A partial count is no answer,
  // and there is nothing to checkpoint, so the job ends with the signal's exit code and no result.
  if (stop_requested())
    throw Error(ExitCode::interrupted, "stopped by signal " + std::to_string(stop_signal()) +
                                           " before the matching finished; no result was written");
}

}  // namespace core::graph
