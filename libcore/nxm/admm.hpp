// ADMM for N:M-constrained training (NxMTransformer, eq. 3-6; Boyd et al. 2011, section 5):
//   min f(W) s.t. W in S  ->  W-step: a few optimizer steps on f(W) + rho/2 ||W - Z + U||^2
//                              (gradient rho (W - Z + U) added to f's),
//                              Z-step: Z = Pi_S(W + U),  dual: U = U + W - Z,
// with S the N:M set of a setting (and, for NxMiFormer's joint mode, its quantization grid: Pi then
// Q). rho may grow per round (the scaled dual U rescaled with it). Per round: primal residual ||W - Z||, dual residual rho ||Z - Z_prev||, and the share of mask
// positions that flipped. Also the fixed masks of hard pruning, which keep pruned weights exactly 0
// under AdamW with weight decay: masked gradients and moments (decay of a zero weight is zero).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nxm/plan.hpp"
#include "train/optimizer.hpp"
#include "train/params.hpp"

namespace core::nxm {

struct AdmmRoundStats {
  double primal_sq = 0, dual_sq = 0, weight_sq = 0;  // ||W - Z||^2, ||Z - Z_prev||^2 (before rho), ||W||^2
  std::int64_t flips = 0, positions = 0;             // mask positions that changed in the Z-step
  void add(const AdmmRoundStats& o);
};

// The ADMM variables of one matrix.
class AdmmMatrix {
 public:
  AdmmMatrix(std::string name, std::int64_t rows, std::int64_t cols, Setting setting, bool quantize);
  // Z = Pi(W), U = 0.
  void init(const float* w);
  // grad += rho (W - Z + U)
  void add_proximal_gradient(const float* w, double rho, float* grad) const;
  // Z = Pi(W + U), U += W - Z; returns the residuals of the round.
  AdmmRoundStats update(const float* w);
  // U *= factor: when rho changes to rho', factor = rho / rho' keeps the unscaled dual rho U the same
  // (Boyd et al. 2011, section 3.4.1); without it a growing rho inflates the dual by the growth.
  void rescale_dual(double factor);
  const std::vector<float>& z() const { return z_; }
  const std::vector<float>& u() const { return u_; }
  void project(float* x) const;  // Pi (N:M, then Q when quantize)

 private:
  std::string name_;
  std::int64_t rows_, cols_;
  Setting setting_;
  bool quantize_;
  std::vector<float> z_, u_;
};

// Fixed 0/1 masks of the component matrices after hard pruning.
class MaskSet {
 public:
  struct Entry {
    int group, tensor;
    std::vector<std::uint8_t> mask;
  };
  void add(int group, int tensor, std::vector<std::uint8_t> mask) { entries_.push_back({group, tensor, std::move(mask)}); }
  const std::vector<Entry>& entries() const { return entries_; }
  void apply(train::FlatBuffers<float>& buffers) const;  // zero the masked-out entries
  // Zero the gradients and the AdamW moments of the masked-out entries.
  void apply_to_optimizer(train::AdamW<float>& opt) const;

 private:
  std::vector<Entry> entries_;
};

}  // namespace core::nxm
