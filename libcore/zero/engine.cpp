// ZeRO stages 0-3 and ZeRO++ over the model's flat parameter groups (see engine.hpp).
#include "zero/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "common/timer.hpp"
#include "train/checkpoint.hpp"
#include "zero/comm_thread.hpp"
#include "zero/qgz.hpp"
#include "zero/quantize.hpp"
#include "zero/rank_sync.hpp"
#include "zero/sharded_checkpoint.hpp"

namespace core::zero {

using comm::DType;
using comm::ReduceOp;
using train::AlignedVector;
using Pass = train::Model<float>::Pass;

void validate(const ZeroOptions& z, const Bf16Options& bf16, const DistributedOptions& d) {
  const bool zpp = z.zero_quantized_weights || z.zero_quantized_gradients || z.zero_hpz_partition_size > 1;
  if (zpp && z.stage != 3)
    throw UsageError("zero_optimization.zero_quantized_weights, zero_hpz_partition_size > 1 and "
                     "zero_quantized_gradients (ZeRO++) need zero_optimization.stage = 3, got stage " +
                     std::to_string(z.stage));
  if (bf16.enabled && z.stage != 3)
    throw UsageError("bf16.enabled needs zero_optimization.stage = 3 (16-bit weights gathered from fp32 master "
                     "shards); stages 0-2 train in fp32 here");
  if (z.overlap_comm && z.stage < 2)
    throw UsageError("zero_optimization.overlap_comm = true needs zero_optimization.stage >= 2 (stages 0 and 1 "
                     "reduce the gradients once, after the last micro step: nothing runs beside them); got stage " +
                     std::to_string(z.stage));
  if (d.quantization_block_size % 2 != 0)
    throw UsageError("distributed.quantization_block_size = " + std::to_string(d.quantization_block_size) +
                     ": must be even (two int4 codes a byte)");
}

struct Engine::State : GroupShards {
  train::Model<float>* model = nullptr;
  train::AdamW<float>* opt = nullptr;
  int G = 0;
  std::vector<AlignedVector<float>> master, m, v, grad;
  std::vector<std::vector<unsigned char>> secondary;
  std::vector<bool> secondary_valid;
  std::int64_t t = 0;
  bool training = false;
  PendingBucket pending;  // stages 2-3
  std::vector<unsigned char> buf_a, buf_b, buf_c, buf_d;  // staging
  std::vector<float> fbuf_a, fbuf_b;
  QgzScratch qgz;
  StepBytes bytes;
  MemoryBytes step_peak, run_peak;  // of the current step, of the run
  double startup_peak = 0;           // bytes held while the state was taken over (attach)
  // overlap_comm: per group the ticket of its gather (stage 3) in flight (0: none); the gradient buckets
  // whose buffers are freed once their reduce is done.
  std::vector<CommThread::Ticket> gather_ticket;
  ReducesInFlight reducing;
  double main_comm_s = 0;              // this step: collectives the training thread ran itself
  std::unique_ptr<CommThread> comm;    // last: joined before the buffers its tasks use go
};

namespace {

template <class T>
T* grow(std::vector<unsigned char>& b, std::size_t count) {
  if (b.size() < count * sizeof(T)) b.resize(count * sizeof(T));
  return reinterpret_cast<T*>(b.data());
}

float* grow(std::vector<float>& b, std::size_t count) {
  if (b.size() < count) b.resize(count);
  return b.data();
}

// n floats into a buffer of `dtype` (f32 or bf16) and back.
void pack(const float* src, std::size_t n, DType dtype, void* dst) {
  if (dtype == DType::f32) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  auto* d = static_cast<std::uint16_t*>(dst);
  for (std::size_t i = 0; i < n; ++i) d[i] = comm::float_to_bf16(src[i]);
}

void unpack(const void* src, std::size_t n, DType dtype, float* dst) {
  if (dtype == DType::f32) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  const auto* s = static_cast<const std::uint16_t*>(src);
  for (std::size_t i = 0; i < n; ++i) dst[i] = comm::bf16_to_float(s[i]);
}

unsigned char* at(void* p, std::size_t bytes) { return static_cast<unsigned char*>(p) + bytes; }

}  // namespace

Engine::Engine(std::unique_ptr<comm::Communicator> world, const Topology& topo, const EngineOptions& options)
    : groups_(std::move(world), topo, options.zero.zero_hpz_partition_size), opt_(options), s_(std::make_unique<State>()) {
  validate(opt_.zero, Bf16Options{opt_.bf16}, DistributedOptions{.quantization_block_size = int(opt_.block)});
}

Engine::~Engine() = default;

void Engine::attach(train::Model<float>& model, train::AdamW<float>& opt, const std::function<void(int)>& read_group) {
  comm::Communicator& w = groups_.world->inner();  // setup traffic is not a step's
  take_state(model, opt, [&](int g) {  // zero gradients, rank 0's weights and moments everywhere
    model.grads().allocate(g);
    broadcast_group_state(w, model, opt, g, read_group);
  });
}

void Engine::attach_fresh(train::Model<float>& model, train::AdamW<float>& opt,
                          const std::function<void(int)>& init_group) {
  take_state(model, opt, [&](int g) {  // zero gradients and moments, the initial weights
    for (auto* buffers : {&model.params(), &model.grads(), &opt.m(), &opt.v()}) buffers->allocate(g);
    init_group(g);
  });
}

double Engine::state_bytes_per_parameter() const {
  const double N = world_size();
  switch (opt_.zero.stage) {
    case 0: return 16.0;
    case 1: return 4.0 + 4.0 + 8.0 / N;
    case 2: return 4.0 + (4.0 + 8.0) / N;
    default: return 16.0 / N;
  }
}

void Engine::take_state(train::Model<float>& model, train::AdamW<float>& opt, const std::function<void(int)>& materialize) {
  State& s = *s_;
  s.model = &model;
  s.opt = &opt;
  auto& params = model.params();
  s.G = params.num_groups();
  const int N = world_size(), r = rank(), h = groups_.hpz_size;
  const nlohmann::json t = broadcast(opt.steps_taken());
  s.t = t.get<std::int64_t>();
  opt.set_steps_taken(s.t);
  const int stage = opt_.zero.stage;
  s.startup_peak = 0;
  for (int g = 0; g < s.G; ++g) {
    s.add_group(params.group_size(g), N, h);
    materialize(g);
    s.startup_peak = std::max(s.startup_peak, memory_now().total());
    if (stage == 0) continue;
    const std::size_t sh = s.shard[g];
    const auto [lo, hi] = s.owned(g, r);
    const auto slice = [&](const float* full) {
      AlignedVector<float> out(sh, 0.0f);
      std::copy(full + lo, full + hi, out.begin());
      return out;
    };
    s.m.push_back(slice(opt.m().group(g)));
    s.v.push_back(slice(opt.v().group(g)));
    if (stage >= 2) s.grad.emplace_back(sh, 0.0f);  // stage 1 reduces into its range of the full gradient
    if (stage == 3) s.master.push_back(slice(params.group(g)));
    // This rank keeps its shards only: the moments (stage >= 1), the gradients between the layers'
    // backward passes (stage >= 2) and the weights between their uses (stage 3).
    opt.m().release(g);
    opt.v().release(g);
    if (stage >= 2) model.grads().release(g);
    if (stage == 3) params.release(g);
  }
  s.secondary.assign(s.G, {});
  s.secondary_valid.assign(s.G, false);
  s.gather_ticket.assign(s.G, 0);
  s.reducing.reset(s.G);
  if (opt_.zero.overlap_comm) s.comm = std::make_unique<CommThread>();
  if (stage >= 2) model.set_group_hook([this](int g, Pass p, bool before) { on_group(g, p, before); });
  s.run_peak = s.step_peak = memory_now();
}

void Engine::begin_step() {
  State& s = *s_;
  for (auto& g : s.grad) std::fill(g.begin(), g.end(), 0.0f);
  std::fill(s.secondary_valid.begin(), s.secondary_valid.end(), false);
  s.training = true;
  groups_.reset_bytes();
  s.step_peak = memory_now();
  s.main_comm_s = 0;
  if (s.comm) s.comm->reset_times();
}

// ---- stage 3 weight gathers -------------------------------------------------------------------

namespace {

// Stores n gathered values as the model's weights: the gather dtype's values (bf16: rounded).
void store_weights(const float* src, std::size_t n, bool bf16, float* dst) {
  if (!bf16) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) dst[i] = comm::bf16_to_float(comm::float_to_bf16(src[i]));
}

}  // namespace

