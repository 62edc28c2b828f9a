// The ZeRO engine on thread ranks driving the real training loop: stages 1-3 reproduce stage 0 bit
// for bit over 20 steps (fp32, the thread backend sums in rank order), stage 0 on N ranks matches
// one rank with N times the micro steps, stage 3 gathers every weight it uses (released weight
// buffers are freed), hpZ reproduces stage 3 bit for bit, qwZ and qgZ end within 2% of stage 3's
// loss, every variant sends exactly the bytes of volume.hpp and holds exactly the bytes of the
// ZeRO paper's partitioning (also while a fresh run, or one from init_from or a full checkpoint,
// builds its state, as zero.Init), and sharded checkpoints resume bit for bit, re-shard to another
// number of ranks and consolidate into the model one rank evaluates and 4 ranks resume bit for bit.
// zpp-train's job runner trains thread ranks in one process with distributed.backend = threads and
// refuses bad backends and combinations (exit 2 naming the key).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/thread_comm.hpp"
#include "common/config.hpp"
#include "common/errors.hpp"
#include "test_support.hpp"
#include "text/prepare.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/trainer.hpp"
#include "zero/comm_thread.hpp"
#include "zero/engine.hpp"
#include "zero/rank_sync.hpp"
#include "zero/sharded_checkpoint.hpp"
#include "zero/train_job.hpp"
#include "zero/volume.hpp"
#include "zero_test_data.hpp"

using namespace core::zero;
using core::test::TempDir;
using namespace zero_test;
namespace train = core::train;

