// ZeRO stages 0-3 and ZeRO++ (qwZ, hpZ, qgZ) on device buffers: engine.hpp's algorithm, byte for byte
// the same collectives, for a run with device=cuda whose ranks each drive a train::TransformerCuda.
// Everything a stage partitions lives on the device: the fp32 master shards (stage 3), the AdamW
// moment shards (stages 1-3), the gradient shards (stages 2-3), hpZ's secondary shards and the
// staging buffers of the collectives, which run through a device communicator (shared_gpu: thread
// ranks of one process on one GPU; nccl: one process per GPU) counted per link as engine.hpp's.
// The model (TransformerCuda) is built with only what the stage does not partition (device_parts_held): stages
// 1-3 hold its AdamW moments, stages 2-3 its gradients, stage 3 its fp32 and bf16 weights. The engine lends
// it the rest from GroupSlots (group_slots.hpp) while a group is in use: stage 3 gathers a group's bf16
// weights in its hook before each forward and backward use and gives them back after it (the embedding
// group spans the whole pass: the head uses it), so a rank holds the shards plus the embedding group and
// one block (qwZ: the master shard quantized to int8 by quantize_cuda.hpp's kernel, gathered with its
// scales and dequantized on the device; hpZ: from the secondary shards after the step's first forward
// gather); stages 2-3 lend a group's gradient from its backward to its bucket's reduce-scatter, which
// runs as buckets fill in the backward hooks (qgZ: qgz.hpp's
// hierarchical int4 all-to-all on the device); the mean is the sum times 1/N (add_scaled), the global
// norm comes from per-shard cuBLAS norms in one scalar all-reduce with the loss, and AdamW
// (kernels::adamw_update) updates each rank's shard. Control traffic (rank 0's state and JSON values,
// metrics, checkpoint coordination) goes through a second communicator of host buffers over the same
// ranks (threads or MPI). With the thread backend's rank-order sums, stages 1-3 give stage 0's losses
// bit for bit, and the shared-GPU ranks give the same as the CPU thread backend over the same device
// model.
// memory_per_rank: the device bytes of model state a rank holds (the model's own buffers, the lent ones,
// the shards, hpZ's secondary shards, the staging buffers), measured from the buffers allocated; the
// activations are the model's and not counted. The device model is built without what the stage partitions
// (device_parts_held) and the engine uploads each rank's shards from the host state, so that no rank's
// device ever holds more than its partitioned footprint, at start-up either. Nor does any rank's host keep
// the state: attach_device makes it resident one group at a time and frees each group once uploaded (a fresh
// run holds one group's fp32 weights on the host at most; checkpoints go device -> host shard by shard).
// overlap_comm (stages 2-3; DeepSpeed's meaning): the gathers and bucket reduces run on a communication
// thread (comm_thread.hpp) that issues their kernels and collectives on a communication stream beside the
// compute stream, in the order a run without it issues them, so losses, weights and bytes are the same bit
// for bit. Events order the streams: each task's device work starts after the compute work issued before it
// was submitted (the gradients it reduces, the buffers it overwrites, the optimizer's update of the shards it
// gathers), and the compute stream waits for a task's completion event only where it needs the task's result:
// a gather it uses now (the next groups', up to stage3_prefetch_bucket_size elements, are gathered while this
// one computes), or a group's previous reduce before its next backward. comm_hidden_fraction is engine.hpp's
// measure, of the communication thread on the host.
// Needs a CUDA build (TOOLKIT_HAVE_CUDA).
#pragma once
#include <memory>
#include <vector>

#include "kernels/bf16.hpp"
#include "train/data_parallel.hpp"
#include "zero/engine.hpp"

struct CUstream_st;

namespace core::zero {

class DeviceEngine final : public train::DataParallel {
 public:
  // Collective over both communicators (the same ranks in the same order): `device_world` moves
  // device buffers, `host_world` host ones. UsageError for an invalid topology or option.
  DeviceEngine(std::unique_ptr<comm::Communicator> device_world, std::unique_ptr<comm::Communicator> host_world,
               const Topology& topo, const EngineOptions& options);
  ~DeviceEngine() override;

  int rank() const override { return groups_.topo.rank; }
  int world_size() const override { return groups_.topo.world_size; }
  bool on_device() const override { return true; }
  // attach (rank 0's host state on every rank) and attach_fresh (the initial weights, zero moments) only note
  // how group g's host state is made resident: the loop then builds the device model without
  // device_parts_held() and calls attach_device, which does it group by group (attach: read_group(g) on rank 0,
  // then broadcast; attach_fresh: init_group(g); either must stay callable until then), uploads the model's
  // parts and this rank's shards and frees the group's host buffers. No host copy of the state remains
  // afterwards: a fresh run holds one group's weights on the host at most, a run from a full checkpoint or
  // init_from one group's weights and moments (the summary's zero.host_startup_bytes and
  // zero.host_state_bytes: the host bytes of model state at most during the upload and after it).
  void attach(train::Model<float>& model, train::AdamW<float>& opt,
              const std::function<void(int)>& read_group) override;
  void attach_fresh(train::Model<float>& model, train::AdamW<float>& opt,
                    const std::function<void(int)>& init_group) override;
  unsigned device_parts_held() const override;
  void attach_device(train::TransformerCuda& gpu) override;
  bool partitions_state() const override { return opt_.zero.stage > 0; }
  double state_bytes_per_parameter() const override { return 0.0; }  // on the host: none (see attach)
  void begin_step() override;
  Totals finish_gradients(double local_loss, bool stop_requested) override;
  void optimizer_step(double lr, double grad_scale) override;
  fs::path save_checkpoint(const fs::path& root, std::int64_t step, const nlohmann::json& state, int keep) override;
  void load_checkpoint(const fs::path& dir) override;
  nlohmann::json broadcast(const nlohmann::json& value) override;
  nlohmann::json step_metrics() override;
  nlohmann::json summary() const override;

  const CommGroups& groups() const { return groups_; }
  // The peak over the run of the device bytes of model state a rank holds (see above).
  MemoryBytes memory_per_rank() const;

 private:
  struct State;
  void on_group(int group, train::Model<float>::Pass pass, bool before);
  void lend(int group);  // points the model at the engine's buffers of the group (stages 2-3)
  std::vector<float*> grads_of(const std::vector<int>& groups);
  void start_gather(int group, train::Model<float>::Pass pass);
  // Stage 3: the group's weights into w16 (bf16, what the model reads); stages 2-3: the groups' gradients
  // reduced into their shards. Device work and collectives on `stream` (null: the compute stream).
  void gather_weights(int group, train::Model<float>::Pass pass, kernels::bf16* w16, CUstream_st* stream);
  void reduce_bucket(const std::vector<int>& groups, const std::vector<float*>& grads, CUstream_st* stream);
  void reduce_all_groups();
  void gather_updated_shards();  // stages 1-2 after AdamW
  ShardManifest manifest() const;
  MemoryBytes memory_now() const;
  double host_state_bytes() const;  // the model's and the optimizer's host buffers allocated now
  CommGroups groups_;
  std::unique_ptr<comm::Communicator> host_;
  EngineOptions opt_;
  std::unique_ptr<State> s_;
};

}  // namespace core::zero
