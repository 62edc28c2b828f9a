// Autoregressive sampling from a checkpoint (see sample.hpp): the prompt goes through the model once,
// then each drawn token is appended to a key/value cache (KvDecoder), and the next token is drawn
// from softmax(logits / temperature) restricted to the top-k logits.
#include "train/sample.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include <spdlog/fmt/fmt.h>

#include "common/errors.hpp"
#include "common/memory.hpp"
#include "common/rng.hpp"
#include "text/tokenizer.hpp"
#include "text/unicode.hpp"
#include "train/kv_decoder.hpp"
#include "train/model_source.hpp"
#include "train/params.hpp"

namespace core::train {

namespace {

// The text with every byte that is not part of well-formed UTF-8 replaced by U+FFFD (a byte-level
// model can emit any byte, a prompt from the command line may hold any; the JSON result must be valid UTF-8).
std::string valid_utf8(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto u = core::text::decode_utf8(s, i);
    if (u.valid) out.append(s, i, u.len);
    else core::text::append_utf8(out, 0xFFFD);
    i += u.len;
  }
  return out;
}

}  // namespace

TokenSampler::TokenSampler(int vocab, double temperature, int top_k, double top_p, std::uint64_t seed)
    : temperature_(temperature), top_p_(top_p), k_(top_k > 0 && top_k < vocab ? top_k : vocab), rng_(seed),
      cand_(static_cast<std::size_t>(vocab)), p_(static_cast<std::size_t>(k_)) {}

int TokenSampler::draw(std::span<const float> logits) {
  for (std::size_t v = 0; v < cand_.size(); ++v) cand_[v] = {logits[v], static_cast<int>(v)};
  std::partial_sort(cand_.begin(), cand_.begin() + k_, cand_.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  if (temperature_ == 0) return cand_[0].second;
  for (int j = 0; j < k_; ++j) p_[j] = std::exp((cand_[j].first - cand_[0].first) / temperature_);
  const double total = std::accumulate(p_.begin(), p_.end(), 0.0);
  // The nucleus: candidates 0..n-1, the fewest whose mass reaches top_p of the total.
  int n = k_;
  if (top_p_ < 1) {
    n = 0;
    for (double mass = 0; n < k_ && (n == 0 || mass < top_p_ * total); ++n) mass += p_[n];
  }
  double u = rng_.uniform() * (n == k_ ? total : std::accumulate(p_.begin(), p_.begin() + n, 0.0));
  for (int j = 0; j < n; ++j)
    if ((u -= p_[j]) < 0) return cand_[j].second;
  return cand_[n - 1].second;
}

// Weights and the key/value cache (keys and values of every layer over the whole context) must fit, checked
// before either is allocated (eval's check does the same for its batches).
static void check_sample_memory(const ModelConfig& c) {
  const std::uint64_t avail = available_memory_bytes();
  const double weights = double(c.parameter_count()) * sizeof(float);
  const double cache = 2.0 * c.n_layer * double(c.n_positions) * c.n_embd * sizeof(float);
  if (avail == 0 || weights + cache <= double(avail)) return;
  const double gib = 1024.0 * 1024.0 * 1024.0;
  throw UsageError(fmt::format("sample needs about {:.1f} GiB of host memory (weights {:.1f} GiB, key/value cache "
                               "{:.1f} GiB) but {:.1f} GiB are available",
                               (weights + cache) / gib, weights / gib, cache / gib, double(avail) / gib));
}

nlohmann::json generate(const SampleOptions& o) {
  const ModelSource model = find_model(o.checkpoint);
  const ModelConfig& cfg = model.config;
  if (cfg.architecture() != Arch::gpt)
    throw UsageError("sample: checkpoint " + model.path.string() + " holds a " + cfg.arch +
                     " model; generation needs a GPT");
  check_sample_memory(cfg);
  const ParamLayout layout(cfg);
  FlatBuffers<float> params(layout);
  model.load_weights_into(params);
  const std::unique_ptr<core::text::Tokenizer> tok = model.make_tokenizer(o.tokenizer, "sample");
  std::vector<std::int32_t> ids = tok->encode(o.prompt);
  if (ids.empty()) ids.push_back(tok->eot_token().value_or(0));
  const std::size_t n_prompt = ids.size();
  // Only ids the tokenizer can decode are drawn: model.vocab_size may exceed the tokenizer's
  // vocabulary (rounded up for the GPU kernels, or a [MASK] id), and those logits are never targets.
  TokenSampler sampler(std::min<int>(cfg.vocab_size, tok->vocab_size()), o.temperature, o.top_k, o.top_p, o.seed);
  KvDecoder decoder(params);
  const std::size_t capacity = static_cast<std::size_t>(decoder.capacity());
  std::span<const float> logits = decoder.append(std::span(ids).last(std::min(ids.size(), capacity)));
  for (int i = 0; i < o.max_new_tokens; ++i) {
    const int next = sampler.draw(logits);
    ids.push_back(next);
    if (i + 1 == o.max_new_tokens) break;
    if (decoder.length() < decoder.capacity()) {
      logits = decoder.append(std::span(ids).last(1));
    } else {  // the position table is used up: go on from the newer half of the context
      decoder.clear();
      logits = decoder.append(std::span(ids).last(std::max<std::size_t>(1, capacity / 2)));
    }
  }
  const std::vector<std::int32_t> gen(ids.begin() + static_cast<std::ptrdiff_t>(n_prompt), ids.end());
  return {{"prompt", valid_utf8(o.prompt)}, {"text", valid_utf8(tok->decode(gen))}, {"tokens", gen.size()}, {"checkpoint", model.path.string()}};
}

}  // namespace core::train
