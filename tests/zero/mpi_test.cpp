// The ZeRO engine across MPI processes (2 and 4 ranks, nodes of 2 emulated): stages 1-3 follow stage
// 0 over 10 steps (MPI's reduction order may differ between all-reduce and reduce-scatter, so to
// rounding), hpZ equals stage 3, each rank sends exactly the bytes of volume.hpp, and overlap_comm
// (collectives on each process's communication thread) reproduces the synchronous run bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <tuple>
#include <string>
#include <vector>

#include "comm/mpi_comm.hpp"
#include "comm/world.hpp"
#include "test_support.hpp"
#include "text/prepare.hpp"
#include "train/trainer.hpp"
#include "zero/engine.hpp"
#include "zero/volume.hpp"

using namespace core::zero;
namespace train = core::train;

namespace {

const auto g_session = core::comm::MpiSession::shared();

struct Result {
  std::vector<double> losses;
  LinkBytes bytes;
  std::vector<std::size_t> group_sizes;
};

// The shards of a small text, prepared by rank 0 in a folder every rank can read.
std::string shard_folder(core::comm::Communicator& world, const core::test::TempDir* tmp) {
  std::string path = tmp ? tmp->path().string() : std::string();
  std::uint64_t len = path.size();
  world.broadcast(&len, sizeof len, core::comm::DType::u8, 0);
  path.resize(len);
  world.broadcast(path.data(), len, core::comm::DType::u8, 0);
  if (world.rank() == 0) {
    std::filesystem::create_directories(path);
    {
      std::ofstream f(path + "/text.txt");
      for (int i = 0; i < 200; ++i) f << "to be or not to be " << i * 3 << " that is the question " << i << "\n";
    }
    core::text::PrepareOptions p;
    p.input = path + "/text.txt";
    p.out = path + "/shards";
    p.chunk_bytes = 1 << 16;
    core::text::prepare(p);
  }
  world.barrier();
  return path;
}

Result run(const std::string& dir, const std::string& name, const EngineOptions& eo) {
  auto world = core::comm::MpiCommunicator::world();
  const int n = world->size(), r = world->rank();
  train::TrainOptions o;
  o.model.n_layer = 2;
  o.model.n_head = 2;
  o.model.n_embd = 32;
  o.model.n_positions = 32;
  o.data.input = dir + "/shards";
  o.data.seq_len = 16;
  o.train_micro_batch_size_per_gpu = 2;
  o.train_iters = 10;
  o.eval_interval = 1000;
  o.eval_iters = 1;
  o.scheduler.params.warmup_num_steps = 2;
  Result out;
  std::unique_ptr<core::RunDir> rd;
  if (r == 0) rd = std::make_unique<core::RunDir>("zpp-train", dir + "/" + name);
  Engine engine(std::move(world), Topology::make(n, r, n % 2 == 0 ? 2 : 1, "test"), eo);
  train::run_training(o, rd.get(), &engine, [&](const nlohmann::json& rec) {
    if (rec.at("step") == 2) out.bytes = engine.groups().bytes();
  });
  train::ParamLayout layout(o.model);
  for (const auto& g : layout.groups()) out.group_sizes.push_back(g.size);
  if (rd) {
    std::ifstream metrics(rd->path() / "metrics.jsonl");
    for (std::string line; std::getline(metrics, line);)
      out.losses.push_back(nlohmann::json::parse(line).at("loss").get<double>());
  }
  return out;
}

}  // namespace

TEST_CASE("ZeRO stages and ZeRO++ across MPI ranks") {
  auto world = core::comm::MpiCommunicator::world();
  const int n = world->size(), r = world->rank();
  std::unique_ptr<core::test::TempDir> tmp;
  if (r == 0) tmp = std::make_unique<core::test::TempDir>("zero_mpi");
  const std::string dir = shard_folder(*world, tmp.get());
  const auto variant = [](int stage, int h, bool q) {
    EngineOptions e;
    e.zero.stage = stage;
    e.zero.zero_hpz_partition_size = h;
    e.zero.zero_quantized_weights = e.zero.zero_quantized_gradients = q;
    e.zero.reduce_bucket_size = 9000;
    e.block = 64;
    return e;
  };
  const Result base = run(dir, "s0", variant(0, 1, false));
  const int alpha = n % 2 == 0 ? 2 : 1;
  for (const auto& [stage, h, q] : {std::tuple{1, 1, false}, {2, 1, false}, {3, 1, false}, {3, alpha, false},
                                    {3, alpha, true}}) {
    CAPTURE(stage);
    CAPTURE(h);
    CAPTURE(q);
    const EngineOptions e = variant(stage, h, q);
    const Result res = run(dir, "v" + std::to_string(stage) + std::to_string(h) + std::to_string(q), e);
    const VolumeModel m{res.group_sizes, n, alpha, e.zero, e.bf16, e.block, 1};
    const LinkBytes want = step_bytes(m, r);
    CHECK(res.bytes.intra == want.intra);
    CHECK(res.bytes.inter == want.inter);
    if (r != 0) continue;
    REQUIRE(res.losses.size() == base.losses.size());
    for (std::size_t i = 0; i < res.losses.size(); ++i)
      CHECK(res.losses[i] == doctest::Approx(base.losses[i]).epsilon(q ? 0.02 : 1e-5));
  }
  EngineOptions e = variant(3, alpha, true);
  e.zero.reduce_bucket_size = 1;
  const Result sync = run(dir, "sync", e);
  e.zero.overlap_comm = true;
  e.zero.stage3_prefetch_bucket_size = 1;
  const Result overlap = run(dir, "overlap", e);
  CHECK(overlap.bytes.intra == sync.bytes.intra);
  CHECK(overlap.bytes.inter == sync.bytes.inter);
  if (r == 0) CHECK(overlap.losses == sync.losses);
}