void Engine::on_group(int g, Pass pass, bool before) {
  State& s = *s_;
  const int stage = opt_.zero.stage;
  if (before) {
    if (stage == 3) {
      if (!s.gather_ticket[g]) start_gather(g, pass);
      if (s.comm) {  // the next groups' gathers run while this one computes
        for (const int n : s.prefetch_after(g, pass, std::size_t(opt_.zero.stage3_prefetch_bucket_size)))
          if (!s.gather_ticket[n]) start_gather(n, pass);
        s.comm->wait(s.gather_ticket[g]);
        s.gather_ticket[g] = 0;
      }
    }
    if (pass == Pass::backward) {
      if (s.reducing.of(g)) s.comm->wait(s.reducing.of(g));  // the last micro step's gradient is sent
      free_reduced_gradients();
      s.model->grads().allocate(g);
    }
    note_memory();
    return;
  }
  note_memory();
  if (stage == 3) s.model->params().release(g);
  if (pass == Pass::backward && s.pending.add(g, s.size[g], std::size_t(opt_.zero.reduce_bucket_size))) {
    const std::vector<int> gs = s.pending.take();  // stages 2 and 3: reduce as the buckets fill
    if (s.comm) {
      s.reducing.add(s.comm->submit([this, gs] { reduce_bucket(gs); }), gs);
    } else {
      reduce_bucket(gs);
      for (const int k : gs) s.model->grads().release(k);
    }
  }
  free_reduced_gradients();
}

