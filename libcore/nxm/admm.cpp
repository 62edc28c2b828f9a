// ADMM variables and fixed masks (see admm.hpp).
#include "nxm/admm.hpp"

#include "nxm/sparsity.hpp"

namespace core::nxm {

void AdmmRoundStats::add(const AdmmRoundStats& o) {
  primal_sq += o.primal_sq;
  dual_sq += o.dual_sq;
  weight_sq += o.weight_sq;
  flips += o.flips;
  positions += o.positions;
}

AdmmMatrix::AdmmMatrix(std::string name, std::int64_t rows, std::int64_t cols, Setting setting, bool quantize)
    : name_(std::move(name)), rows_(rows), cols_(cols), setting_(setting), quantize_(quantize) {
  check_nm_shape(cols, setting, name_);
}

void AdmmMatrix::project(float* x) const {
  nm_project(x, rows_, cols_, setting_, name_);
  if (quantize_) fake_quantize(x, rows_, cols_, setting_.bits);
}

void AdmmMatrix::init(const float* w) {
  z_.assign(w, w + rows_ * cols_);
  project(z_.data());
  u_.assign(z_.size(), 0.0f);
}

void AdmmMatrix::add_proximal_gradient(const float* w, double rho, float* grad) const {
  const float r = static_cast<float>(rho);
  for (std::size_t i = 0; i < z_.size(); ++i) grad[i] += r * (w[i] - z_[i] + u_[i]);
}

AdmmRoundStats AdmmMatrix::update(const float* w) {
  AdmmRoundStats s;
  std::vector<float> z(z_.size());
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = w[i] + u_[i];
  project(z.data());
  for (std::size_t i = 0; i < z.size(); ++i) {
    u_[i] += w[i] - z[i];
    const double p = double(w[i]) - z[i], d = double(z[i]) - z_[i];
    s.primal_sq += p * p;
    s.dual_sq += d * d;
    s.weight_sq += double(w[i]) * w[i];
    s.flips += (z[i] != 0.0f) != (z_[i] != 0.0f);
  }
  s.positions = static_cast<std::int64_t>(z.size());
  z_ = std::move(z);
  return s;
}

void AdmmMatrix::rescale_dual(double factor) {
  const float f = static_cast<float>(factor);
  for (float& x : u_) x *= f;
}

void MaskSet::apply(train::FlatBuffers<float>& buffers) const {
  for (const auto& e : entries_) {
    float* x = buffers.tensor(e.group, e.tensor);
    for (std::size_t i = 0; i < e.mask.size(); ++i)
      if (!e.mask[i]) x[i] = 0.0f;
  }
}

void MaskSet::apply_to_optimizer(train::AdamW<float>& opt) const {
  apply(opt.m());
  apply(opt.v());
}

}  // namespace core::nxm
