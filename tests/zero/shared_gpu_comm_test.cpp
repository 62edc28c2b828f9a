// The shared-GPU backend (comm/shared_gpu_comm.hpp): 1-4 thread ranks on one device. Every collective and
// dtype on device buffers against the serial reference (tests/comm/collective_checks.hpp, through device
// copies), with the byte accounting; on random data whose sums round, all-reduce, reduce-scatter,
// all-gather, all-to-all and broadcast equal the CPU thread backend's results bit for bit (f32 and bf16,
// sum and avg); split() groups keep the backend. Skipped with the rest of this binary where no device answers.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collective_checks.hpp"
#include "common/rng.hpp"
#include "comm/shared_gpu_comm.hpp"
#include "device_staging.hpp"

using namespace core::comm;
using namespace std::chrono_literals;

namespace {

// Runs fn(rank's communicator) on n threads; the communicators take host buffers (test::DeviceStaged) and
// hand device copies to the shared-GPU ranks. Rethrows the first failure.
void run_staged_shared_gpu(int n, const std::function<void(Communicator&)>& fn) {
  auto device_comms = make_shared_gpu_communicators(n);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (auto& c : device_comms) {
    c->set_timeout(20s);
    comms.push_back(std::make_unique<test::DeviceStaged>(std::move(c)));
  }
  std::mutex mutex;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(*comms[r]);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!first) first = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

// Each rank's result bytes of one sequence of collectives on random inputs that do not sum exactly.
std::vector<std::vector<unsigned char>> results_of(int n, bool shared_gpu) {
  std::vector<std::vector<unsigned char>> out(n);
  const auto body = [&](Communicator& c) {
    const int r = c.rank();
    const std::size_t count = 257;
    core::Rng rng(1000 + r);
    std::vector<float> x(count * n);
    for (auto& v : x) v = float(rng.normal());
    std::vector<std::uint16_t> xb(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) xb[i] = float_to_bf16(x[i] * 3.7f);
    std::vector<unsigned char>& bytes = out[r];
    const auto keep = [&](const auto& v) {
      const auto* p = reinterpret_cast<const unsigned char*>(v.data());
      bytes.insert(bytes.end(), p, p + v.size() * sizeof(v[0]));
    };
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
      std::vector<float> f(count * n), fs(count);
      std::vector<std::uint16_t> b(count * n), bs(count);
      c.all_reduce(x.data(), f.data(), count * n, DType::f32, op);
      c.all_reduce(xb.data(), b.data(), count * n, DType::bf16, op);
      c.reduce_scatter(x.data(), fs.data(), count, DType::f32, op);
      c.reduce_scatter(xb.data(), bs.data(), count, DType::bf16, op);
      keep(f), keep(b), keep(fs), keep(bs);
    }
    std::vector<float> g(count * n * n), a(count * n), root(x);
    c.all_gather(x.data(), g.data(), count * n, DType::f32);
    c.all_to_all(x.data(), a.data(), count, DType::f32);
    c.broadcast(root.data(), root.size(), DType::f32, n - 1);
    keep(g), keep(a), keep(root);
  };
  if (shared_gpu) run_staged_shared_gpu(n, body);
  else run_thread_ranks(n, body, 20s);
  return out;
}

}  // namespace

TEST_CASE("shared-GPU collectives on device buffers match the serial reference on 1-4 ranks") {
  for (int n = 1; n <= 4; ++n)
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{333}}) {
      CAPTURE(n);
      CAPTURE(count);
      CHECK_NOTHROW(run_staged_shared_gpu(n, [&](Communicator& c) {
        if (std::string(c.backend()) != "shared_gpu") throw std::runtime_error("backend " + std::string(c.backend()));
        test::check_collectives(c, count);
      }));
    }
}

TEST_CASE("shared-GPU results equal the CPU thread backend's bit for bit (same reduction order)") {
  for (const int n : {2, 3, 4}) {
    CAPTURE(n);
    CHECK(results_of(n, true) == results_of(n, false));
  }
}

TEST_CASE("shared-GPU split groups stay on the device backend") {
  CHECK_NOTHROW(run_staged_shared_gpu(4, [](Communicator& c) {
    auto pair = c.split(c.rank() % 2, c.rank());
    if (!pair || pair->size() != 2 || std::string(pair->backend()) != "shared_gpu")
      throw std::runtime_error("split did not give a shared_gpu pair");
    test::check_collectives(*pair, 7);
  }));
  CHECK_THROWS_AS(make_shared_gpu_communicators(kMaxSharedGpuRanks + 1), core::UsageError);
}