void Engine::start_gather(int g, Pass pass) {
  State& s = *s_;
  s.model->params().allocate(g);
  if (s.comm) s.gather_ticket[g] = s.comm->submit([this, g, pass] { gather_weights(g, pass); });
  else gather_weights(g, pass);
}

void Engine::free_reduced_gradients() {
  State& s = *s_;
  s.reducing.retire(*s.comm, [&](CommThread::Ticket, const std::vector<int>& gs) {
    for (const int g : gs) s.model->grads().release(g);
  });
}

void Engine::settle() {
  if (!s_->comm) return;
  s_->comm->drain();
  free_reduced_gradients();
}

// Stage 3: the weights of group g into the model's (allocated) buffer: an all-gather of the master
// shards (qwZ: as int8 blocks), or of the hpZ secondary shards inside the hpZ group.
void Engine::gather_weights(int g, Pass pass) {
  State& s = *s_;
  const DType dtype = opt_.bf16 ? DType::bf16 : DType::f32;
  const std::size_t esz = comm::dtype_size(dtype);
  float* dst = s.model->params().group(g);
  const std::size_t S = s.size[g];
  const int N = world_size();
  const bool hpz = groups_.hpz != nullptr;
  if (hpz && s.secondary_valid[g]) {  // inside the hpZ group
    const int h = groups_.hpz_size;
    const std::size_t t = s.sec[g];
    void* all = grow<unsigned char>(s.buf_a, h * t * esz);
    groups_.hpz->all_gather(s.secondary[g].data(), all, t, dtype);
    unpack(all, S, dtype, dst);
    return;
  }
  const std::size_t sh = s.shard[g];
  if (opt_.zero.zero_quantized_weights) {
    const std::size_t nb = block_count(sh, opt_.block);
    auto* codes = grow<std::int8_t>(s.buf_a, N * sh);
    auto* scales = grow<float>(s.buf_b, N * nb);
    quantize_int8(s.master[g].data(), sh, opt_.block, codes + rank() * sh, scales + rank() * nb);
    groups_.world->all_gather(codes + rank() * sh, codes, sh, DType::i8);
    groups_.world->all_gather(scales + rank() * nb, scales, nb, DType::f32);
    float* full = grow(s.fbuf_a, N * sh);
    for (int q = 0; q < N; ++q) dequantize_int8(codes + q * sh, scales + q * nb, sh, opt_.block, full + q * sh);
    store_weights(full, S, opt_.bf16, dst);
  } else {
    void* all = grow<unsigned char>(s.buf_a, N * sh * esz);
    void* mine = at(all, rank() * sh * esz);
    pack(s.master[g].data(), sh, dtype, mine);
    groups_.world->all_gather(mine, all, sh, dtype);
    unpack(all, S, dtype, dst);
  }
  if (hpz && s.training && pass == Pass::forward) {  // keep this rank's secondary shard
    const std::size_t t = s.sec[g];
    const auto [lo, hi] = owned_range(S, t, groups_.hpz->rank());
    float* tmp = grow(s.fbuf_b, t);
    std::fill_n(tmp, t, 0.0f);
    std::copy(dst + lo, dst + hi, tmp);
    s.secondary[g].resize(t * esz);
    pack(tmp, t, dtype, s.secondary[g].data());
    s.secondary_valid[g] = true;
  }
}

