// Autoregressive sampling from a checkpoint (see sample.hpp): the prompt goes through the model once,
// then each drawn token is appended to a key/value cache (KvDecoder), and the next token is drawn
// from softmax(logits / temperature) restricted to the top-k logits.
#include "train/sample.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "text/tokenizer.hpp"
#include "text/unicode.hpp"
#include "train/checkpoint.hpp"
#include "train/kv_decoder.hpp"
#include "train/params.hpp"

namespace core::train {

namespace {

fs::path resolve_checkpoint(const std::string& spec) {
  if (spec.empty()) throw UsageError("checkpoint: give a run directory or a checkpoint folder (--checkpoint DIR)");
  const fs::path p(spec);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw InputMissingError("checkpoint: '" + spec + "' " + (ec ? "cannot be reached: " + ec.message() : "does not exist"));
  if (fs::exists(p / "DONE")) return p;
  if (auto c = latest_checkpoint(p / "checkpoints")) return *c;
  if (auto c = latest_checkpoint(p)) return *c;
  throw InputMissingError("checkpoint: no complete checkpoint (folder with DONE) in '" + spec + "'");
}

ModelConfig config_from_state(const nlohmann::json& s, const fs::path& dir) {
  try {
    const auto& m = s.at("model");
    ModelConfig c;
    c.arch = m.at("arch").get<std::string>();
    c.n_layer = m.at("n_layer");
    c.n_head = m.at("n_head");
    c.n_embd = m.at("n_embd");
    c.n_positions = m.at("n_positions");
    c.vocab_size = m.at("vocab_size");
    c.vocab_pad_to = m.at("vocab_pad_to");
    c.type_vocab_size = m.at("type_vocab_size");
    c.num_labels = m.at("num_labels");
    c.layer_norm_eps = m.at("layer_norm_eps");
    c.validate();
    return c;
  } catch (const std::exception& e) {
    throw DataError((dir / "state.json").string() + ": bad model description: " + e.what());
  }
}

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
  const fs::path dir = resolve_checkpoint(o.checkpoint);
  const nlohmann::json state = read_checkpoint_state(dir);
  const ModelConfig cfg = config_from_state(state, dir);
  if (cfg.architecture() != Arch::gpt)
    throw UsageError("sample: checkpoint " + dir.string() + " holds a " + cfg.arch + " model; generation needs a GPT");
  const ParamLayout layout(cfg);
  FlatBuffers<float> params(layout);
  load_weights(dir / "model.safetensors", params);
  const std::string recorded = state.value("tokenizer", std::string("bytes"));
  const std::string spec = o.tokenizer.empty() ? recorded : o.tokenizer;
  if (spec.substr(0, spec.find(':')) != recorded.substr(0, recorded.find(':')))
    throw UsageError("sample: tokenizer " + spec + " is not of the kind of the checkpoint's (" + recorded + ")");
  std::unique_ptr<core::text::Tokenizer> tok;
  try {
    tok = core::text::make_tokenizer(spec);
  } catch (const InputMissingError& e) {
    throw InputMissingError(std::string(e.what()) + (o.tokenizer.empty() ? " (the tokenizer " + dir.string() +
                                                     "/state.json records; if its folder moved, pass tokenizer=gpt2:DIR)"
                                                                        : ""));
  }
  if (tok->vocab_size() > cfg.vocab_size)
    throw UsageError("sample: tokenizer " + spec + " has " + std::to_string(tok->vocab_size()) +
                     " tokens, more than the model's vocabulary (" + std::to_string(cfg.vocab_size) + ")");
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
  return {{"prompt", valid_utf8(o.prompt)}, {"text", valid_utf8(tok->decode(gen))}, {"tokens", gen.size()}, {"checkpoint", dir.string()}};
}

}  // namespace core::train
