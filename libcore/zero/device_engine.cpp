// ZeRO stages 0-3 and ZeRO++ on device buffers (see device_engine.hpp; the host algorithm is engine.cpp's).
#include "zero/device_engine.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/errors.hpp"
#include "common/timer.hpp"
#include "kernels/device_bytes.hpp"
#include "kernels/gemm.hpp"
#include "kernels/ops.hpp"
#include "kernels/runtime.hpp"
#include "train/transformer_cuda.hpp"
#include "zero/comm_thread.hpp"
#include "zero/group_slots.hpp"
#include "zero/qgz.hpp"
#include "zero/quantize.hpp"
#include "zero/quantize_cuda.hpp"
#include "zero/rank_sync.hpp"

namespace core::zero {

namespace k = core::kernels;
using comm::DType;
using comm::ReduceOp;
using Pass = train::Model<float>::Pass;
template <class T>
using Dev = k::DeviceBuffer<T>;
using Byte = unsigned char;
using Gpu = train::TransformerCuda;

namespace {

template <class T>
T* grow(Dev<T>& b, std::size_t count) {
  if (b.size() < count) b = Dev<T>(count);
  return b.data();
}
template <class T>
T* grow_as(Dev<Byte>& b, std::size_t count) {
  return reinterpret_cast<T*>(grow(b, count * sizeof(T)));
}

// Device work in the order of `st` (nullptr: the compute stream, the legacy default stream).
void copy(void* dst, const void* src, std::size_t bytes, k::Stream st) { k::detail::copy_on_device(dst, src, bytes, st); }
void zero(void* p, std::size_t bytes, k::Stream st) { k::detail::zero_on_device(p, bytes, st); }
Byte* at(void* p, std::size_t bytes) { return static_cast<Byte*>(p) + bytes; }

// n floats into a buffer of `dtype` (f32 or bf16) and back, on the device.
void pack(const float* src, std::size_t n, DType dtype, void* dst, k::Stream st) {
  if (dtype == DType::f32) copy(dst, src, n * sizeof(float), st);
  else k::to_bf16(static_cast<k::bf16*>(dst), src, std::int64_t(n), st);
}
void unpack(const void* src, std::size_t n, DType dtype, float* dst, k::Stream st) {
  if (dtype == DType::f32) copy(dst, src, n * sizeof(float), st);
  else k::to_float(dst, static_cast<const k::bf16*>(src), std::int64_t(n), st);
}

// qgZ's buffers and quantizers on the device, on the stream of the reduce that runs it.
struct DeviceQgz final : QgzWorkspace {
  k::Stream st = nullptr;
  Dev<std::uint8_t> codes, codes_in;
  Dev<float> scales, scales_in, partial;
  void* stream() const override { return st; }
  Buffers reserve(std::size_t code_bytes, std::size_t scale_count, std::size_t partial_count) override {
    return {grow(codes, code_bytes), grow(codes_in, code_bytes), grow(scales, scale_count),
            grow(scales_in, scale_count), grow(partial, partial_count)};
  }
  void quantize_int4(const float* x, std::size_t n, std::size_t block, std::uint8_t* packed, float* sc) override {
    device::quantize_int4(x, n, block, packed, sc, st);
  }
  void dequantize_sum_int4(const std::uint8_t* packed, std::size_t packed_stride, const float* sc,
                           std::size_t scales_stride, int inputs, std::size_t n, std::size_t block, float multiplier,
                           float* out) override {
    device::dequantize_sum_int4(packed, packed_stride, sc, scales_stride, inputs, n, block, multiplier, out, st);
  }
  double bytes() const {
    return double(codes.bytes() + codes_in.bytes() + scales.bytes() + scales_in.bytes() + partial.bytes());
  }
};

}  // namespace

struct DeviceEngine::State : GroupShards {
  train::Model<float>* model = nullptr;
  train::AdamW<float>* opt = nullptr;
  train::TransformerCuda* gpu = nullptr;
  int G = 0;
  std::vector<Gpu::GroupBuffers> full;  // the model's own buffers of each group (null: what the stage partitions)
  GroupSlots<k::bf16> weights;          // stage 3: the gathered groups' bf16 weights
  GroupSlots<float> grads;              // stages 2-3: each group's gradient from its backward to its reduce
  std::vector<Dev<float>> master, m, v, grad;
  std::vector<Dev<Byte>> secondary;
  std::vector<bool> secondary_valid;
  std::int64_t t = 0;
  bool training = false;
  PendingBucket pending;  // stages 2-3
  Dev<Byte> buf_a, buf_b;
  Dev<float> fbuf_a, fbuf_b, totals;
  DeviceQgz qgz;
  k::Blas blas;
  StepBytes bytes;
  MemoryBytes step_peak, run_peak;
  double startup_bytes = 0;  // held once attach_device has uploaded the state (it only allocates)
  // attach / attach_fresh: makes group g's host state resident (attach_device uploads it, then frees it); the
  // host bytes of model state at most while it did (host_startup_bytes) and afterwards (host_bytes).
  std::function<void(int)> materialize;
  double host_startup_bytes = 0, host_bytes = 0;
  // overlap_comm: per group the ticket of its gather in flight (0: none), the buckets whose gradients go back
  // to the pool once reduced, each task's completion event on the communication stream, and the
  // communication seconds the training thread ran itself (this step).
  std::vector<CommThread::Ticket> gather_ticket;
  ReducesInFlight reducing;
  std::map<CommThread::Ticket, std::shared_ptr<k::Event>> done;
  double main_comm_s = 0;
  std::unique_ptr<k::OwnedStream> comm_stream;
  std::unique_ptr<CommThread> comm;  // last: joined before the buffers and the stream its tasks use go