namespace {

struct Run : zero_test::RunOutputs {
  std::vector<LinkBytes> step_bytes;  // per rank, of step 2
  nlohmann::json summary;
};

Run train_on_ranks(int n, int alpha, const EngineOptions& eo, const train::TrainOptions& o, const TempDir& dir,
                   const std::string& name) {
  Run run;
  run.step_bytes.resize(n);
  core::RunDir rd("zpp-train", dir.path() / name);
  std::mutex mu;
  core::comm::run_thread_ranks(n, [&](core::comm::Communicator& c) {
    Engine engine(c.split(0, c.rank()), Topology::make(n, c.rank(), alpha, "test"), eo);
    const auto hook = [&](const nlohmann::json& rec) {
      if (rec.at("step") != 2) return;
      std::lock_guard lock(mu);
      run.step_bytes[c.rank()] = engine.groups().bytes();
    };
    const auto out = train::run_training(o, c.rank() == 0 ? &rd : nullptr, &engine, hook);
    if (c.rank() != 0) return;
    run.summary = out.summary;
  }, core::comm::Seconds(120));
  static_cast<zero_test::RunOutputs&>(run) = zero_test::read_run_outputs(rd);
  return run;
}

EngineOptions stage(int s) {
  EngineOptions e;
  e.zero.stage = s;
  e.zero.reduce_bucket_size = 9000;  // several buckets of fused groups
  e.zero.allgather_bucket_size = 9000;
  return e;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double shard_elems(double size, int parts) { return std::ceil(std::ceil(size / parts) / 16) * 16; }

// Start-up (zero.Init) on n ranks: the state is built group by group, so while group g is taken over a rank
// holds the parts its stage keeps of the groups before g plus all 16 bytes an element of g; stage 0 keeps
// everything and starts with the whole model.
double startup_closed_form(const train::ParamLayout& layout, int stage, int n) {
  double kept = 0, peak = 0;
  for (const auto& g : layout.groups()) {
    const double S = double(g.size), sh = shard_elems(S, n);
    peak = std::max(peak, kept + 16 * S);
    kept += stage == 0 ? 16 * S : 8 * sh + (stage == 1 ? 8 * S : stage == 2 ? 4 * S + 4 * sh : 8 * sh);
  }
  return peak;
}

}  // namespace

TEST_CASE("stages 1-3 equal stage 0 bit for bit over 20 steps; stage 0 equals one rank's big batch") {
  TempDir dir("zero_stages");
  const auto o = tiny_options(text_file(dir), 20);
  const Run base = train_on_ranks(4, 2, stage(0), o, dir, "s0");
  REQUIRE(base.losses.size() == 20);
  CHECK(base.losses.back() < base.losses.front() - 0.5);
  for (const int s : {1, 2, 3}) {
    CAPTURE(s);
    const EngineOptions e = stage(s);
    const Run r = train_on_ranks(4, 2, e, o, dir, "s" + std::to_string(s));
    CHECK(r.losses == base.losses);
    CHECK(r.norms == base.norms);
    CHECK(bit_equal(r.weights, base.weights));
  }
  // One rank with 4 micro steps sees the same 4 micro batches per step (sums in another order).
  train::TrainOptions one = o;
  one.gradient_accumulation_steps = 4;
  core::RunDir rd("zpp-train", dir.path() / "one");
  train::run_training(one, rd);
  std::ifstream metrics(rd.path() / "metrics.jsonl");
  int i = 0;
  for (std::string line; std::getline(metrics, line); ++i)
    CHECK(nlohmann::json::parse(line).at("loss").get<double>() == doctest::Approx(base.losses[i]).epsilon(1e-4));
  CHECK(i == 20);
}

TEST_CASE("hpZ equals stage 3 bit for bit; qwZ and qgZ end within 2% of stage 3") {
  TempDir dir("zero_pp");
  const auto o = tiny_options(text_file(dir), 20);
  EngineOptions s3 = stage(3);
  s3.block = 64;
  const Run base = train_on_ranks(4, 2, s3, o, dir, "s3");
  EngineOptions hpz = s3;
  hpz.zero.zero_hpz_partition_size = 2;
  const Run h = train_on_ranks(4, 2, hpz, o, dir, "hpz");
  CHECK(h.losses == base.losses);
  CHECK(bit_equal(h.weights, base.weights));
  for (const auto& [wq, gq] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
    CAPTURE(wq);
    CAPTURE(gq);
    EngineOptions e = s3;
    e.zero.zero_quantized_weights = wq;
    e.zero.zero_quantized_gradients = gq;
    const Run r = train_on_ranks(4, 2, e, o, dir, std::string("q") + (wq ? "w" : "") + (gq ? "g" : ""));
    CHECK(r.losses != base.losses);  // quantization changes the numbers ...
    CHECK(std::fabs(r.losses.back() - base.losses.back()) <= 0.02 * base.losses.back());  // ... not the result
  }
}

TEST_CASE("every variant sends exactly the bytes of its volume formula") {
  TempDir dir("zero_bytes");
  auto o = tiny_options(text_file(dir), 3);
  struct Case {
    int stage, h, micro;
    bool qw, qg, bf16;
  };
  int index = 0;
  for (const Case k : {Case{0, 1, 1, false, false, false}, Case{1, 1, 2, false, false, false},
                       Case{2, 1, 2, false, false, false}, Case{3, 1, 1, false, false, false},
                       Case{3, 1, 2, false, false, true}, Case{3, 1, 1, true, false, true},
                       Case{3, 2, 2, false, false, true}, Case{3, 1, 1, false, true, true},
                       Case{3, 2, 1, true, true, true}}) {
    CAPTURE(k.stage);
    CAPTURE(k.h);
    CAPTURE(k.qw);
    CAPTURE(k.qg);
    CAPTURE(k.micro);
    EngineOptions e = stage(k.stage);
    e.zero.zero_hpz_partition_size = k.h;
    e.zero.zero_quantized_weights = k.qw;
    e.zero.zero_quantized_gradients = k.qg;
    e.bf16 = k.bf16;
    e.block = 64;
    o.gradient_accumulation_steps = k.micro;
    const Run r = train_on_ranks(4, 2, e, o, dir, "b" + std::to_string(index++));
    VolumeModel m{r.group_sizes, 4, 2, e.zero, e.bf16, e.block, k.micro};
    for (int rank = 0; rank < 4; ++rank) {
      CAPTURE(rank);
      const LinkBytes want = step_bytes(m, rank);
      CHECK(r.step_bytes[rank].intra == want.intra);
      CHECK(r.step_bytes[rank].inter == want.inter);
    }
    const MeanLinkBytes mean = mean_step_bytes(m);
    CHECK(r.summary.at("bytes_per_step").at("intra").get<double>() == doctest::Approx(mean.intra));
    CHECK(r.summary.at("bytes_per_step").at("inter").get<double>() == doctest::Approx(mean.inter));
  }
}

TEST_CASE("closed forms: stage 3 sends 3 (N-1) shards a step; ZeRO++ cuts the cross-node part to about 1/4") {
  // GPT-2-like groups (no padding effects): 8 ranks on 2 nodes, bf16, block 2048.
  VolumeModel m{{1 << 22, 1 << 21, 1 << 21, 1 << 21, 1 << 21}, 8, 4, ZeroOptions{}, true, 2048, 1};
  m.zero.stage = 3;
  const std::size_t P = (1 << 22) + 4 * (1 << 21), shard = P / 8;
  const LinkBytes z3 = step_bytes(m, 0);
  // The 3-float all-reduce: ranks 0-2 own one float each; rank 0 sends peer q its float and q's:
  // 8 bytes to ranks 1 and 2, 4 to rank 3 (intra), 4 to each of ranks 4-7 (inter).
  CHECK(z3.intra + z3.inter == 3 * 7 * shard * 2 + 36);  // 3 M (N-1)/N with M = 2 P bytes
  CHECK(z3.inter == 3 * 4 * shard * 2 + 16);
  VolumeModel pp = m;
  pp.zero.zero_quantized_weights = pp.zero.zero_quantized_gradients = true;
  pp.zero.zero_hpz_partition_size = 4;
  const double ratio = mean_step_bytes(pp).inter / mean_step_bytes(m).inter;
  CHECK(ratio < 0.26);
  CHECK(ratio > 0.15);
}

TEST_CASE("per-rank bytes equal the partitioning's closed forms; stage 3 holds M/N plus the groups in flight") {
  TempDir dir("zero_memory");
  const auto o = tiny_options(text_file(dir), 2);
  const train::ParamLayout layout(o.model);
  const auto part = shard_elems;
  double full = 0, shards = 0, halves = 0, block = 0;
  for (const auto& g : layout.groups()) {
    full += double(g.size);
    shards += part(double(g.size), 4);
    halves += part(double(g.size), 2);
    if (g.name != "embed") block = std::max(block, double(g.size));
  }
  const double in_flight = double(layout.groups()[0].size) + block;  // the embedding spans the pass
  struct Want {
    double params, grads, optimizer;
  };
  const Want want[4] = {{4 * full, 4 * full, 8 * full},
                        {4 * full, 4 * full, 8 * shards},
                        {4 * full, 4 * (shards + in_flight), 8 * shards},
                        {4 * (shards + in_flight), 4 * (shards + in_flight), 8 * shards}};
  std::vector<double> base;
  double total0 = 0;
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    EngineOptions e = stage(s);
    e.zero.reduce_bucket_size = 1;  // every group reduced on its own: one group's full gradient at a time
    const Run r = train_on_ranks(4, 2, e, o, dir, "m" + std::to_string(s));
    if (s == 0) base = r.losses;
    CHECK(r.losses == base);
    const auto mem = r.summary.at("zero").at("memory_per_rank");
    CHECK(mem.at("params").get<double>() == want[s].params);
    CHECK(mem.at("grads").get<double>() == want[s].grads);
    CHECK(mem.at("optimizer").get<double>() == want[s].optimizer);
    CHECK(mem.at("secondary").get<double>() == 0);
    CHECK(r.summary.at("zero").at("startup_bytes").get<double>() == startup_closed_form(layout, s, 4));
    if (s == 0) total0 = mem.at("total").get<double>();
    else CHECK(mem.at("total").get<double>() < total0);
  }
  // hpZ adds its secondary shard of 1/h of every group (in the gather dtype); bf16 halves it.
  for (const bool bf16 : {false, true}) {
    EngineOptions e = stage(3);
    e.zero.reduce_bucket_size = 1;
    e.zero.zero_hpz_partition_size = 2;
    e.bf16 = bf16;
    const Run r = train_on_ranks(4, 2, e, o, dir, bf16 ? "hpz16" : "hpz32");
    const auto mem = r.summary.at("zero").at("memory_per_rank");
    CHECK(mem.at("secondary").get<double>() == (bf16 ? 2 : 4) * halves);
    CHECK(mem.at("params").get<double>() == want[3].params);
  }
  // init_from is read on rank 0 one group at a time and each group broadcast: stage 3 builds its state as
  // a fresh run does (zero.Init's start-up peak, not the whole model's 16 bytes a parameter), and trains as
  // stage 0 from the same weights.
  core::RunDir one("zpp-train", dir.path() / "one");
  train::run_training(o, one);
  auto from = o;
  from.init_from = one.path().string();
  const Run s0 = train_on_ranks(4, 2, stage(0), from, dir, "from0");
  const Run s3 = train_on_ranks(4, 2, stage(3), from, dir, "from3");
  CHECK(s3.losses == s0.losses);
  CHECK(s3.losses != base);
  CHECK(s0.summary.at("zero").at("startup_bytes").get<double>() == 16 * full);
  CHECK(s3.summary.at("zero").at("startup_bytes").get<double>() == startup_closed_form(layout, 3, 4));
  CHECK(startup_closed_form(layout, 3, 4) < 16 * full);
}