// ---- gradient reduction ----------------------------------------------------------------------

void Engine::reduce_all_groups() {
  for (const std::vector<int>& bucket : reduce_buckets(s_->size, std::size_t(opt_.zero.reduce_bucket_size)))
    reduce_bucket(bucket);
}

void Engine::reduce_bucket(const std::vector<int>& gs) {
  State& s = *s_;
  const int N = world_size(), stage = opt_.zero.stage;
  const float inv_n = 1.0f / float(N);
  auto& grads = s.model->grads();
  if (stage == 0) {
    std::size_t total = 0;
    for (const int g : gs) total += s.size[g];
    float* buf = grow(s.fbuf_a, total);
    for (std::size_t off = 0; const int g : gs) {
      std::copy_n(grads.group(g), s.size[g], buf + off);
      off += s.size[g];
    }
    groups_.world->all_reduce(buf, buf, total, DType::f32, ReduceOp::sum);
    for (std::size_t off = 0; const int g : gs) {
      float* out = grads.group(g);
      for (std::size_t i = 0; i < s.size[g]; ++i) out[i] = buf[off + i] * inv_n;
      off += s.size[g];
    }
    return;
  }
  if (opt_.zero.zero_quantized_gradients) {
    reduce_scatter_qgz(gs);
  } else {
    const DType dtype = opt_.bf16 ? DType::bf16 : DType::f32;
    const std::size_t esz = comm::dtype_size(dtype);
    const std::size_t c = s.chunk(gs);
    void* send = grow<unsigned char>(s.buf_a, N * c * esz);
    void* recv = grow<unsigned char>(s.buf_b, c * esz);
    float* tmp = grow(s.fbuf_a, std::max<std::size_t>(c, 1));
    for (int q = 0; q < N; ++q) {
      s.for_each_slice(gs, q, [&](std::size_t, int g, std::size_t lo, std::size_t hi, std::size_t off) {
        std::fill(std::copy(grads.group(g) + lo, grads.group(g) + hi, tmp + off), tmp + off + s.shard[g], 0.0f);
      });
      pack(tmp, c, dtype, at(send, q * c * esz));
    }
    groups_.world->reduce_scatter(send, recv, c, dtype, ReduceOp::sum);
    unpack(recv, c, dtype, tmp);
    s.for_each_slice(gs, rank(), [&](std::size_t, int g, std::size_t lo, std::size_t hi, std::size_t off) {
      if (stage == 1) {  // once a step: the mean gradient of the owned range, in place
        float* out = grads.group(g) + lo;
        for (std::size_t i = 0; i < hi - lo; ++i) out[i] = tmp[off + i] * inv_n;
      } else {  // every micro step, accumulated
        float* out = s.grad[g].data();
        for (std::size_t i = 0; i < s.shard[g]; ++i) out[i] += tmp[off + i] * inv_n;
      }
    });
  }
}

void Engine::reduce_scatter_qgz(const std::vector<int>& gs) {
  State& s = *s_;
  const int N = world_size();
  auto& grads = s.model->grads();
  const std::size_t c = s.chunk(gs);  // a chunk: this bucket's blocks of one destination rank
  float* chunks = grow(s.fbuf_a, N * c);
  for (int q = 0; q < N; ++q)
    s.for_each_slice(gs, q, [&](std::size_t, int g, std::size_t lo, std::size_t hi, std::size_t off) {
      float* dst = chunks + q * c + off;
      std::fill(std::copy(grads.group(g) + lo, grads.group(g) + hi, dst), dst + s.shard[g], 0.0f);
    });
  float* mean = grow(s.fbuf_b, c);
  qgz_reduce_scatter_mean(chunks, c, mean, groups_, opt_.block, s.qgz);
  s.for_each_slice(gs, rank(), [&](std::size_t, int g, std::size_t, std::size_t, std::size_t off) {
    float* out = s.grad[g].data();
    for (std::size_t i = 0; i < s.shard[g]; ++i) out[i] += mean[off + i];
  });
}