  // Runs work(stream) on the communication thread, its device work on the communication stream after the
  // work issued to the compute stream so far (the gradients it reduces, the buffers it overwrites).
  CommThread::Ticket submit(std::function<void(k::Stream)> work) {
    auto issued = std::make_shared<k::Event>(), finished = std::make_shared<k::Event>();
    issued->record(nullptr);
    const k::Stream st = comm_stream->get();
    k::DeviceBytes* account = k::DeviceBytes::current();  // (the rank's buffers, whichever thread grows them)
    const CommThread::Ticket t = comm->submit([issued, finished, st, account, work = std::move(work)] {
      const k::DeviceBytes::Bind bind(account);
      issued->wait(st);
      work(st);
      finished->record(st);
    });
    done.emplace(t, std::move(finished));
    return t;
  }
  // Task t has run, and the compute stream's later work waits for its device work (and every earlier task's).
  void await(CommThread::Ticket t) {
    comm->wait(t);
    if (const auto it = done.find(t); it != done.end()) it->second->wait(nullptr);
    done.erase(done.begin(), done.upper_bound(t));
  }
  // The gradients of the buckets whose reduce is done go back to the pool.
  void free_reduced_gradients() {
    reducing.retire(*comm, [&](CommThread::Ticket t, const std::vector<int>& gs) {
      await(t);
      for (const int g : gs) grads.give_back(g);
    });
  }
  // Every task run and its device work ordered before the compute stream's next work.
  void settle() {
    if (!comm) return;
    comm->drain();
    if (!done.empty()) await(done.rbegin()->first);
    free_reduced_gradients();
  }
};

DeviceEngine::DeviceEngine(std::unique_ptr<comm::Communicator> device_world,
                           std::unique_ptr<comm::Communicator> host_world, const Topology& topo,
                           const EngineOptions& options)
    : groups_(std::move(device_world), topo, options.zero.zero_hpz_partition_size),
      host_(std::move(host_world)),
      opt_(options),
      s_(std::make_unique<State>()) {
  validate(opt_.zero, Bf16Options{opt_.bf16}, DistributedOptions{.quantization_block_size = int(opt_.block)});
  if (host_->size() != world_size() || host_->rank() != rank())
    throw Error(ExitCode::internal, "DeviceEngine: the host and device communicators hold different ranks");
}

DeviceEngine::~DeviceEngine() = default;

void DeviceEngine::attach(train::Model<float>& model, train::AdamW<float>& opt,
                          const std::function<void(int)>& read_group) {
  s_->model = &model;
  s_->opt = &opt;
  s_->t = broadcast_json(*host_, opt.steps_taken()).get<std::int64_t>();
  opt.set_steps_taken(s_->t);
  s_->materialize = [this, &model, &opt, read_group](int g) {
    broadcast_group_state(*host_, model, opt, g, read_group);
  };
}

void DeviceEngine::attach_fresh(train::Model<float>& model, train::AdamW<float>& opt,
                                const std::function<void(int)>& init_group) {
  s_->model = &model;
  s_->opt = &opt;
  s_->t = opt.steps_taken();
  s_->materialize = [&model, init_group](int g) {  // the weights only: the moments start at zero on the device
    model.params().allocate(g);
    init_group(g);
  };
}

double DeviceEngine::host_state_bytes() const {
  const State& s = *s_;
  std::size_t n = s.model->params().resident_elements() + s.model->grads().resident_elements();
  n += s.opt->m().resident_elements() + s.opt->v().resident_elements();
  return double(n * sizeof(float));
}

unsigned DeviceEngine::device_parts_held() const {
  const int stage = opt_.zero.stage;
  return (stage >= 1 ? Gpu::kMoments : 0u) | (stage >= 2 ? Gpu::kGrads : 0u) |
         (stage == 3 ? Gpu::kWeights32 | Gpu::kWeights16 : 0u);
}

void DeviceEngine::attach_device(train::TransformerCuda& gpu) {
  State& s = *s_;
  if (!s.model) throw Error(ExitCode::internal, "DeviceEngine::attach_device before attach");
  s.gpu = &gpu;
  const int N = world_size(), r = rank(), stage = opt_.zero.stage, h = groups_.hpz_size;
  s.G = gpu.layout().num_groups();
  gpu.set_steps_taken(s.t);
  train::FlatBuffers<float>& weights = s.model->params();
  train::AdamW<float>& opt = *s.opt;
  // (src null: zeros) n floats of src into dst
  const auto up = [](float* dst, const float* src, std::size_t n) {
    if (n == 0) return;
    if (src) k::detail::copy_to_device(dst, src, n * sizeof(float));
    else zero(dst, n * sizeof(float), nullptr);
  };
  // The host state group by group (materialize: the initial weights, or rank 0's weights and moments): what the
  // model keeps into its buffers (the stage's others were never allocated: device_parts_held), this rank's shard
  // of the rest into the engine's; then the host buffers of the group go, so that no host copy of the state
  // outlives its upload and a fresh run never holds more than one group's weights on the host.
  for (int g = 0; g < s.G; ++g) {
    s.add_group(gpu.layout().groups()[g].size, N, h);
    const std::size_t S = s.size[g], sh = s.shard[g];
    s.materialize(g);
    s.host_startup_bytes = std::max(s.host_startup_bytes, host_state_bytes());
    const float* w = weights.group(g);
    const float* m = opt.m().group(g);  // (null in a fresh run: zero)
    const float* v = opt.v().group(g);
    const Gpu::GroupBuffers own = gpu.group_buffers(g);
    s.full.push_back(own);
    if (own.w32) {
      up(own.w32, w, S);
      k::to_bf16(own.w16, own.w32, std::int64_t(S));
    }
    if (own.m32) {
      up(own.m32, m, S);
      up(own.v32, v, S);
    }
    if (stage > 0) {
      const auto [lo, hi] = s.owned(g, r);
      const auto shard = [&](const float* whole) {  // this rank's shard, zero beyond the group
        Dev<float> d(sh);
        up(d.data(), whole ? whole + lo : nullptr, hi - lo);
        if (sh > hi - lo) zero(d.data() + (hi - lo), (sh - (hi - lo)) * sizeof(float), nullptr);
        return d;
      };
      s.m.push_back(shard(m));
      s.v.push_back(shard(v));
      if (stage >= 2) s.grad.push_back(shard(nullptr));  // (the model's gradients start at zero)
      if (stage == 3) s.master.push_back(shard(w));
    }
    for (auto* host : {&weights, &s.model->grads(), &opt.m(), &opt.v()}) host->release(g);
  }
  s.materialize = nullptr;
  s.host_bytes = host_state_bytes();
  s.secondary.resize(s.G);
  s.secondary_valid.assign(s.G, false);
  s.totals = Dev<float>(3);
  s.gather_ticket.assign(s.G, 0);
  s.reducing.reset(s.G);
  if (opt_.zero.overlap_comm) {
    s.comm_stream = std::make_unique<k::OwnedStream>();
    s.comm = std::make_unique<CommThread>();
  }
  if (stage >= 2) gpu.set_group_hook([this](int g, Pass p, bool before) { on_group(g, p, before); });
  k::synchronize();
  s.run_peak = s.step_peak = memory_now();
  s.startup_bytes = s.run_peak.total();
}

void DeviceEngine::begin_step() {
  State& s = *s_;
  s.settle();
  for (int g = 0; g < int(s.grad.size()); ++g) s.grad[g].zero();
  std::fill(s.secondary_valid.begin(), s.secondary_valid.end(), false);
  s.training = true;
  groups_.reset_bytes();
  s.step_peak = memory_now();
  s.main_comm_s = 0;
  if (s.comm) s.comm->reset_times();
}

// ---- stage 3 weight gathers -------------------------------------------------------------------

// Stage 3 lends the model a group's weights from its gather to the end of its forward or backward; stages 2-3
// its gradient from its backward to its bucket's reduce-scatter.
// overlap_comm: the gathers and reduces run on the communication thread and stream in the order a run without
// it issues them (the same collectives, so the same bytes and results): the next groups' gathers, up to
// stage3_prefetch_bucket_size elements ahead, while this one computes, and a bucket's reduce while the backward
// of earlier groups goes on. The compute stream waits (an event) only for a gather it needs now, or for a
// group's previous reduce before its next backward.
void DeviceEngine::on_group(int g, Pass pass, bool before) {
  State& s = *s_;
  const bool stage3 = opt_.zero.stage == 3;
  if (before) {
    if (stage3) {
      if (!s.gather_ticket[g] && !s.weights.of(g)) start_gather(g, pass);
      if (s.comm) {
        for (const int n : s.prefetch_after(g, pass, std::size_t(opt_.zero.stage3_prefetch_bucket_size)))
          if (!s.gather_ticket[n] && !s.weights.of(n)) start_gather(n, pass);
        s.await(s.gather_ticket[g]);
        s.gather_ticket[g] = 0;
      }
    }
    if (pass == Pass::backward) {
      if (s.reducing.of(g)) s.await(s.reducing.of(g));  // the last micro step's gradient is sent
      if (s.comm) s.free_reduced_gradients();
      zero(s.grads.take(g, s.size[g]), s.size[g] * sizeof(float), nullptr);  // this micro step's
    }
    lend(g);
    return;
  }
  if (stage3) s.weights.give_back(g);
  lend(g);
  if (pass != Pass::backward) return;
  if (s.pending.add(g, s.size[g], std::size_t(opt_.zero.reduce_bucket_size))) {  // reduce as the buckets fill
    const std::vector<int> gs = s.pending.take();
    if (s.comm) {
      s.reducing.add(s.submit([this, gs, gr = grads_of(gs)](k::Stream st) { reduce_bucket(gs, gr, st); }), gs);
    } else {
      reduce_bucket(gs, grads_of(gs), nullptr);
      for (const int q : gs) s.grads.give_back(q);
    }
  }
  if (s.comm) s.free_reduced_gradients();
}

// Stage 3: group g's weights into a buffer of the pool, on the communication thread under overlap_comm.
void DeviceEngine::start_gather(int g, Pass pass) {
  State& s = *s_;
  k::bf16* w16 = s.weights.take(g, s.size[g]);
  if (s.comm) s.gather_ticket[g] = s.submit([this, g, pass, w16](k::Stream st) { gather_weights(g, pass, w16, st); });
  else gather_weights(g, pass, w16, nullptr);
}

void DeviceEngine::lend(int g) {
  State& s = *s_;
  s.gpu->bind_group(g, {.w32 = nullptr, .g32 = s.grads.of(g), .m32 = nullptr, .v32 = nullptr, .w16 = s.weights.of(g)});
}

// The gradients of groups gs this micro step: the model's own (stages 0-1) or lent (stages 2-3).
std::vector<float*> DeviceEngine::grads_of(const std::vector<int>& gs) {
  std::vector<float*> out;
  for (const int g : gs) out.push_back(opt_.zero.stage >= 2 ? s_->grads.of(g) : s_->full[g].g32);
  return out;
}

void DeviceEngine::gather_weights(int g, Pass pass, k::bf16* w16, k::Stream st) {
  State& s = *s_;
  const DType dtype = opt_.bf16 ? DType::bf16 : DType::f32;
  const std::size_t esz = comm::dtype_size(dtype), S = s.size[g];
  const int N = world_size();
  const bool hpz = groups_.hpz != nullptr;
  const auto store = [&](const void* all, DType type) {
    if (type == DType::f32) k::to_bf16(w16, static_cast<const float*>(all), std::int64_t(S), st);
    else copy(w16, all, S * sizeof(k::bf16), st);
  };
  if (hpz && s.secondary_valid[g]) {  // inside the hpZ group
    const std::size_t t = s.sec[g];
    void* all = grow(s.buf_a, groups_.hpz_size * t * esz);
    groups_.hpz->all_gather(s.secondary[g].data(), all, t, dtype, st);
    store(all, dtype);
    return;
  }
  const float* gathered = nullptr;  // fp32 gathers: the gathered values
  const std::size_t sh = s.shard[g];
  if (opt_.zero.zero_quantized_weights) {
    const std::size_t nb = block_count(sh, opt_.block);
    auto* codes = grow_as<std::int8_t>(s.buf_a, N * sh);
    auto* scales = grow_as<float>(s.buf_b, N * nb);
    device::quantize_int8(s.master[g].data(), sh, opt_.block, codes + rank() * sh, scales + rank() * nb, st);
    groups_.world->all_gather(codes + rank() * sh, codes, sh, DType::i8, st);
    groups_.world->all_gather(scales + rank() * nb, scales, nb, DType::f32, st);
    float* full = grow(s.fbuf_a, N * sh);
    for (int q = 0; q < N; ++q)
      device::dequantize_int8(codes + q * sh, scales + q * nb, sh, opt_.block, full + q * sh, st);
    store(full, DType::f32);  // (bf16 gathers too: the bf16 values of the dequantized weights)
    gathered = full;
  } else {
    void* all = grow(s.buf_a, N * sh * esz);
    pack(s.master[g].data(), sh, dtype, at(all, rank() * sh * esz), st);
    groups_.world->all_gather(at(all, rank() * sh * esz), all, sh, dtype, st);
    store(all, dtype);
    gathered = static_cast<const float*>(all);
  }
  if (hpz && s.training && pass == Pass::forward) {  // keep this rank's secondary shard, in the gather dtype
    const std::size_t t = s.sec[g];
    const auto [lo, hi] = owned_range(S, t, groups_.hpz->rank());
    if (s.secondary[g].size() != t * esz) s.secondary[g] = Dev<Byte>(t * esz);
    zero(s.secondary[g].data(), t * esz, st);
    const void* from = dtype == DType::f32 ? static_cast<const void*>(gathered + lo) : w16 + lo;
    copy(s.secondary[g].data(), from, (hi - lo) * esz, st);
    s.secondary_valid[g] = true;
  }
}

// ---- gradient reduction ----------------------------------------------------------------------

void DeviceEngine::reduce_all_groups() {
  for (const std::vector<int>& bucket : reduce_buckets(s_->size, std::size_t(opt_.zero.reduce_bucket_size)))
    reduce_bucket(bucket, grads_of(bucket), nullptr);
}

void DeviceEngine::reduce_bucket(const std::vector<int>& gs, const std::vector<float*>& grads, k::Stream st) {
  State& s = *s_;
  const int N = world_size(), stage = opt_.zero.stage;
  const float inv_n = 1.0f / float(N);
  if (stage == 0) {
    std::size_t total = 0;
    for (const int g : gs) total += s.size[g];
    float* buf = grow(s.fbuf_a, total);
    for (std::size_t i = 0, off = 0; i < gs.size(); off += s.size[gs[i]], ++i)
      copy(buf + off, grads[i], s.size[gs[i]] * sizeof(float), st);
    groups_.world->all_reduce(buf, buf, total, DType::f32, ReduceOp::sum, st);
    for (std::size_t i = 0, off = 0; i < gs.size(); off += s.size[gs[i]], ++i)
      device::add_scaled(grads[i], buf + off, s.size[gs[i]], inv_n, false, st);
    return;
  }
  // Chunk q (c elements): block q of each group of the bucket, zero beyond the group.
  const std::size_t c = s.chunk(gs);
  float* chunks = grow(s.fbuf_a, N * c);
  for (int q = 0; q < N; ++q)
    s.for_each_slice(gs, q, [&](std::size_t i, int g, std::size_t lo, std::size_t hi, std::size_t off) {
      float* dst = chunks + q * c + off;
      zero(dst, s.shard[g] * sizeof(float), st);
      copy(dst, grads[i] + lo, (hi - lo) * sizeof(float), st);
    });
  const float* mean = nullptr;  // the bucket's reduced chunk of this rank
  float multiplier = inv_n;
  if (opt_.zero.zero_quantized_gradients) {
    float* out = grow(s.fbuf_b, c);
    s.qgz.st = st;
    qgz_reduce_scatter_mean(chunks, c, out, groups_, opt_.block, s.qgz);
    mean = out;
    multiplier = 1.0f;  // (already the mean)
  } else {
    const DType dtype = opt_.bf16 ? DType::bf16 : DType::f32;
    const std::size_t esz = comm::dtype_size(dtype);
    void* send = chunks;
    if (dtype != DType::f32) {
      send = grow(s.buf_a, N * c * esz);
      pack(chunks, N * c, dtype, send, st);
    }
    void* recv = grow(s.buf_b, c * esz);
    groups_.world->reduce_scatter(send, recv, c, dtype, ReduceOp::sum, st);
    float* sum = grow(s.fbuf_b, c);
    unpack(recv, c, dtype, sum, st);
    mean = sum;
  }
  s.for_each_slice(gs, rank(), [&](std::size_t i, int g, std::size_t lo, std::size_t hi, std::size_t off) {
    if (stage == 1)  // once a step: the mean gradient of the owned range, in place
      device::add_scaled(grads[i] + lo, mean + off, hi - lo, multiplier, false, st);
    else  // every micro step, accumulated
      device::add_scaled(s.grad[g].data(), mean + off, s.shard[g], multiplier, true, st);
  });
}

train::DataParallel::Totals DeviceEngine::finish_gradients(double local_loss, bool stop_requested) {
  State& s = *s_;
  const int stage = opt_.zero.stage, r = rank();
  s.settle();
  if (stage <= 1) reduce_all_groups();
  double sq = 0;  // the squared norm of this rank's shard of the mean gradient (the same numbers in every stage)
  for (int g = 0; g < s.G; ++g) {
    const auto [lo, hi] = s.owned(g, r);
    if (hi == lo) continue;
    const float* p = stage <= 1 ? s.full[g].g32 + lo : s.grad[g].data();
    const double norm = k::l2_norm(s.blas, p, std::int64_t(hi - lo));
    sq += norm * norm;
  }
  const float host[3] = {float(sq), float(local_loss), stop_requested ? 1.0f : 0.0f};
  s.totals.upload(host);
  Timer timer;
  groups_.world->all_reduce(s.totals.data(), s.totals.data(), 3, DType::f32, ReduceOp::sum);
  s.main_comm_s += timer.seconds();
  const std::vector<float> totals = s.totals.download();
  return {double(totals[1]) / world_size(), std::sqrt(double(totals[0])), totals[2] > 0};
}

// ---- optimizer --------------------------------------------------------------------------------

void DeviceEngine::optimizer_step(double lr, double grad_scale) {
  State& s = *s_;
  s.settle();
  s.training = false;
  const int stage = opt_.zero.stage, r = rank();
  const train::AdamWHyper& hyper = s.opt->hyper();
  if (stage == 0) {
    s.gpu->adamw(hyper, lr, grad_scale);
    s.t = s.gpu->steps_taken();
    return;
  }
  ++s.t;
  k::AdamW p;
  p.lr = float(lr);
  p.beta1 = float(hyper.beta1);
  p.beta2 = float(hyper.beta2);
  p.eps = float(hyper.eps);
  p.grad_scale = float(grad_scale);
  p.step = int(s.t);
  for (int g = 0; g < s.G; ++g) {
    const auto [lo, hi] = s.owned(g, r);
    const Gpu::GroupBuffers& w = s.full[g];
    for (const auto& view : s.gpu->layout().groups()[g].tensors) {
      const std::size_t a = std::max(lo, view.offset), b = std::min(hi, view.offset + view.numel);
      if (a >= b) continue;
      p.weight_decay = view.decay ? float(hyper.weight_decay) : 0.0f;
      // Stage 3 updates the master shard (the next forward gathers it); stages 1-2 the owned range of the
      // model's weights and its bf16 copy.
      float* weights = stage == 3 ? s.master[g].data() + (a - lo) : w.w32 + a;
      const float* grad = stage == 1 ? w.g32 + a : s.grad[g].data() + (a - lo);
      k::adamw_update(weights, s.m[g].data() + (a - lo), s.v[g].data() + (a - lo), grad,
                      stage == 3 ? nullptr : w.w16 + a, std::int64_t(b - a), p);
    }
  }
  s.gpu->set_steps_taken(s.t);
  s.opt->set_steps_taken(s.t);
  if (stage == 3) {  // the secondary shards held this step's weights
    s.step_peak.secondary = std::max(s.step_peak.secondary, memory_now().secondary);
    std::fill(s.secondary_valid.begin(), s.secondary_valid.end(), false);
    for (auto& sec : s.secondary) sec = Dev<Byte>();
    return;
  }
  gather_updated_shards();
}

// Stages 1 and 2: every rank takes the updated shards, in buckets of allgather_bucket_size.
void DeviceEngine::gather_updated_shards() {
  State& s = *s_;
  const int N = world_size(), r = rank();
  for (const std::vector<int>& bucket : allgather_buckets(s.size, std::size_t(opt_.zero.allgather_bucket_size))) {
    const std::size_t c = s.chunk(bucket);
    float* all = grow(s.fbuf_a, N * c);
    s.for_each_slice(bucket, r, [&](std::size_t, int q, std::size_t lo, std::size_t hi, std::size_t off) {
      zero(all + r * c + off, s.shard[q] * sizeof(float), nullptr);
      copy(all + r * c + off, s.full[q].w32 + lo, (hi - lo) * sizeof(float), nullptr);
    });
    Timer timer;
    groups_.world->all_gather(all + r * c, all, c, DType::f32);
    s.main_comm_s += timer.seconds();
    for (int from = 0; from < N; ++from)
      s.for_each_slice(bucket, from, [&](std::size_t, int q, std::size_t lo, std::size_t hi, std::size_t off) {
        copy(s.full[q].w32 + lo, all + from * c + off, (hi - lo) * sizeof(float), nullptr);
      });
    for (const int q : bucket) k::to_bf16(s.full[q].w16, s.full[q].w32, std::int64_t(s.size[q]));
  }
}

// ---- state, metrics ---------------------------------------------------------------------------

ShardManifest DeviceEngine::manifest() const { return s_->manifest(s_->gpu->layout(), world_size(), s_->t); }

fs::path DeviceEngine::save_checkpoint(const fs::path& root, std::int64_t step, const nlohmann::json& state,
                                       int keep) {
  State& s = *s_;
  s.settle();
  const int stage = opt_.zero.stage, r = rank();
  std::vector<std::vector<float>> host(3 * s.G);  // this rank's slices, downloaded
  std::vector<ShardSlice> slices;
  for (int g = 0; g < s.G; ++g) {
    const auto [lo, hi] = s.owned(g, r);
    const std::size_t n = hi - lo;
    const auto down = [&](std::vector<float>& out, const float* src) {
      out.resize(n);
      if (n) k::detail::copy_to_host(out.data(), src, n * sizeof(float));
      return out.data();
    };
    ShardSlice sl;
    sl.count = n;
    sl.w = down(host[3 * g], stage == 3 ? s.master[g].data() : s.full[g].w32 + lo);
    sl.m = down(host[3 * g + 1], stage >= 1 ? s.m[g].data() : s.full[g].m32 + lo);
    sl.v = down(host[3 * g + 2], stage >= 1 ? s.v[g].data() : s.full[g].v32 + lo);
    slices.push_back(sl);
  }
  return write_sharded_checkpoint(*host_, root, step, state, keep, manifest(), slices);
}

void DeviceEngine::load_checkpoint(const fs::path& dir_on_rank0) {
  State& s = *s_;
  s.settle();
  const int stage = opt_.zero.stage, r = rank();
  const auto shards = open_shards(*host_, dir_on_rank0, manifest());
  std::vector<float> buf;
  // [lo, hi) of group g's `kind` from the shards into the device at dst.
  const auto load = [&](char kind, int g, std::size_t lo, std::size_t hi, float* dst) {
    buf.resize(hi - lo);
    shards->read(kind, g, lo, hi, buf.data());
    if (hi > lo) k::detail::copy_to_device(dst, buf.data(), (hi - lo) * sizeof(float));
  };
  for (int g = 0; g < s.G; ++g) {
    const std::size_t S = s.size[g];
    const auto [lo, hi] = s.owned(g, r);
    const Gpu::GroupBuffers& w = s.full[g];
    if (stage == 3) {
      load('w', g, lo, hi, s.master[g].data());
    } else {  // every rank holds the full weights
      load('w', g, 0, S, w.w32);
      k::to_bf16(w.w16, w.w32, std::int64_t(S));
    }
    if (stage >= 1) {
      load('m', g, lo, hi, s.m[g].data());
      load('v', g, lo, hi, s.v[g].data());
    } else {
      load('m', g, 0, S, w.m32);
      load('v', g, 0, S, w.v32);
    }
  }
  s.t = shards->manifest().adam_steps;
  s.gpu->set_steps_taken(s.t);
  s.opt->set_steps_taken(s.t);
  k::synchronize();
}

nlohmann::json DeviceEngine::broadcast(const nlohmann::json& value) { return broadcast_json(*host_, value); }

MemoryBytes DeviceEngine::memory_now() const {
  const State& s = *s_;
  const auto bytes = [](const auto& buffers) {
    double n = 0;
    for (const auto& b : buffers) n += double(b.bytes());
    return n;
  };
  const auto model = [&](unsigned parts) { return double(s.gpu->owned_bytes(parts)); };
  MemoryBytes b;  // the model's own buffers, what the engine lends it, the engine's shards
  b.params = model(Gpu::kWeights32 | Gpu::kWeights16) + double(s.weights.bytes()) + bytes(s.master);
  b.grads = model(Gpu::kGrads) + double(s.grads.bytes()) + bytes(s.grad);
  b.optimizer = model(Gpu::kMoments) + bytes(s.m) + bytes(s.v);
  b.secondary = bytes(s.secondary);
  b.staging = double(s.buf_a.bytes() + s.buf_b.bytes() + s.fbuf_a.bytes() + s.fbuf_b.bytes()) + s.qgz.bytes();
  return b;
}

MemoryBytes DeviceEngine::memory_per_rank() const { return s_->run_peak; }

nlohmann::json DeviceEngine::step_metrics() {
  State& s = *s_;
  s.settle();
  const nlohmann::json bytes = s.bytes.record(*host_, groups_.bytes());
  const MemoryBytes now = memory_now();
  s.step_peak.raise(now);
  s.run_peak.raise(now);
  s.run_peak.secondary = std::max(s.run_peak.secondary, s.step_peak.secondary);
  nlohmann::json rec = {{"bytes_per_step", bytes},
                        {"device_memory_per_rank", s.step_peak.to_json()}};
  if (s.comm) rec["comm_hidden_fraction"] = s.comm->account_step(s.main_comm_s);
  return rec;
}

nlohmann::json DeviceEngine::summary() const {
  const State& s = *s_;
  nlohmann::json z = zero_summary(opt_.zero, opt_.bf16, groups_.topo);
  z["backend"] = groups_.world->backend();
  z["device_memory_per_rank"] = memory_per_rank().to_json();
  z["startup_bytes"] = s.startup_bytes;
  z["host_startup_bytes"] = s.host_startup_bytes;
  z["host_state_bytes"] = s.host_bytes;
  if (s.comm) z["overlap_comm"] = true;
  nlohmann::json out = {{"bytes_per_step", s.bytes.mean()}, {"zero", z}};
  if (s.comm) out["comm_hidden_fraction"] = s.comm->run_hidden_fraction();
  return out;
}

}  // namespace core::zero