TEST_CASE("overlap_comm gives the same losses, weights and bytes bit for bit, and measures the hidden share") {
  TempDir dir("zero_overlap");
  const auto o = tiny_options(text_file(dir), 4);
  EngineOptions qpp = stage(3);
  qpp.bf16 = true;
  qpp.block = 64;
  qpp.zero.zero_hpz_partition_size = 2;
  qpp.zero.zero_quantized_weights = qpp.zero.zero_quantized_gradients = true;
  int index = 0;
  for (EngineOptions e : {stage(2), stage(3), qpp}) {
    CAPTURE(index);
    e.zero.reduce_bucket_size = 1;
    const Run sync = train_on_ranks(4, 2, e, o, dir, "sync" + std::to_string(index));
    e.zero.overlap_comm = true;
    e.zero.stage3_prefetch_bucket_size = 1;  // one group ahead
    const Run overlap = train_on_ranks(4, 2, e, o, dir, "overlap" + std::to_string(index++));
    CHECK(overlap.losses == sync.losses);
    CHECK(overlap.norms == sync.norms);
    CHECK(bit_equal(overlap.weights, sync.weights));
    for (int r = 0; r < 4; ++r) {
      CHECK(overlap.step_bytes[r].intra == sync.step_bytes[r].intra);
      CHECK(overlap.step_bytes[r].inter == sync.step_bytes[r].inter);
    }
    const double hidden = overlap.summary.at("comm_hidden_fraction").get<double>();
    CHECK(hidden >= 0.0);
    CHECK(hidden <= 1.0);
    CHECK_FALSE(sync.summary.contains("comm_hidden_fraction"));
    // Stage 3 holds one prefetched block more than without overlap (the tiny model's blocks are equal).
    if (e.zero.stage == 3) {
      const double block = double(train::ParamLayout(o.model).groups()[1].size);
      CHECK(overlap.summary.at("zero").at("memory_per_rank").at("params").get<double>() ==
            sync.summary.at("zero").at("memory_per_rank").at("params").get<double>() + 4 * block);
    }
  }
  EngineOptions one = stage(1);
  one.zero.overlap_comm = true;
  core::comm::run_thread_ranks(1, [&](core::comm::Communicator& c) {
    CHECK_THROWS_AS(Engine(c.split(0, 0), Topology::make(1, 0, 1, "test"), one), core::UsageError);
  });
}

