// Dynamic outer-loop scheduling over threads and static chunk interleaving over ranks.
#include "graph/parallel.hpp"

#include <algorithm>
#include <exception>
#include <string>
#include <system_error>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/signals.hpp"

namespace core::graph {

LocalGraph parse_local_graph(const std::string& s) {
  if (s == "auto") return LocalGraph::by_plan;
  if (s == "off") return LocalGraph::never;
  if (s == "on") return LocalGraph::where_applicable;
  throw UsageError("local_graph must be 'auto', 'on' or 'off', got '" + s + "'");
}

void parallel_roots(Vertex n, const ExecOptions& opt, const std::function<void(int, Vertex, Vertex)>& body,
                    const std::atomic<bool>* stop) {
  if (opt.threads < 1) throw UsageError("threads must be >= 1");
  if (opt.world_size < 1 || opt.rank < 0 || opt.rank >= opt.world_size) throw UsageError("bad rank / world size");
  const std::uint64_t parts = static_cast<std::uint64_t>(opt.threads) * opt.world_size;
  const Vertex chunk = static_cast<Vertex>(std::clamp<std::uint64_t>(n / (parts * 64), 1, 64));
  const std::uint64_t chunks = (static_cast<std::uint64_t>(n) + chunk - 1) / chunk;
  std::atomic<std::uint64_t> next{0};
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto worker = [&](int t) {
    try {
      for (;;) {
        if (failed.load(std::memory_order_relaxed) || (stop && stop->load(std::memory_order_relaxed)) ||
            stop_requested())
          return;
        const std::uint64_t c = next.fetch_add(1, std::memory_order_relaxed) * opt.world_size + opt.rank;
        if (c >= chunks) return;
        const Vertex begin = static_cast<Vertex>(c * chunk);
        body(t, begin, static_cast<Vertex>(std::min<std::uint64_t>(n, begin + std::uint64_t(chunk))));
      }
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  };
  // No more threads than chunks; and when the system refuses a thread (--threads 100000 hit the
  // process limit, and the joinable threads already started made ~vector call std::terminate),
  // the ones that did start do the work.
  const int wanted = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(opt.threads), std::max<std::uint64_t>(chunks, 1)));
  std::vector<std::thread> pool;
  for (int t = 1; t < wanted; ++t) {
    try {
      pool.emplace_back(worker, t);
    } catch (const std::system_error& e) {
      log::warn("started {} of {} worker threads ({}); continuing with those", t, wanted, e.what());
      break;
    }
  }
  worker(0);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
  // SIGTERM/SIGUSR1 (kill, scancel, preemption): stop between chunks. A partial count is no answer,
  // and there is nothing to checkpoint, so the job ends with the signal's exit code and no result.
  if (stop_requested())
    throw Error(ExitCode::interrupted, "stopped by signal " + std::to_string(stop_signal()) +
                                           " before the matching finished; no result was written");
}

}  // namespace core::graph
