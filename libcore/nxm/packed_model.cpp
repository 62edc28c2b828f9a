// Batch-1 inference of a packed BERT classifier or GPT language model (see packed_model.hpp).
#include "nxm/packed_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.hpp"
#include "train/gemm.hpp"
#include "train/layers.hpp"
#include "train/transformer_cuda.hpp"

namespace core::nxm {

void PackedTransformer::Linear::forward(const float* x, int N, float* y) const {
  if constexpr (train::kCudaBuild)
    if (device) {
      device->forward(x, N, y);
      return;
    }
  if (packed) {
    packed->forward(x, N, y, bias.data());
    return;
  }
#pragma omp parallel if (std::int64_t(out) * in * N >= (1 << 18))
  {
    int nt = 1, tid = 0;
#ifdef _OPENMP
    nt = omp_get_num_threads();
    tid = omp_get_thread_num();
#endif
    const int units = (out + 15) / 16;  // blocks on multiples of 16 features keep Eigen on full panels
    const int r0 = std::min(out, units * tid / nt * 16), r1 = std::min(out, units * (tid + 1) / nt * 16);
    if (r1 > r0)  // inside the parallel region gemm runs on this thread alone
      train::gemm<float>(false, true, N, r1 - r0, in, 1.0f, x, in, dense.data() + std::size_t(r0) * in, in, 0.0f, y + r0,
                         out, bias.data() + r0);
  }
}

void PackedTransformer::linear_forward(int layer, Component c, const float* x, int N, float* y) const {
  blocks_.at(layer)[static_cast<int>(c)].forward(x, N, y);
}

const std::vector<float>& PackedTransformer::tensor(const std::string& name) const {
  const auto it = dense_.find(name);
  if (it == dense_.end()) throw DataError("packed model lacks tensor " + name);
  return it->second;
}

int PackedTransformer::device_linears() const {
  int n = 0;
  for (const auto& block : blocks_)
    for (const Linear& lin : block) n += lin.device != nullptr;
  return n;
}

PackedTransformer::PackedTransformer(const PackedModel& model, LinearDevice device)
    : config_(model.config), dense_(model.dense) {
  if (device == LinearDevice::cuda && !train::kCudaBuild)
    throw UsageError(
        "PackedTransformer: device linears need a CUDA build (callers check train::require_cuda_device first)");
  const train::ParamLayout layout(config_);
  const auto comps = component_matrices(layout);
  blocks_.resize(config_.n_layer);
  static constexpr train::BlockTensor kBias[] = {train::kQkvB, train::kAttnProjB, train::kFcB, train::kFcProjB};
  for (const auto& c : comps) {
    Linear& lin = blocks_[c.layer][static_cast<int>(c.component)];
    const PackedMatrix& pm = model.matrices.at(c.name);
    lin.in = static_cast<int>(c.cols);
    lin.out = static_cast<int>(c.rows);
    lin.bias = tensor(layout.block(c.layer, kBias[static_cast<int>(c.component)]).name);
    if constexpr (train::kCudaBuild)
      if (device == LinearDevice::cuda && pm.setting.quantized()) {
        lin.device = std::make_shared<CudaPackedLinear>(pm, lin.bias);
        continue;
      }
    if (pm.setting == Setting{0, 0, 32}) lin.dense = pm.unpack();
    else lin.packed = std::make_unique<PackedLinear>(pm);
  }
}

void PackedTransformer::blocks_forward(std::span<const std::int32_t> tokens) {
  const int T = static_cast<int>(tokens.size()), C = config_.n_embd, NH = config_.n_head;
  if (T < 1 || T > config_.n_positions) throw UsageError("classify: sequence length outside [1, n_positions]");
  for (std::int32_t t : tokens)
    if (t < 0 || t >= config_.vocab_size) throw DataError("token id " + std::to_string(t) + " outside the vocabulary");
  const std::size_t TC = std::size_t(T) * C;
  x_.resize(TC);
  ln_.resize(TC);
  qkv_.resize(3 * TC);
  att_.resize(std::size_t(NH) * T * T);
  atty_.resize(TC);
  tmp_.resize(TC);
  fc_.resize(4 * TC);
  fcg_.resize(4 * TC);
  mean_.resize(T);
  rstd_.resize(T);
  const bool bert = config_.architecture() == train::Arch::bert;
  const std::vector<std::int32_t> seg(T, 0);
  train::embedding_forward<float>(x_.data(), tokens.data(), bert ? seg.data() : nullptr, tensor("wte.weight").data(),
                                  tensor("wpe.weight").data(), bert ? tensor("wse.weight").data() : nullptr, 1, T, C);
  const float eps = static_cast<float>(config_.layer_norm_eps);
  for (int l = 0; l < config_.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    auto& lin = blocks_[l];
    train::layernorm_forward<float>(ln_.data(), mean_.data(), rstd_.data(), x_.data(), tensor(h + "ln_1.weight").data(),
                                    tensor(h + "ln_1.bias").data(), T, C, eps);
    lin[0].forward(ln_.data(), T, qkv_.data());
    train::attention_forward<float>(atty_.data(), att_.data(), qkv_.data(), nullptr, !bert, 1, T, C, NH);
    lin[1].forward(atty_.data(), T, tmp_.data());
    train::add_inplace<float>(x_.data(), tmp_.data(), TC);
    train::layernorm_forward<float>(ln_.data(), mean_.data(), rstd_.data(), x_.data(), tensor(h + "ln_2.weight").data(),
                                    tensor(h + "ln_2.bias").data(), T, C, eps);
    lin[2].forward(ln_.data(), T, fc_.data());
    train::gelu_forward<float>(fcg_.data(), fc_.data(), std::int64_t(4) * TC);
    lin[3].forward(fcg_.data(), T, tmp_.data());
    train::add_inplace<float>(x_.data(), tmp_.data(), TC);
  }
}

std::vector<float> PackedTransformer::classify(std::span<const std::int32_t> tokens) {
  if (config_.architecture() != train::Arch::bert) throw UsageError("classify: the packed model is not a BERT classifier");
  blocks_forward(tokens);
  const int C = config_.n_embd;
  const float eps = static_cast<float>(config_.layer_norm_eps);
  // Only position 0 feeds the classifier: the final LayerNorm, pooler and classifier on that row.
  std::vector<float> cls(C), pre(C), pooled(C), logits(config_.num_labels);
  float m, r;
  train::layernorm_forward<float>(cls.data(), &m, &r, x_.data(), tensor("ln_f.weight").data(), tensor("ln_f.bias").data(),
                                  1, C, eps);
  train::linear_forward<float>(pre.data(), cls.data(), tensor("pooler.weight").data(), tensor("pooler.bias").data(), 1, C, C);
  train::tanh_forward<float>(pooled.data(), pre.data(), C);
  train::linear_forward<float>(logits.data(), pooled.data(), tensor("classifier.weight").data(),
                               tensor("classifier.bias").data(), 1, C, config_.num_labels);
  return logits;
}

std::vector<float> PackedTransformer::lm_logits(std::span<const std::int32_t> tokens) {
  if (config_.architecture() != train::Arch::gpt) throw UsageError("lm_logits: the packed model is not a GPT");
  blocks_forward(tokens);
  const int T = static_cast<int>(tokens.size()), C = config_.n_embd, V = config_.vocab_size;
  train::layernorm_forward<float>(ln_.data(), mean_.data(), rstd_.data(), x_.data(), tensor("ln_f.weight").data(),
                                  tensor("ln_f.bias").data(), T, C, static_cast<float>(config_.layer_norm_eps));
  std::vector<float> logits(std::size_t(T) * V);
  train::linear_forward<float>(logits.data(), ln_.data(), tensor("wte.weight").data(), nullptr, T, C, V);  // tied
  return logits;
}

std::vector<float> PackedTransformer::run(std::span<const std::int32_t> tokens) {
  return config_.architecture() == train::Arch::gpt ? lm_logits(tokens) : classify(tokens);
}

double packed_lm_loss(PackedTransformer& model, const std::vector<std::int32_t>& windows, int seq_len) {
  const std::size_t W = std::size_t(seq_len) + 1, count = windows.size() / W;
  const int V = model.config().vocab_size;
  double sum = 0;
  for (std::size_t w = 0; w < count; ++w) {
    const std::int32_t* win = windows.data() + w * W;
    const auto z = model.lm_logits(std::span(win, seq_len));
    for (int t = 0; t < seq_len; ++t) {  // -log softmax(z_t)[target], in double
      const float* row = z.data() + std::size_t(t) * V;
      const double m = *std::max_element(row, row + V);
      double s = 0;
      for (int v = 0; v < V; ++v) s += std::exp(double(row[v]) - m);
      sum += m + std::log(s) - double(row[win[t + 1]]);
    }
  }
  return count ? sum / (double(count) * seq_len) : 0.0;
}

std::vector<std::span<const std::int32_t>> sequences_of(const EncodedSet& set) {
  std::vector<std::span<const std::int32_t>> s;
  for (int i = 0; i < set.size(); ++i) s.emplace_back(set.tokens.data() + std::size_t(i) * set.T, set.lengths[i]);
  return s;
}

double packed_accuracy(PackedTransformer& model, const EncodedSet& set) {
  int right = 0;
  for (int i = 0; i < set.size(); ++i) {
    const auto z = model.classify(std::span(set.tokens.data() + std::size_t(i) * set.T, set.lengths[i]));
    right += static_cast<int>(std::max_element(z.begin(), z.end()) - z.begin()) == set.labels[i];
  }
  return set.size() ? double(right) / set.size() : 0.0;
}

std::vector<Latency> packed_latency(const std::vector<PackedTransformer*>& models,
                                    const std::vector<std::span<const std::int32_t>>& sequences, int count, int repeats) {
  count = std::min(count, static_cast<int>(sequences.size()));
  std::vector<std::vector<double>> times(models.size());
  for (int rep = 0; rep <= repeats; ++rep)
    for (int i = 0; i < count; ++i)
      for (std::size_t m = 0; m < models.size(); ++m) {
        const auto t0 = std::chrono::steady_clock::now();
        models[m]->run(sequences[i]);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (rep > 0) times[m].push_back(s);  // pass 0 warms the caches
      }
  std::vector<Latency> out(models.size());
  for (std::size_t m = 0; m < models.size(); ++m) {
    auto& t = times[m];
    if (t.empty()) continue;
    double sum = 0;
    for (double x : t) sum += x;
    out[m].mean_s = sum / t.size();
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    out[m].median_s = t[t.size() / 2];
  }
  return out;
}

}  // namespace core::nxm
