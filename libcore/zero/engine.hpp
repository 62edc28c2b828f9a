// ZeRO data parallelism (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
// Trillion Parameter Models") and ZeRO++ (Wang et al. 2023) behind train::DataParallel.
//
// A parameter group of the model's flat layout (params.hpp: "embed", "h.l") is a flat bucket of
// S_g elements, split into N shards of s_g = ceil(S_g / N) rounded up to 16 elements; rank r owns
// [r s_g, (r + 1) s_g). Every stage reduces gradients as a sum and scales it by 1/N, takes the
// global norm from per-shard partial sums in one scalar all-reduce (with the loss and the stop flag)
// and runs the same element-wise AdamW, so stages 1-3 reproduce stage 0 bit for bit where the
// backend's reduction order is the same (the thread backend: rank order).
//   stage 0  full state per rank; gradient all-reduce after the last micro step.
//   stage 1  AdamW moments sharded; gradient reduce-scatter after the last micro step (the mean
//            lands in the owned range of the full gradient); AdamW on the owned shard; the updated
//            weights all-gathered.
//   stage 2  as 1, the reduce-scatter of a group as soon as its backward is done (every micro step,
//            accumulated into the gradient shard), so full gradients need not outlive a layer.
//   stage 3  + fp32 master weights sharded: each group is all-gathered before its forward and again
//            before its backward (the model's group hooks) and released after use.
// Memory: each rank holds the shards of what its stage partitions and frees the model's full buffers
// of it (FlatBuffers::release): stage 1 the AdamW moments (8 s bytes a rank for s shard elements),
// stage 2 also the gradients (a group's full gradient lives from its backward to its bucket's
// reduce-scatter), stage 3 also the weights (a group's full weights live from its gather to the end
// of its forward or backward; the embedding group spans the whole pass). memory_per_rank() reports
// the peak bytes measured from the buffers actually allocated. A fresh run builds its state group
// by group (attach_fresh, as DeepSpeed's zero.Init): every rank initialises one group at a time and
// keeps its part, so no rank ever holds the whole model; a run from a full checkpoint or init_from
// likewise (attach: rank 0 reads one group, broadcasts it, every rank keeps its part); startup_bytes
// in the summary is the peak while the state was taken over.
//   qwZ      stage 3's gathers send int8 blocks of the master shard with fp32 scales.
//   hpZ      the first forward gather of a step leaves a secondary shard of 1/h of the group with
//            each rank of a group of h ranks inside a node; later gathers of the step all-gather the
//            secondary shards inside that group; dropped after the optimizer step.
//   qgZ      the gradient reduce-scatter is the hierarchical all-to-all of ZeRO++ Sec. 4.3: chunks
//            reordered (qgz_chunk_order), int4, intra-node all-to-all, dequantize + sum in fp32,
//            int4 again, inter-node all-to-all, dequantize + sum, times 1/N.
// reduce_bucket_size (allgather_bucket_size) fuses consecutive groups into one reduce (gather) call
// up to that many elements.
// overlap_comm (stages 2-3): the bucket reduce-scatters and stage 3's gathers run on a communication
// thread (comm_thread.hpp) in the order a synchronous run issues them, so the results are the same
// bit for bit: a bucket's reduce-scatter runs while the backward of earlier layers continues, and
// the gathers of the next groups (up to stage3_prefetch_bucket_size elements) run while the current
// one computes. The training thread waits only for a gather it needs now, or for a group's previous
// reduce before its next backward; comm_hidden_fraction in the metrics is the share of the step's
// communication time it did not wait for.
#pragma once
#include <filesystem>
#include <memory>
#include <vector>

#include "train/data_parallel.hpp"
#include "zero/group_shards.hpp"
#include "zero/options.hpp"
#include "zero/sharded_checkpoint.hpp"
#include "zero/topology.hpp"

namespace core::zero {

struct EngineOptions {
  ZeroOptions zero;
  bool bf16 = false;
  std::size_t block = 2048;
};

// Bytes of model state a rank holds: fp32 weights (full buffers + stage 3's master shards), fp32
// gradients (full buffers + gradient shards), AdamW moments, hpZ secondary shards, and the staging
// buffers of the collectives (bounded by the largest bucket or group).
struct MemoryBytes {
  double params = 0, grads = 0, optimizer = 0, secondary = 0, staging = 0;
  double total() const { return params + grads + optimizer + secondary + staging; }
  void raise(const MemoryBytes& now);  // each part to the larger of the two
  nlohmann::json to_json() const;  // the five and their total
};

class Engine final : public train::DataParallel {
 public:
  // Collective over `world`: builds the sub-communicators. UsageError for an invalid topology.
  Engine(std::unique_ptr<comm::Communicator> world, const Topology& topo, const EngineOptions& options);
  ~Engine() override;

  int rank() const override { return groups_.topo.rank; }
  int world_size() const override { return groups_.topo.world_size; }
  void attach(train::Model<float>& model, train::AdamW<float>& opt,
              const std::function<void(int)>& read_group) override;
  void attach_fresh(train::Model<float>& model, train::AdamW<float>& opt,
                    const std::function<void(int)>& init_group) override;
  bool partitions_state() const override { return opt_.zero.stage > 0; }
  // fp32 weights 4, gradients 4, AdamW moments 8, divided by N where the stage partitions them.
  double state_bytes_per_parameter() const override;
  void begin_step() override;
  Totals finish_gradients(double local_loss, bool stop_requested) override;
  void optimizer_step(double lr, double grad_scale) override;
  fs::path save_checkpoint(const fs::path& root, std::int64_t step, const nlohmann::json& state, int keep) override;
  void load_checkpoint(const fs::path& dir) override;
  nlohmann::json broadcast(const nlohmann::json& value) override;
  nlohmann::json step_metrics() override;
  nlohmann::json summary() const override;

  const CommGroups& groups() const { return groups_; }
  // The peak, over the run so far, of the bytes this rank holds (measured at every allocation).
  MemoryBytes memory_per_rank() const;

 private:
  struct State;
  // attach/attach_fresh: `materialize(g)` makes rank 0's (or the initial) state of group g resident
  // on this rank; the engine then keeps its part of it and releases the rest.
  void take_state(train::Model<float>& model, train::AdamW<float>& opt, const std::function<void(int)>& materialize);
  void on_group(int group, train::Model<float>::Pass pass, bool before);
  void gather_weights(int group, train::Model<float>::Pass pass);
  // overlap_comm: a gather started (on the communication thread when there is one), the gradient
  // buffers of finished reduces freed, and every queued collective finished (before the training
  // thread calls one itself).
  void start_gather(int group, train::Model<float>::Pass pass);
  void free_reduced_gradients();
  void settle();
  MemoryBytes memory_now() const;
  void note_memory();  // raises the step's and the run's peaks to memory_now()
  ShardManifest manifest() const;
  // Reduces the gradients of `groups` (one fused call): all-reduce (stage 0) into the model's
  // gradients, or reduce-scatter / qgZ into the gradient shards (+=), each times 1/N.
  void reduce_bucket(const std::vector<int>& groups);
  void reduce_scatter_qgz(const std::vector<int>& groups);
  // Every group in buckets of reduce_bucket_size, in backward order (stages 0 and 1).
  void reduce_all_groups();
  CommGroups groups_;
  EngineOptions opt_;
  std::unique_ptr<State> s_;
};

}  // namespace core::zero
