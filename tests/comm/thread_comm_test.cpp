// Thread backend: every collective and dtype against the serial reference for 1-4 ranks, the
// byte accounting formula, bf16 rounding, timeouts, aborts, mismatched calls and split().
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "collective_checks.hpp"
#include "comm/thread_comm.hpp"
#include "comm/world.hpp"
#include "test_support.hpp"

using namespace core::comm;
using namespace std::chrono_literals;

// Long enough for a loaded 2-core CI machine, short enough that a hang fails fast.
constexpr Seconds kTestTimeout = 10s;

TEST_CASE("bf16 conversion rounds to nearest even and matches the reference") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1.0).
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up to even.
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(float_to_bf16(-1.0f - std::ldexp(1.0f, -8) - std::ldexp(1.0f, -12)) == 0xbf81);
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  CHECK(std::isinf(bf16_to_float(float_to_bf16(3.4e38f))));  // rounds past the largest bf16
  for (int k = -2000; k <= 2000; ++k) {
    const float x = static_cast<float>(k) * 0.0371f;
    CHECK(float_to_bf16(x) == test::reference_bf16(x));
  }
}

TEST_CASE("collectives match the serial reference on 1, 2, 3 and 4 thread ranks") {
  for (int n = 1; n <= 4; ++n) {
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{4099}}) {
      CAPTURE(n);
      CAPTURE(count);
      CHECK_NOTHROW(run_thread_ranks(n, [&](Communicator& c) { test::check_collectives(c, count); }, kTestTimeout));
    }
  }
}

TEST_CASE("byte accounting follows the documented formula, per collective and in total") {
  // The formula written out for 3 ranks and 10 f32 elements (shards 4,3,3).
  CHECK(bytes_sent(Collective::all_reduce, 10, DType::f32, 0, 3) == (10 - 4) * 4 + 2 * 4 * 4);
  CHECK(bytes_sent(Collective::all_reduce, 10, DType::f32, 2, 3) == (10 - 3) * 4 + 2 * 3 * 4);
  CHECK(bytes_sent(Collective::all_gather, 10, DType::bf16, 1, 3) == 2 * 10 * 2);
  CHECK(bytes_sent(Collective::broadcast, 10, DType::u8, 1, 3, 1) == 20);
  CHECK(bytes_sent(Collective::broadcast, 10, DType::u8, 0, 3, 1) == 0);
  // Summed over ranks, all_reduce sends 2(n-1)c e like a ring.
  std::uint64_t total = 0;
  for (int r = 0; r < 3; ++r) total += bytes_sent(Collective::all_reduce, 10, DType::f32, r, 3);
  CHECK(total == 2 * 2 * 10 * 4);

  run_thread_ranks(3, [](Communicator& c) {
    std::vector<float> a(10, 1.0f), b(30);
    c.all_reduce(a.data(), a.data(), 10, DType::f32, ReduceOp::sum);
    c.all_gather(a.data(), b.data(), 10, DType::f32);
    const auto& s = c.stats();
    const std::uint64_t ar = test::expected_bytes(Collective::all_reduce, 10, 4, c.rank(), 3, 0);
    if (s.bytes_of(Collective::all_reduce) != ar || s.bytes_of(Collective::all_gather) != 80 ||
        s.total_bytes() != ar + 80 || s.calls_of(Collective::all_gather) != 1)
      throw std::runtime_error("stats do not match the formula on rank " + std::to_string(c.rank()));
    c.reset_stats();
    if (c.stats().total_bytes() != 0 || c.stats().calls_of(Collective::all_reduce) != 0)
      throw std::runtime_error("reset_stats left counts");
  }, kTestTimeout);
}

TEST_CASE("bf16 all_reduce accumulates in float and rounds once") {
  // 256 + 1 + 1 in bf16 steps would round 257 back to 256 twice; accumulated in float it is 258.
  run_thread_ranks(3, [](Communicator& c) {
    std::uint16_t v = float_to_bf16(c.rank() == 0 ? 256.0f : 1.0f);
    c.all_reduce(&v, &v, 1, DType::bf16, ReduceOp::sum);
    if (bf16_to_float(v) != 258.0f) throw std::runtime_error("bf16 sum gave " + std::to_string(bf16_to_float(v)));
  }, kTestTimeout);
}

