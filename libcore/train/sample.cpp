// Autoregressive sampling from a checkpoint (see sample.hpp): the prompt goes through the model once,
// then each drawn token is appended to a key/value cache (KvDecoder), and the next token is drawn
// from softmax(logits / temperature) restricted to the top-k logits.
#include "train/sample.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "common/errors.hpp"
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

nlohmann::json generate(const SampleOptions& o) {
  const ModelSource model = find_model(o.checkpoint);
  const ModelConfig& cfg = model.config;
  if (cfg.architecture() != Arch::gpt)
    throw UsageError("sample: checkpoint " + model.path.string() + " holds a " + cfg.arch +
                     " model; generation needs a GPT");
  const ParamLayout layout(cfg);
  FlatBuffers<float> params(layout);
  model.load_weights_into(params);
  const std::unique_ptr<core::text::Tokenizer> tok = model.make_tokenizer(o.tokenizer, "sample");
  std::vector<std::int32_t> ids = tok->encode(o.prompt);
  if (ids.empty()) ids.push_back(tok->eot_token().value_or(0));
  const std::size_t n_prompt = ids.size();
  Rng rng(o.seed);
  // Only ids the tokenizer can decode are drawn: model.vocab_size may exceed the tokenizer's
  // vocabulary (rounded up for the GPU kernels, or a [MASK] id), and those logits are never targets.
  const int vocab = std::min<int>(cfg.vocab_size, tok->vocab_size());
  std::vector<std::pair<float, int>> cand(static_cast<std::size_t>(vocab));
  KvDecoder decoder(params);
  const std::size_t capacity = static_cast<std::size_t>(decoder.capacity());
  std::span<const float> logits = decoder.append(std::span(ids).last(std::min(ids.size(), capacity)));
  for (int i = 0; i < o.max_new_tokens; ++i) {
    for (int v = 0; v < vocab; ++v) cand[v] = {logits[v], v};
    const int k = (o.top_k > 0 && o.top_k < vocab) ? o.top_k : vocab;
    std::partial_sort(cand.begin(), cand.begin() + k, cand.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    int next = cand[0].second;
    if (o.temperature > 0) {
      std::vector<double> p(k);
      for (int j = 0; j < k; ++j) p[j] = std::exp((cand[j].first - cand[0].first) / o.temperature);
      double u = rng.uniform() * std::accumulate(p.begin(), p.end(), 0.0);
      for (int j = 0; j < k; ++j) {
        next = cand[j].second;
        if ((u -= p[j]) < 0) break;
      }
    }
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
