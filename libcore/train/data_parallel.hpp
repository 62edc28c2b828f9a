// What the training loop (trainer.hpp) asks of a data-parallel engine when a run has several ranks;
// libcore/zero implements it (ZeRO stages 0-3 and ZeRO++). The loop stays the one-rank loop: each
// rank trains on its own micro batches, the engine takes over the model's and the optimizer's state
// after init or resume (and may release the buffers of groups other ranks own: FlatBuffers::release),
// reduces the gradients (part of it inside the model's group hooks, see Model::set_group_hook),
// applies the optimizer to what it owns, and writes and reads sharded checkpoints (each rank its
// part). Every method is collective: all ranks call it in the same order.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>

#include "common/errors.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"

namespace core::train {

class TransformerCuda;

// The key of state.json under which a sharded checkpoint keeps its manifest.
inline constexpr const char* kShardManifestKey = "shards";

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Rank 0's weights and AdamW state (the initial weights, a full checkpoint's state, init_from's weights)
  // become every rank's, one group at a time: the engine makes group g of the weights and moments resident
  // (allocating what Allocation::deferred left out), `read_group(g)` fills rank 0's (it is called on rank 0
  // only, whose step count the AdamW state must already hold), and rank 0's values are broadcast; the
  // engine keeps its part and installs its hooks on the model. With deferred buffers no rank ever holds the
  // whole model, rank 0 included.
  virtual void attach(Model<float>& model, AdamW<float>& opt, const std::function<void(int)>& read_group) = 0;
  // A fresh run's state built group by group on every rank without any rank ever holding all of it
  // (DeepSpeed's zero.Init): `model` and `opt` come with Allocation::deferred; the engine allocates
  // one group at a time, `init_group(g)` fills the model's weights of group g with the run's initial
  // values (the same on every rank), the engine keeps what its stage keeps, and the AdamW moments
  // start at zero. Afterwards as attach().
  virtual void attach_fresh(Model<float>& model, AdamW<float>& opt, const std::function<void(int)>& init_group) = 0;
  // Whether some state is partitioned (ZeRO stage >= 1), so that attach_fresh saves memory, and the
  // bytes of weights, gradients and moments a rank then keeps per parameter (16 unpartitioned).
  virtual bool partitions_state() const = 0;
  virtual double state_bytes_per_parameter() const = 0;
  // device=cuda: whether the engine keeps its state on the device and drives a TransformerCuda. The loop then
  // attaches (attach or attach_fresh, deferred, at any stage), builds the device model without the parts the
  // engine holds (device_parts_held: TransformerCuda::GroupPart bits) and calls attach_device, which makes the
  // host state resident group by group (attach's read_group and attach_fresh's init_group are called there),
  // uploads it and frees it; from then on the engine reduces, clips and updates the device buffers, not the
  // host model's.
  virtual bool on_device() const { return false; }
  virtual unsigned device_parts_held() const { return 0; }
  virtual void attach_device(TransformerCuda&) {
    throw Error(ExitCode::internal, "this data-parallel engine keeps its state on the host (device=cpu)");
  }
  // Before the first micro step of an optimizer step.
  virtual void begin_step() = 0;
  struct Totals {
    double loss = 0;       // mean over ranks of their mean micro-step loss
    double grad_norm = 0;  // global norm of the mean gradient
    bool stop = false;     // some rank was asked to stop (all ranks then stop at the next step)
  };
  // After the micro steps: finishes the gradient reduction; one scalar all-reduce gives the totals.
  virtual Totals finish_gradients(double local_loss, bool stop_requested) = 0;
  // AdamW at `lr` on the mean gradient times grad_scale (the clip factor).
  virtual void optimizer_step(double lr, double grad_scale) = 0;
  // Writes the state after `step` optimizer steps as a checkpoint folder under `root` (rank 0's
  // argument counts): each rank its shard, then rank 0 state.json (`state` plus the shard manifest
  // under kShardManifestKey) and the DONE marker; older complete checkpoints beyond `keep` (0: none)
  // are removed. Returns the folder.
  virtual std::filesystem::path save_checkpoint(const std::filesystem::path& root, std::int64_t step,
                                                const nlohmann::json& state, int keep) = 0;
  // Restores weights, moments and step count from a sharded checkpoint folder (rank 0's argument
  // counts), whatever number of ranks wrote it.
  virtual void load_checkpoint(const std::filesystem::path& dir) = 0;
  // Rank 0's value on every rank.
  virtual nlohmann::json broadcast(const nlohmann::json& value) = 0;
  // Fields of the step's metrics record (bytes sent, averaged over ranks) and of the run's summary.
  virtual nlohmann::json step_metrics() = 0;
  virtual nlohmann::json summary() const = 0;
};

}  // namespace core::train