train::DataParallel::Totals Engine::finish_gradients(double local_loss, bool stop_requested) {
  State& s = *s_;
  const int stage = opt_.zero.stage, r = rank();
  settle();
  if (stage <= 1) reduce_all_groups();
  // The squared norm of this rank's shard of the mean gradient (the same numbers in every stage).
  double sq = 0;
  for (int g = 0; g < s.G; ++g) {
    const auto [lo, hi] = s.owned(g, r);
    const float* p = stage <= 1 ? s.model->grads().group(g) + lo : s.grad[g].data();
    for (std::size_t i = 0; i < hi - lo; ++i) sq += double(p[i]) * double(p[i]);
  }
  float totals[3] = {float(sq), float(local_loss), stop_requested ? 1.0f : 0.0f};
  Timer timer;
  groups_.world->all_reduce(totals, totals, 3, DType::f32, ReduceOp::sum);
  s.main_comm_s += timer.seconds();
  return {double(totals[1]) / world_size(), std::sqrt(double(totals[0])), totals[2] > 0};
}

// ---- optimizer --------------------------------------------------------------------------------

void Engine::optimizer_step(double lr, double grad_scale) {
  State& s = *s_;
  settle();
  s.training = false;
  const int stage = opt_.zero.stage, N = world_size(), r = rank();
  auto& params = s.model->params();
  if (stage == 0) {
    s.opt->step(params, s.model->grads(), lr, grad_scale);
    s.t = s.opt->steps_taken();
    return;
  }
  ++s.t;
  const train::AdamWHyper& hyper = s.opt->hyper();
  train::AdamWUpdate u{lr, hyper.beta1, hyper.beta2, hyper.eps, 0.0, grad_scale, s.t};
  const auto& layout = params.layout();
  for (int g = 0; g < s.G; ++g) {
    const auto [lo, hi] = s.owned(g, r);
    for (const auto& view : layout.groups()[g].tensors) {
      const std::size_t a = std::max(lo, view.offset), b = std::min(hi, view.offset + view.numel);
      if (a >= b) continue;
      u.weight_decay = view.decay ? hyper.weight_decay : 0.0;
      float* p = stage == 3 ? s.master[g].data() + (a - lo) : params.group(g) + a;
      const float* grad = stage == 1 ? s.model->grads().group(g) + a : s.grad[g].data() + (a - lo);
      train::adamw_update(p, s.m[g].data() + (a - lo), s.v[g].data() + (a - lo), grad,
                          std::int64_t(b - a), u);
    }
  }
  s.opt->set_steps_taken(s.t);
  if (stage == 3) {  // the next forward gathers; the secondary shards held this step's weights
    note_memory();
    std::fill(s.secondary_valid.begin(), s.secondary_valid.end(), false);
    for (auto& sec : s.secondary) std::vector<unsigned char>().swap(sec);
    return;
  }
  // Stages 1 and 2: every rank takes the updated shards, in buckets of allgather_bucket_size.
  for (const std::vector<int>& bucket : allgather_buckets(s.size, std::size_t(opt_.zero.allgather_bucket_size))) {
    const std::size_t c = s.chunk(bucket);
    float* all = grow(s.fbuf_a, N * c);
    s.for_each_slice(bucket, r, [&](std::size_t, int k, std::size_t lo, std::size_t hi, std::size_t off) {
      float* mine = all + r * c + off;
      std::fill(std::copy(params.group(k) + lo, params.group(k) + hi, mine), mine + s.shard[k], 0.0f);
    });
    Timer timer;
    groups_.world->all_gather(all + r * c, all, c, DType::f32);
    s.main_comm_s += timer.seconds();
    for (int q = 0; q < N; ++q)
      s.for_each_slice(bucket, q, [&](std::size_t, int k, std::size_t lo, std::size_t hi, std::size_t off) {
        std::copy(all + q * c + off, all + q * c + off + (hi - lo), params.group(k) + lo);
      });
  }
}

// ---- state, metrics ---------------------------------------------------------------------------

fs::path Engine::save_checkpoint(const fs::path& root, std::int64_t step, const nlohmann::json& state, int keep) {
  State& s = *s_;
  settle();
  const int stage = opt_.zero.stage, r = rank();
  std::vector<ShardSlice> slices;
  for (int g = 0; g < s.G; ++g) {
    const auto [lo, hi] = s.owned(g, r);
    ShardSlice sl;
    sl.count = hi - lo;
    sl.w = stage == 3 ? s.master[g].data() : s.model->params().group(g) + lo;
    sl.m = stage >= 1 ? s.m[g].data() : s.opt->m().group(g) + lo;
    sl.v = stage >= 1 ? s.v[g].data() : s.opt->v().group(g) + lo;
    slices.push_back(sl);
  }
  return write_sharded_checkpoint(groups_.world->inner(), root, step, state, keep, manifest(), slices);
}

ShardManifest Engine::manifest() const { return s_->manifest(s_->model->layout(), world_size(), s_->t); }

