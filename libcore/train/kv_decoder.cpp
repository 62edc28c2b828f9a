// KvDecoder (kv_decoder.hpp): embeddings at the appended positions, the blocks over the new rows with
// their keys and values stored in the cache, then the final LayerNorm and the tied LM head on the last row.
#include "train/kv_decoder.hpp"

#include <algorithm>
#include <string>

#include "common/errors.hpp"
#include "train/layers.hpp"

namespace core::train {

KvDecoder::KvDecoder(const FlatBuffers<float>& params) : params_(params) {
  const ModelConfig& c = config();
  if (c.architecture() != Arch::gpt) throw UsageError("KvDecoder: decoding needs a GPT, got model.arch = " + c.arch);
  const std::size_t cache = std::size_t(c.n_layer) * c.n_positions * c.n_embd;
  keys_.resize(cache);
  values_.resize(cache);
  logits_.resize(static_cast<std::size_t>(c.vocab_size));
}

float* KvDecoder::cache_row(std::vector<float>& cache, int l, int p) {
  return cache.data() + (std::size_t(l) * capacity() + p) * config().n_embd;
}

std::span<const float> KvDecoder::append(std::span<const std::int32_t> tokens) {
  const ModelConfig& c = config();
  const int M = static_cast<int>(tokens.size()), p0 = length_, C = c.n_embd, NH = c.n_head;
  if (M == 0 || p0 + M > capacity())
    throw UsageError("KvDecoder: cannot append " + std::to_string(M) + " tokens to " + std::to_string(p0) +
                     " (model.n_positions = " + std::to_string(capacity()) + ")");
  for (const std::int32_t id : tokens)
    if (id < 0 || id >= c.vocab_size)
      throw DataError("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                      std::to_string(c.vocab_size) + ")");
  const std::size_t MC = std::size_t(M) * C;
  x_.resize(MC), ln_.resize(MC), att_.resize(MC), xmid_.resize(MC), mean_.resize(M), rstd_.resize(M);
  qkv_.resize(3 * MC), fc_.resize(4 * MC), fc_gelu_.resize(4 * MC);
  scores_.resize(std::size_t(NH) * M * (p0 + M));
  const float eps = static_cast<float>(c.layer_norm_eps);

  // Positions p0.. read rows p0.. of the position table.
  embedding_forward<float>(x_.data(), tokens.data(), nullptr, params_.embed(kWte),
                           params_.embed(kWpe) + std::size_t(p0) * C, nullptr, 1, M, C);
  for (int l = 0; l < c.n_layer; ++l) {
    const auto P = [&](BlockTensor t) { return params_.block(l, t); };
    layernorm_forward<float>(ln_.data(), mean_.data(), rstd_.data(), x_.data(), P(kLn1W), P(kLn1B), M, C, eps);
    linear_forward<float>(qkv_.data(), ln_.data(), P(kQkvW), P(kQkvB), M, C, 3 * C);
    for (int i = 0; i < M; ++i) {
      const float* row = qkv_.data() + std::size_t(i) * 3 * C;
      std::copy_n(row + C, C, cache_row(keys_, l, p0 + i));
      std::copy_n(row + 2 * C, C, cache_row(values_, l, p0 + i));
    }
    attention_decode<float>(att_.data(), scores_.data(), qkv_.data(), 3 * C, cache_row(keys_, l, 0),
                            cache_row(values_, l, 0), M, p0, C, NH);
    linear_forward<float>(xmid_.data(), att_.data(), P(kAttnProjW), P(kAttnProjB), M, C, C);
    add_inplace<float>(xmid_.data(), x_.data(), std::int64_t(MC));
    layernorm_forward<float>(ln_.data(), mean_.data(), rstd_.data(), xmid_.data(), P(kLn2W), P(kLn2B), M, C, eps);
    linear_forward<float>(fc_.data(), ln_.data(), P(kFcW), P(kFcB), M, C, 4 * C);
    gelu_forward<float>(fc_gelu_.data(), fc_.data(), std::int64_t(4 * MC));
    linear_forward<float>(x_.data(), fc_gelu_.data(), P(kFcProjW), P(kFcProjB), M, 4 * C, C);
    add_inplace<float>(x_.data(), xmid_.data(), std::int64_t(MC));
  }
  layernorm_forward<float>(ln_.data(), mean_.data(), rstd_.data(), x_.data() + std::size_t(M - 1) * C,
                           params_.embed(kLnfW), params_.embed(kLnfB), 1, C, eps);
  linear_forward<float>(logits_.data(), ln_.data(), params_.embed(kWte), nullptr, 1, C, c.vocab_size);
  length_ += M;
  return logits_;
}

}  // namespace core::train
