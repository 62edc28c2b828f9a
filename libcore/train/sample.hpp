// Text generation from a trained checkpoint: autoregressive sampling with temperature, top-k and
// top-p (top_k = 0, top_p = 1: the full distribution; temperature = 0: greedy), seeded so runs repeat exactly. Each
// token costs one pass of one row through the model (a key/value cache, kv_decoder.hpp). The context
// is at most model.n_positions tokens (the prompt's last ones); when generation fills it, it goes on
// from the newer half of it (one forward of n_positions / 2 tokens, then one row per token again).
#pragma once
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/rng.hpp"

namespace core::train {

struct SampleOptions {
  std::string checkpoint;  // run directory, checkpoint folder, llm.c .bin or HF .safetensors (model_source.hpp)
  std::string prompt = "\n";
  int max_new_tokens = 200;
  double temperature = 1.0;
  int top_k = 40;
  double top_p = 1.0;
  std::uint64_t seed = 1337;
  std::string tokenizer;  // empty: the checkpoint's; else a spec of the same kind (its folder moved)

  template <class V>
  void visit(V& v) {
    v("checkpoint", checkpoint, "run directory, checkpoints/step_N folder, llm.c .bin, or HF .safetensors + config.json");
    v("prompt", prompt, "text to continue");
    v("max_new_tokens", max_new_tokens, "tokens to generate", core::positive<int>());
    v("temperature", temperature, "softmax temperature (0: greedy)", core::Check<double>([](const double& t) {
        return t >= 0 && std::isfinite(t) ? std::string() : std::string("must be finite and >= 0");
      }));
    v("top_k", top_k, "sample among the k likeliest tokens (0: all)", core::at_least(0));
    v("top_p", top_p, "then among the fewest likeliest tokens whose probabilities sum to top_p (1: all k)",
      core::Check<double>([](const double& p) {
        return p > 0 && p <= 1 ? std::string() : std::string("must be in (0, 1]");
      }));
    v("seed", seed, "sampling seed");
    v("tokenizer", tokenizer, "tokenizer instead of the checkpoint's, e.g. gpt2:DIR when its folder moved or for llm.c / HF weights (empty: the checkpoint's)");
  }
};

// Draws next tokens from logits (ids 0..vocab-1): the top_k likeliest (0: all), of those the fewest
// likeliest whose probabilities (softmax of logits / temperature over the top_k) sum to at least
// top_p (nucleus sampling, Holtzman et al. 2020), then one of them in proportion to its
// probability. temperature 0: the likeliest, the lowest id among equals. Deterministic in seed.
class TokenSampler {
 public:
  TokenSampler(int vocab, double temperature, int top_k, double top_p, std::uint64_t seed);
  int draw(std::span<const float> logits);

 private:
  double temperature_, top_p_;
  int k_;
  Rng rng_;
  std::vector<std::pair<float, int>> cand_;
  std::vector<double> p_;
};

// Returns {"text", "prompt", "tokens", "checkpoint"}. Throws UsageError (no checkpoint given),
// InputMissingError (none found), DataError (unreadable checkpoint).
nlohmann::json generate(const SampleOptions& options);

}  // namespace core::train
