// What the training loop (trainer.hpp) asks of a data-parallel engine when a run has several ranks;
// libcore/zero implements it (ZeRO stages 0-3 and ZeRO++). The loop stays the one-rank loop: each
// rank trains on its own micro batches, the engine takes over the model's and the optimizer's state
// after init or resume, reduces the gradients (part of it inside the model's group hooks, see
// Model::set_group_hook), applies the optimizer to what it owns, and hands the full state back for
// rank 0's checkpoint. Every method is collective: all ranks call it in the same order.
#pragma once
#include <nlohmann/json.hpp>

#include "train/model.hpp"
#include "train/optimizer.hpp"

namespace core::train {

class DataParallel {
 public:
  virtual ~DataParallel() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Rank 0's weights and AdamW state (after init or resume) become every rank's; the engine keeps
  // its part and installs its hooks on the model.
  virtual void attach(Model<float>& model, AdamW<float>& opt) = 0;
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
  // Fills the model's weights and the optimizer's moments and step count with the full state on
  // every rank (for a checkpoint).
  virtual void gather_state() = 0;
  // Rank 0's value on every rank.
  virtual nlohmann::json broadcast(const nlohmann::json& value) = 0;
  // Fields of the step's metrics record (bytes sent, averaged over ranks) and of the run's summary.
  virtual nlohmann::json step_metrics() = 0;
  virtual nlohmann::json summary() const = 0;
};

}  // namespace core::train