void Engine::load_checkpoint(const fs::path& dir_on_rank0) {
  State& s = *s_;
  const int stage = opt_.zero.stage, r = rank();
  settle();
  const auto shards = open_shards(groups_.world->inner(), dir_on_rank0, manifest());
  ShardReader& reader = *shards;
  const ShardManifest& m = reader.manifest();
  for (int g = 0; g < s.G; ++g) {
    const std::size_t S = s.size[g];
    const auto [lo, hi] = s.owned(g, r);
    // The full weights (stages 0-2) and moments (stage 0) are read whole: every rank holds them.
    if (stage == 3) reader.read('w', g, lo, hi, s.master[g].data());
    else reader.read('w', g, 0, S, s.model->params().group(g));
    if (stage >= 1) {
      reader.read('m', g, lo, hi, s.m[g].data());
      reader.read('v', g, lo, hi, s.v[g].data());
    } else {
      reader.read('m', g, 0, S, s.opt->m().group(g));
      reader.read('v', g, 0, S, s.opt->v().group(g));
    }
  }
  s.t = m.adam_steps;
  s.opt->set_steps_taken(s.t);
}

nlohmann::json Engine::broadcast(const nlohmann::json& value) {
  settle();
  return broadcast_json(groups_.world->inner(), value);
}

nlohmann::json Engine::step_metrics() {
  State& s = *s_;
  settle();
  const nlohmann::json bytes = s.bytes.record(groups_.world->inner(), groups_.bytes());
  note_memory();
  nlohmann::json rec = {{"bytes_per_step", bytes},
                        {"memory_per_rank", s.step_peak.to_json()}};
  if (s.comm) rec["comm_hidden_fraction"] = s.comm->account_step(s.main_comm_s);
  return rec;
}

MemoryBytes Engine::memory_now() const {
  const State& s = *s_;
  const auto elems = [](const std::vector<AlignedVector<float>>& shards) {
    double n = 0;
    for (const auto& v : shards) n += double(v.size());
    return n;
  };
  MemoryBytes b;
  b.params = 4.0 * (double(s.model->params().resident_elements()) + elems(s.master));
  b.grads = 4.0 * (double(s.model->grads().resident_elements()) + elems(s.grad));
  b.optimizer = 4.0 * (double(s.opt->m().resident_elements() + s.opt->v().resident_elements()) + elems(s.m) +
                       elems(s.v));
  if (s.comm && !s.comm->idle()) return b;  // its task may be resizing these: read them once it is idle
  for (const auto& sec : s.secondary) b.secondary += double(sec.capacity());
  for (const auto* buf : {&s.buf_a, &s.buf_b, &s.buf_c, &s.buf_d}) b.staging += double(buf->capacity());
  for (const auto* buf : {&s.fbuf_a, &s.fbuf_b, &s.qgz.partial, &s.qgz.scales, &s.qgz.scales_in})
    b.staging += 4.0 * double(buf->capacity());
  b.staging += double(s.qgz.codes.capacity() + s.qgz.codes_in.capacity());
  return b;
}

void Engine::note_memory() {
  State& s = *s_;
  const MemoryBytes now = memory_now();
  s.step_peak.raise(now);  // (secondary and staging 0 while a collective runs beside)
  s.run_peak.raise(now);
}

MemoryBytes Engine::memory_per_rank() const { return s_->run_peak; }

void MemoryBytes::raise(const MemoryBytes& now) {
  params = std::max(params, now.params);
  grads = std::max(grads, now.grads);
  optimizer = std::max(optimizer, now.optimizer);
  secondary = std::max(secondary, now.secondary);
  staging = std::max(staging, now.staging);
}

nlohmann::json MemoryBytes::to_json() const {
  return {{"params", params}, {"grads", grads}, {"optimizer", optimizer}, {"secondary", secondary},
          {"staging", staging}, {"total", total()}};
}

nlohmann::json Engine::summary() const {
  const State& s = *s_;
  const Topology& t = groups_.topo;
  nlohmann::json z = zero_summary(opt_.zero, opt_.bf16, t);
  z["memory_per_rank"] = memory_per_rank().to_json();
  z["startup_bytes"] = s.startup_peak;
  if (s.comm) z["overlap_comm"] = true;
  nlohmann::json out = {{"bytes_per_step", s.bytes.mean()}, {"zero", z}};
  if (s.comm) out["comm_hidden_fraction"] = s.comm->run_hidden_fraction();
  return out;
}

}  // namespace core::zero