TEST_CASE("CommThread::account_step: hidden = busy - waited of busy + the training thread's own seconds") {
  CommThread thread;
  CHECK(thread.account_step(0.0) == 0.0);  // no communication at all
  CHECK(thread.account_step(0.5) == 0.0);  // only the training thread's own: nothing hidden
  thread.reset_times();
  const CommThread::Ticket t = thread.submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  thread.wait(t);  // (waits for most of it)
  const double busy = thread.busy_seconds(), waited = thread.waited_seconds();
  REQUIRE(busy > 0);
  const double hidden = std::clamp(busy - waited, 0.0, busy);
  CHECK(thread.account_step(0.25) == hidden / (busy + 0.25));
  // The run's fraction sums every step's seconds (the two above and one more fully hidden task).
  thread.reset_times();
  thread.submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  while (!thread.idle()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double busy2 = thread.busy_seconds();
  thread.drain();  // (already done: waits for nothing)
  const double hidden2 = std::clamp(busy2 - thread.waited_seconds(), 0.0, busy2);
  CHECK(thread.account_step(0.0) == hidden2 / busy2);
  CHECK(thread.run_hidden_fraction() == doctest::Approx((hidden + hidden2) / (0.5 + busy + 0.25 + busy2)));
}

TEST_CASE("sharded checkpoints: bit-identical resume on the same ranks, re-sharded on 2 and 1, consolidated") {
  TempDir dir("zero_resume");
  const auto data = text_file(dir);
  auto o = tiny_options(data, 12);
  o.scheduler.params.total_num_steps = 12;  // the same schedule for the 6-step part
  auto first = o;
  first.train_iters = 6;
  auto more = o;
  more.resume = true;
  EngineOptions e = stage(3);
  e.zero.zero_hpz_partition_size = 2;
  const Run full = train_on_ranks(4, 2, e, o, dir, "full");
  for (const int s : {2, 3}) {
    CAPTURE(s);
    EngineOptions es = s == 3 ? e : stage(s);
    const std::string name = "part" + std::to_string(s);
    const Run part = train_on_ranks(4, 2, es, first, dir, name);
    const auto ckpt = *train::latest_checkpoint(dir.path() / name / "checkpoints");
    for (int r = 0; r < 4; ++r) CHECK(core::fs::exists(shard_file(ckpt, r)));  // one file a rank
    const Run resumed = train_on_ranks(4, 2, es, more, dir, name);
    REQUIRE(resumed.losses.size() == 12);
    CHECK(resumed.losses == full.losses);
    CHECK(bit_equal(resumed.weights, full.weights));
    if (s != 3) continue;
    // consolidate: one full checkpoint, the weights of the shards; one rank evaluates the model to
    // the loss the 4 ranks' validation measured on the same 32 tokens.
    const auto out = consolidate(dir.path() / name / "checkpoints" / "step_00000006", dir.path() / "cons" / "checkpoints");
    CHECK(out.at("ranks") == 4);
    train::ParamLayout layout(o.model);
    train::FlatBuffers<float> w(layout);
    train::load_weights(core::fs::path(out.at("checkpoint").get<std::string>()) / "model.safetensors", w);
    std::vector<float> flat;
    for (int g = 0; g < w.num_groups(); ++g) flat.insert(flat.end(), w.group(g), w.group(g) + w.group_size(g));
    CHECK(bit_equal(flat, part.weights));
    train::EvalOptions eval;
    eval.checkpoint = (dir.path() / "cons").string();
    eval.data.input = data.string();
    eval.seq_len = 16;
    eval.batch = 2;
    eval.max_tokens = 32;
    eval.threads = 1;
    CHECK(train::evaluate(eval).at("loss").get<double>() ==
          doctest::Approx(part.summary.at("val_loss").get<double>()).epsilon(1e-6));
    // The consolidated (full) checkpoint resumed on the same 4 ranks: rank 0 reads it one group at a time
    // and broadcasts each group, the run continues bit for bit, and the start-up holds no more than a fresh
    // run's (zero.Init's peak, not the whole model).
    const core::fs::path whole_dir = dir.path() / "from_full" / "checkpoints";
    core::fs::create_directories(whole_dir);
    core::fs::copy(out.at("checkpoint").get<std::string>(), whole_dir / "step_00000006",
                   core::fs::copy_options::recursive);
    const Run whole = train_on_ranks(4, 2, e, more, dir, "from_full");
    REQUIRE(whole.losses.size() == 6);
    CHECK(std::equal(whole.losses.begin(), whole.losses.end(), full.losses.begin() + 6));
    CHECK(bit_equal(whole.weights, full.weights));
    CHECK(whole.summary.at("zero").at("startup_bytes").get<double>() == startup_closed_form(layout, 3, 4));
  }
  // The 6-step shards of 4 ranks on 2 ranks of 2 micro steps and on 1 rank of 4: the same 4 micro
  // batches a step (sums in another order).
  for (const int n : {2, 1}) {
    CAPTURE(n);
    const std::string name = "on" + std::to_string(n);
    core::fs::create_directories(dir.path() / name / "checkpoints");
    core::fs::copy(dir.path() / "part3" / "checkpoints" / "step_00000006",
                   dir.path() / name / "checkpoints" / "step_00000006", core::fs::copy_options::recursive);
    auto on = more;
    on.gradient_accumulation_steps = 4 / n;
    const Run r = train_on_ranks(n, 1, stage(n == 1 ? 0 : 3), on, dir, name);
    REQUIRE(r.losses.size() == 6);
    for (int i = 0; i < 6; ++i) CHECK(r.losses[i] == doctest::Approx(full.losses[6 + i]).epsilon(1e-4));
  }
}

TEST_CASE("distributed.backend: threads trains thread ranks in one process; bad values and combinations exit 2") {
  TempDir dir("zero_backend");
  const core::fs::path text = text_file(dir);
  const auto options = [&](std::vector<std::string> overrides) {
    overrides.push_back("data.input=" + text.string());
    return core::resolve_options<ZeroTrainOptions>({}, overrides);
  };
  const std::vector<std::string> tiny = {"model.n_layer=2", "model.n_head=2", "model.n_embd=32", "model.n_positions=32",
                                         "model.vocab_size=256", "data.seq_len=16", "train_micro_batch_size_per_gpu=2",
                                         "train_iters=3", "eval_interval=1000", "eval_iters=1"};
  auto o = tiny;
  for (const char* kv : {"distributed.backend=threads", "distributed.thread_ranks=2", "zero_optimization.stage=3"})
    o.push_back(kv);
  core::RunDir rd("zpp-train", dir.path() / "threads");
  const core::comm::RankInfo single;
  const auto out = run_zero_training(options(o), &rd, single);
  CHECK(out.summary.at("zero").at("ranks") == 2);
  CHECK(out.summary.at("bytes_per_step").at("intra").get<double>() > 0);

  const auto usage_error = [&](std::vector<std::string> extra, const core::comm::RankInfo& ranks, const char* key) {
    CAPTURE(key);
    auto kv = tiny;
    kv.insert(kv.end(), extra.begin(), extra.end());
    try {
      check_zero_job(options(kv), ranks);
      FAIL("no UsageError");
    } catch (const core::UsageError& e) {
      CHECK(std::string(e.what()).find(key) != std::string::npos);
      CHECK(e.code() == core::ExitCode::usage);
    }
  };
  usage_error({"distributed.backend=nccl_or_so"}, single, "distributed.backend");
  usage_error({"distributed.backend=shared_gpu"}, single, "distributed.backend = shared_gpu");  // device=cpu
  usage_error({"distributed.backend=threads", "device=cuda"}, single, "distributed.backend = threads");
  usage_error({"distributed.backend=mpi", "distributed.thread_ranks=2"}, single, "distributed.thread_ranks");
  core::comm::RankInfo launched;
  launched.world_size = launched.local_size = 2;
  usage_error({"distributed.backend=threads"}, launched, "distributed.backend = threads");
  usage_error({"distributed.backend=threads", "distributed.thread_ranks=3", "distributed.ranks_per_node=2"}, single,
              "distributed.ranks_per_node");
}

TEST_CASE("reduce buckets: last group first, closed at reduce_bucket_size and at group 0") {
  using B = std::vector<std::vector<int>>;
  const std::vector<std::size_t> sizes = {3, 5, 2, 4};
  CHECK(core::zero::reduce_buckets(sizes, 6) == B{{3, 2}, {1, 0}});
  CHECK(core::zero::reduce_buckets(sizes, 1) == B{{3}, {2}, {1}, {0}});
  CHECK(core::zero::reduce_buckets(sizes, 1000) == B{{3, 2, 1, 0}});
  CHECK(core::zero::reduce_buckets(sizes, 14) == B{{3, 2, 1, 0}});
  CHECK(core::zero::reduce_buckets({}, 6).empty());
}

TEST_CASE("group shards: all-gather buckets, a bucket's chunk slices, stage 3's prefetch order, the pending bucket") {
  using B = std::vector<std::vector<int>>;
  const std::vector<std::size_t> sizes = {3, 5, 2, 4};
  CHECK(allgather_buckets(sizes, 6) == B{{0, 1}, {2, 3}});
  CHECK(allgather_buckets(sizes, 1) == B{{0}, {1}, {2}, {3}});
  CHECK(allgather_buckets(sizes, 1000) == B{{0, 1, 2, 3}});
  CHECK(allgather_buckets({}, 6).empty());

  GroupShards gs;
  for (const std::size_t S : {10, 40, 30, 20}) gs.add_group(S, 2, 1);  // shards of 16, 32, 16, 16 (N = 2)
  CHECK(gs.shard == std::vector<std::size_t>{16, 32, 16, 16});
  CHECK(gs.sec == std::vector<std::size_t>{16, 48, 32, 32});
  CHECK(gs.chunk({3, 1}) == 48);
  std::vector<std::vector<std::size_t>> seen;  // rank 1's slices of the bucket {3, 1}: (i, g, lo, hi, off)
  gs.for_each_slice({3, 1}, 1, [&](std::size_t i, int g, std::size_t lo, std::size_t hi, std::size_t off) {
    seen.push_back({i, std::size_t(g), lo, hi, off});
  });
  CHECK(seen == std::vector<std::vector<std::size_t>>{{0, 3, 16, 20, 0}, {1, 1, 32, 40, 16}});
  // Forward: embed, then the blocks; backward: head and embed first, then the blocks from the last.
  using P = train::Model<float>::Pass;
  CHECK(gs.prefetch_after(0, P::forward, 1000) == std::vector<int>{1, 2, 3});
  CHECK(gs.prefetch_after(0, P::forward, 41) == std::vector<int>{1, 2});  // 40 < 41 ahead: one more
  CHECK(gs.prefetch_after(0, P::forward, 40) == std::vector<int>{1});
  CHECK(gs.prefetch_after(0, P::backward, 1000) == std::vector<int>{3, 2, 1});
  CHECK(gs.prefetch_after(2, P::backward, 1) == std::vector<int>{1});
  CHECK(gs.prefetch_after(1, P::backward, 1000).empty());
  CHECK(gs.prefetch_after(0, P::forward, 0).empty());

  PendingBucket pending;  // backward: groups 3, 2, 1, 0 of 20, 30, 40, 10 elements in buckets of 45
  CHECK_FALSE(pending.add(3, 20, 45));
  CHECK(pending.add(2, 30, 45));
  CHECK(pending.take() == std::vector<int>{3, 2});
  CHECK_FALSE(pending.add(1, 40, 45));
  CHECK(pending.add(0, 10, 1000));  // group 0 closes the last bucket
  CHECK(pending.take() == std::vector<int>{1, 0});
  CHECK(pending.elems == 0);
}
