// Topology checks, the per-link byte accounting of LinkCounter against the communicator's own
// totals and hand counts, the sub-communicators of CommGroups, and qgZ's hierarchical reduce-
// scatter against the exact mean on 2 emulated nodes of 4 thread ranks.
#include <doctest/doctest.h>

#include <cmath>
#include <mutex>
#include <vector>

#include "comm/thread_comm.hpp"
#include "common/errors.hpp"
#include "common/rng.hpp"
#include "zero/qgz.hpp"
#include "zero/quantize.hpp"
#include "zero/topology.hpp"

using namespace core::zero;
using core::comm::Collective;
using core::comm::DType;

namespace {

// Runs fn(groups) on n thread ranks in nodes of alpha with hpZ groups of h.
void on_ranks(int n, int alpha, int h, const std::function<void(CommGroups&)>& fn) {
  core::comm::run_thread_ranks(n, [&](core::comm::Communicator& c) {
    CommGroups g(c.split(0, c.rank()), Topology::make(n, c.rank(), alpha, "test"), h);
    fn(g);
  }, core::comm::Seconds(60));
}

}  // namespace

TEST_CASE("topology: nodes in blocks, and clear errors for impossible layouts") {
  const Topology t = Topology::make(8, 6, 4, "x");
  CHECK(t.nodes == 2);
  CHECK(t.node == 1);
  CHECK(t.local_rank == 2);
  CHECK_THROWS_AS(Topology::make(6, 0, 4, "distributed.ranks_per_node"), core::UsageError);
  core::comm::RankInfo info{5, 8, 1, 4, "OMPI_COMM_WORLD"};
  CHECK(discover_topology(info, 0).ranks_per_node == 4);
  info.local_rank = 3;  // round-robin placement
  CHECK_THROWS_AS(discover_topology(info, 0), core::UsageError);
  CHECK(discover_topology(info, 2).nodes == 4);  // the config overrides the launcher
  CHECK_THROWS_AS(on_ranks(4, 4, 3, [](CommGroups&) {}), core::UsageError);  // h must divide alpha
}

TEST_CASE("per-peer bytes add up to the communicator's formula") {
  for (const auto c : {Collective::broadcast, Collective::all_reduce, Collective::all_gather,
                       Collective::reduce_scatter, Collective::all_to_all})
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000}})
      for (int r = 0; r < 5; ++r) {
        std::uint64_t sum = 0;
        for (int q = 0; q < 5; ++q)
          if (q != r) sum += bytes_to_peer(c, count, DType::bf16, r, q, 5, 1);
        CHECK(sum == core::comm::bytes_sent(c, count, DType::bf16, r, 5, 1));
      }
}

TEST_CASE("LinkCounter splits bytes by the receiver's node; sub-communicators follow the topology") {
  on_ranks(8, 4, 2, [&](CommGroups& g) {
    CHECK(g.intra->size() == 4);
    CHECK(g.inter->size() == 2);
    CHECK(g.hpz->size() == 2);
    CHECK(g.inter->rank() == g.topo.node);
    CHECK(g.intra->rank() == g.topo.local_rank);
    std::vector<float> send(8 * 10, 1.0f), recv(8 * 10);
    g.world->all_gather(send.data(), recv.data(), 10, DType::f32);  // 10 floats to each of 7 peers
    LinkBytes b = g.world->link_bytes();
    CHECK(b.intra == 3 * 40);
    CHECK(b.inter == 4 * 40);
    g.world->all_reduce(send.data(), recv.data(), 80, DType::f32, core::comm::ReduceOp::sum);
    g.world->all_to_all(send.data(), recv.data(), 10, DType::f32);
    CHECK(g.world->link_bytes().total() == g.world->stats().total_bytes());
    g.inter->reduce_scatter(send.data(), recv.data(), 5, DType::f32, core::comm::ReduceOp::sum);
    CHECK(g.inter->link_bytes() == LinkBytes{0, 20});
    g.intra->all_gather(send.data(), recv.data(), 3, DType::bf16);
    CHECK(g.intra->link_bytes() == LinkBytes{3 * 6, 0});
    g.hpz->broadcast(send.data(), 4, DType::f32, 0);
    CHECK(g.hpz->link_bytes() == LinkBytes{g.hpz->rank() == 0 ? 16u : 0u, 0});
    g.reset_bytes();
    CHECK(g.bytes() == LinkBytes{});
  });
}

TEST_CASE("qgZ's two-hop int4 reduce-scatter gives the mean within its quantization bound") {
  const int N = 8, alpha = 4;
  const std::size_t c = 3000, block = 256;
  // Rank q's chunk for rank d: smooth values of rank-dependent size, so the mean is not a rank's.
  auto value = [](int q, int d, std::size_t i) {
    return float(std::sin(0.01 * double(i) * (d + 1) + q) * (1.0 + 0.3 * q));
  };
  std::mutex mu;
  double worst_ratio = 0, wrong_scale_worst = 0;
  on_ranks(N, alpha, 1, [&](CommGroups& g) {
    const int r = g.topo.rank;
    std::vector<float> chunks(N * c), mean(c);
    for (int d = 0; d < N; ++d)
      for (std::size_t i = 0; i < c; ++i) chunks[d * c + i] = value(r, d, i);
    QgzScratch scratch;
    qgz_reduce_scatter_mean(chunks.data(), c, mean.data(), g, block, scratch);
    // Bound per block: half a step of every first-hop chunk, plus half a step of each node's
    // re-quantized partial sum (whose absmax is at most the exact one plus the first-hop error),
    // over N.
    for (std::size_t b0 = 0; b0 < c; b0 += block) {
      const std::size_t b1 = std::min(c, b0 + block);
      double bound = 0;
      for (int m = 0; m < N / alpha; ++m) {
        double first = 0, partial_absmax = 0;
        for (int d = 0; d < alpha; ++d) {
          double absmax = 0;
          for (std::size_t i = b0; i < b1; ++i) absmax = std::max(absmax, std::fabs(double(value(m * alpha + d, r, i))));
          first += absmax / 7 / 2;
        }
        for (std::size_t i = b0; i < b1; ++i) {
          double s = 0;
          for (int d = 0; d < alpha; ++d) s += value(m * alpha + d, r, i);
          partial_absmax = std::max(partial_absmax, std::fabs(s));
        }
        bound += first + (partial_absmax + first) / 7 / 2;
      }
      bound = bound / N * (1 + 1e-4);
      for (std::size_t i = b0; i < b1; ++i) {
        double exact = 0;
        for (int q = 0; q < N; ++q) exact += value(q, r, i);
        exact /= N;
        std::lock_guard lock(mu);
        worst_ratio = std::max(worst_ratio, std::fabs(mean[i] - exact) / bound);
        // The same result divided by alpha (a node's count) instead of N: a scale error.
        wrong_scale_worst = std::max(wrong_scale_worst, std::fabs(mean[i] * N / alpha - exact) / bound);
      }
    }
  });
  CHECK(worst_ratio <= 1.0);
  CHECK(worst_ratio > 0.01);  // quantization does change the values (the path is not exact by accident)
  // A mean divided by alpha instead of N leaves the bound: this test fails on such a scale error.
  CHECK(wrong_scale_worst > 1.0);
}