TEST_CASE("a rank that never joins makes the collective time out with a clear message") {
  auto comms = make_thread_communicators(2);
  comms[0]->set_timeout(0.15s);
  std::vector<float> x(4, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    comms[0]->all_reduce(x.data(), x.data(), 4, DType::f32, ReduceOp::sum);
  } catch (const CommTimeoutError& e) {
    message = e.what();
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(waited >= 0.15);
  CHECK(waited < 2.0);
  CHECK(message.find("all_reduce") != std::string::npos);
  CHECK(message.find("rank 0 of 2") != std::string::npos);
  CHECK(message.find("0.15 s") != std::string::npos);
  CHECK(message.find("NCCL_DEBUG=INFO") != std::string::npos);
  CHECK(message.find("same collective") != std::string::npos);
  // The group is aborted: the late rank fails at once instead of waiting its own 300 s.
  CHECK_THROWS_AS(comms[1]->barrier(), CommError);
  CHECK_THROWS_AS(comms[0]->barrier(), CommError);
  CHECK(comms[0]->stats().calls_of(Collective::all_reduce) == 0);  // failed calls are not counted
}

TEST_CASE("waiting_at_least lets a collective wait out a slow rank, then restores the timeout") {
  // Rank 1 joins 0.4 s late; rank 0's 0.15 s timeout is raised for that one call only.
  run_thread_ranks(2, [](Communicator& c) {
    c.set_timeout(0.15s);
    std::vector<float> x(4, 1.0f);
    if (c.rank() == 1) std::this_thread::sleep_for(0.4s);
    waiting_at_least(c, 5s, [&] { c.all_reduce(x.data(), x.data(), 4, DType::f32, ReduceOp::sum); });
    CHECK(x[0] == 2.0f);
    CHECK(c.timeout() == Seconds(0.15));
  });
}

TEST_CASE("a failing rank aborts the group and its own exception is rethrown") {
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(run_thread_ranks(3,
                                     [](Communicator& c) {
                                       if (c.rank() == 1) throw core::DataError("rank one is broken");
                                       c.barrier();
                                     }),
                    "rank one is broken");
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("ranks calling different collectives all get an error naming both calls") {
  std::atomic<int> errors{0};
  run_thread_ranks(2, [&](Communicator& c) {
    float x[4] = {};
    try {
      if (c.rank() == 0) c.all_reduce(x, x, 4, DType::f32, ReduceOp::sum);
      else c.all_reduce(x, x, 3, DType::f32, ReduceOp::sum);
    } catch (const CommError& e) {
      const std::string m = e.what();
      if (m.find("count=4") != std::string::npos && m.find("count=3") != std::string::npos) ++errors;
    }
  }, kTestTimeout);
  CHECK(errors == 2);
}

TEST_CASE("bad arguments are usage errors") {
  run_thread_ranks(2, [](Communicator& c) {
    float buf[8] = {};
    auto expect_usage = [](auto&& fn, const char* what) {
      try {
        fn();
      } catch (const core::UsageError&) {
        return;
      }
      throw std::runtime_error(std::string("no UsageError for ") + what);
    };
    expect_usage([&] { c.broadcast(buf, 4, DType::f32, 2); }, "root out of range");
    expect_usage([&] { c.all_reduce(buf, buf, 4, DType::i8, ReduceOp::avg); }, "integer avg");
    expect_usage([&] { c.all_reduce(buf, buf + 1, 4, DType::f32, ReduceOp::sum); }, "partial overlap");
    expect_usage([&] { c.all_to_all(buf, buf, 2, DType::f32); }, "in-place all_to_all");
    expect_usage([&] { c.all_gather(buf + 1, buf, 2, DType::f32); }, "misplaced in-place all_gather");
    expect_usage([&] { c.all_reduce(nullptr, buf, 4, DType::f32, ReduceOp::sum); }, "null buffer");
    expect_usage([&] { c.set_timeout(0s); }, "zero timeout");
  }, kTestTimeout);
}

TEST_CASE("split forms sub-communicators ordered by key, inheriting the timeout") {
  // 4 ranks as 2 "nodes" x 2 local ranks: intra-node groups by color = rank / 2, cross-node by
  // color = rank % 2 with reversed keys; rank 3 opts out of a third split.
  run_thread_ranks(4, [](Communicator& world) {
    const int r = world.rank();
    world.set_timeout(7s);  // children inherit it
    auto node = world.split(r / 2, r);
    auto cross = world.split(r % 2, -r);
    auto partial = world.split(r == 3 ? -1 : 0, 0);
    auto fail = [&](const std::string& m) { throw std::runtime_error("rank " + std::to_string(r) + ": " + m); };
    if (node->size() != 2 || node->rank() != r % 2) fail("intra-node rank");
    if (cross->size() != 2 || cross->rank() != (r < 2 ? 1 : 0)) fail("cross-node rank ordered by key");
    if ((r == 3) != (partial == nullptr)) fail("color -1 must give nullptr");
    if (partial && (partial->size() != 3 || partial->rank() != r)) fail("partial group");
    if (node->timeout() != 7s) fail("timeout not inherited");
    // Collectives on the children involve only their members.
    float v = static_cast<float>(r), node_sum = 0, cross_sum = 0;
    node->all_reduce(&v, &node_sum, 1, DType::f32, ReduceOp::sum);
    cross->all_reduce(&v, &cross_sum, 1, DType::f32, ReduceOp::sum);
    if (node_sum != (r < 2 ? 1.0f : 5.0f)) fail("node sum " + std::to_string(node_sum));
    if (cross_sum != (r % 2 == 0 ? 2.0f : 4.0f)) fail("cross sum " + std::to_string(cross_sum));
    float gathered[2];
    cross->all_gather(&v, gathered, 1, DType::f32);  // rank order of cross: higher old rank first
    if (gathered[0] != static_cast<float>(r % 2 + 2) || gathered[1] != static_cast<float>(r % 2)) fail("cross order");
    if (partial) {
      float g[3];
      partial->all_gather(&v, g, 1, DType::f32);
      if (g[0] != 0 || g[1] != 1 || g[2] != 2) fail("partial gather");
      test::check_collectives(*partial, 3);
    }
    if (world.stats().bytes_of(Collective::all_reduce) != 0) fail("children's traffic counted on the parent");
  }, kTestTimeout);
}

TEST_CASE("the world communicator of a single process is a 1-rank group") {
  auto comm = make_world_communicator(RankInfo{}, 5s);
  CHECK(comm->size() == 1);
  CHECK(comm->rank() == 0);
  CHECK(comm->timeout() == 5s);
  float x[3] = {1, 2, 3}, y[3];
  comm->all_gather(x, y, 3, DType::f32);
  CHECK(y[2] == 3.0f);
  CHECK(comm->stats().total_bytes() == 0);
}
