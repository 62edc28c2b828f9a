// Builds the flat per-group parameter layout documented in params.hpp and initialises parameters
// (GPT-2 scheme: N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), zero biases, unit gains).
#include "train/params.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::train {

namespace {

struct GroupBuilder {
  ParamGroup g;
  void add(const std::string& name, std::vector<std::int64_t> shape, bool decay) {
    TensorView v;
    v.name = name;
    v.offset = g.size;
    v.shape = std::move(shape);
    v.numel = 1;
    for (auto d : v.shape) v.numel *= static_cast<std::size_t>(d);
    v.decay = decay;
    g.size += (v.numel + kAlign - 1) / kAlign * kAlign;
    g.tensors.push_back(std::move(v));
  }
};

}  // namespace

ParamLayout::ParamLayout(const ModelConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  const std::int64_t C = cfg.n_embd, Vp = cfg.padded_vocab();
  GroupBuilder e;
  e.g.name = "embed";
  e.add("wte.weight", {Vp, C}, true);
  e.add("wpe.weight", {cfg.n_positions, C}, true);
  e.add("ln_f.weight", {C}, false);
  e.add("ln_f.bias", {C}, false);
  if (cfg.architecture() == Arch::bert) {
    e.add("wse.weight", {cfg.type_vocab_size, C}, true);
    e.add("mlm.dense.weight", {C, C}, true);
    e.add("mlm.dense.bias", {C}, false);
    e.add("mlm.ln.weight", {C}, false);
    e.add("mlm.ln.bias", {C}, false);
    e.add("mlm.bias", {Vp}, false);
    e.add("pooler.weight", {C, C}, true);
    e.add("pooler.bias", {C}, false);
    e.add("classifier.weight", {cfg.num_labels, C}, true);
    e.add("classifier.bias", {cfg.num_labels}, false);
  }
  groups_.push_back(std::move(e.g));
  for (int l = 0; l < cfg.n_layer; ++l) {
    GroupBuilder b;
    const std::string p = "h." + std::to_string(l) + ".";
    b.g.name = "h." + std::to_string(l);
    b.add(p + "ln_1.weight", {C}, false);
    b.add(p + "ln_1.bias", {C}, false);
    b.add(p + "attn.c_attn.weight", {3 * C, C}, true);
    b.add(p + "attn.c_attn.bias", {3 * C}, false);
    b.add(p + "attn.c_proj.weight", {C, C}, true);
    b.add(p + "attn.c_proj.bias", {C}, false);
    b.add(p + "ln_2.weight", {C}, false);
    b.add(p + "ln_2.bias", {C}, false);
    b.add(p + "mlp.c_fc.weight", {4 * C, C}, true);
    b.add(p + "mlp.c_fc.bias", {4 * C}, false);
    b.add(p + "mlp.c_proj.weight", {C, 4 * C}, true);
    b.add(p + "mlp.c_proj.bias", {C}, false);
    groups_.push_back(std::move(b.g));
  }
}

std::pair<int, int> ParamLayout::find(const std::string& name) const {
  for (int g = 0; g < num_groups(); ++g)
    for (int t = 0; t < static_cast<int>(groups_[g].tensors.size()); ++t)
      if (groups_[g].tensors[t].name == name) return {g, t};
  throw DataError("no parameter named '" + name + "' in this model");
}

std::size_t ParamLayout::total_elements() const {
  std::size_t n = 0;
  for (const auto& g : groups_) n += g.size;
  return n;
}

std::size_t ParamLayout::parameter_count() const {
  std::size_t n = 0;
  for (const auto& g : groups_)
    for (const auto& t : g.tensors) n += t.numel;
  return n;
}

template <class T>
FlatBuffers<T>::FlatBuffers(const ParamLayout& layout, Allocation allocation)
    : layout_(&layout), bufs_(layout.groups().size()) {
  if (allocation == Allocation::eager)
    for (int g = 0; g < num_groups(); ++g) allocate(g);
}

template <class T>
void FlatBuffers<T>::allocate(int g) {
  if (bufs_[g]) return;
  const std::size_t n = group_size(g);
  T* p = static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t{64}));
  std::memset(static_cast<void*>(p), 0, n * sizeof(T));
  bufs_[g].reset(p);
}

template <class T>
std::size_t FlatBuffers<T>::resident_elements() const {
  std::size_t n = 0;
  for (int g = 0; g < num_groups(); ++g)
    if (bufs_[g]) n += group_size(g);
  return n;
}

template <class T>
void FlatBuffers<T>::zero() {
  for (int g = 0; g < num_groups(); ++g)
    if (bufs_[g]) std::memset(static_cast<void*>(group(g)), 0, group_size(g) * sizeof(T));
}

template <class T>
void init_parameter_group(FlatBuffers<T>& params, int g, std::uint64_t seed) {
  const ParamLayout& layout = params.layout();
  const ModelConfig& cfg = layout.config();
  Rng rng = Rng(seed).split(static_cast<std::uint64_t>(g));
  std::fill_n(params.group(g), params.group_size(g), T(0));
  const auto& tensors = layout.groups()[g].tensors;
  for (int t = 0; t < static_cast<int>(tensors.size()); ++t) {
    const TensorView& v = tensors[t];
    T* p = params.tensor(g, t);
    const bool is_gain = v.name.find("ln") != std::string::npos && v.name.ends_with(".weight");
    if (is_gain) {
      for (std::size_t i = 0; i < v.numel; ++i) p[i] = T(1);
    } else if (v.shape.size() == 2) {
      double std_dev = cfg.init_std;
      if (v.name.ends_with("c_proj.weight")) std_dev /= std::sqrt(2.0 * cfg.n_layer);
      std::size_t n = v.numel;
      if (v.name == "wte.weight") n = static_cast<std::size_t>(cfg.vocab_size) * cfg.n_embd;  // pad rows stay 0
      for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(std_dev * rng.normal());
    }
  }
}

template <class T>
void init_parameters(FlatBuffers<T>& params, std::uint64_t seed) {
  for (int g = 0; g < params.num_groups(); ++g) init_parameter_group(params, g, seed);
}

template class FlatBuffers<float>;
template class FlatBuffers<double>;
template void init_parameters(FlatBuffers<float>&, std::uint64_t);
template void init_parameters(FlatBuffers<double>&, std::uint64_t);
template void init_parameter_group(FlatBuffers<float>&, int, std::uint64_t);
template void init_parameter_group(FlatBuffers<double>&, int, std::uint64_t);

}  // namespace core::train
