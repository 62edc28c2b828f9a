// KvDecoder: the next-token logits of incremental decoding with a key/value cache equal those of the
// host model's full forward (Model<float>, the reference) at every position, whether tokens are
// appended one at a time or several at once, and after clear(); misuse is refused.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"
#include "train/kv_decoder.hpp"
#include "train/model.hpp"
#include "tiny_config.hpp"

using namespace core::train;

namespace {

ModelConfig tiny_gpt() {
  ModelConfig c = core::test::tiny_config("gpt", 16, 12, 23);
  c.vocab_pad_to = 1;
  c.init_std = 0.3;
  return c;
}

// The full forward's logits after each position of `tokens`: [T, vocab].
std::vector<float> full_forward_logits(Model<float>& model, const std::vector<std::int32_t>& tokens) {
  Batch b;
  b.B = 1;
  b.T = static_cast<int>(tokens.size());
  b.tokens = tokens.data();
  model.forward(b, Task::lm);
  const std::size_t n = tokens.size() * model.config().vocab_size;
  return std::vector<float>(model.logits(), model.logits() + n);
}

void check_row(std::span<const float> got, const std::vector<float>& all, int position, int vocab) {
  CAPTURE(position);
  double worst = 0;
  for (int v = 0; v < vocab; ++v) {
    const double want = all[std::size_t(position) * vocab + v];
    worst = std::max(worst, std::abs(got[v] - want) / (1.0 + std::abs(want)));
  }
  CHECK(worst <= 1e-5);
}

}  // namespace

TEST_CASE("KV-cache decoding gives the full forward's logits at every position") {
  const ModelConfig cfg = tiny_gpt();
  Model<float> model(cfg);
  init_parameters(model.params(), 5);
  core::Rng rng(9);
  std::vector<std::int32_t> tokens(cfg.n_positions);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(cfg.vocab_size));
  const std::vector<float> want = full_forward_logits(model, tokens);
  const int V = cfg.vocab_size;

  KvDecoder decoder(model.params());
  for (int p = 0; p < cfg.n_positions; ++p) {
    check_row(decoder.append(std::span(tokens).subspan(p, 1)), want, p, V);
    CHECK(decoder.length() == p + 1);
  }
  // A prompt of five at once, then the rest in two appends.
  decoder.clear();
  check_row(decoder.append(std::span(tokens).first(5)), want, 4, V);
  check_row(decoder.append(std::span(tokens).subspan(5, 1)), want, 5, V);
  check_row(decoder.append(std::span(tokens).subspan(6)), want, cfg.n_positions - 1, V);
}

TEST_CASE("KV-cache decoding refuses appends past n_positions, empty appends, bad ids and a BERT") {
  const ModelConfig cfg = tiny_gpt();
  Model<float> model(cfg);
  init_parameters(model.params(), 5);
  KvDecoder decoder(model.params());
  const std::vector<std::int32_t> full(cfg.n_positions, 1);
  decoder.append(full);
  CHECK_THROWS_WITH_AS(decoder.append(std::vector<std::int32_t>{1}), doctest::Contains("n_positions = 12"),
                       core::UsageError);
  decoder.clear();
  CHECK_THROWS_AS(decoder.append(std::vector<std::int32_t>{}), core::UsageError);
  CHECK_THROWS_AS(decoder.append(std::vector<std::int32_t>{cfg.vocab_size}), core::DataError);
  ModelConfig bert = tiny_gpt();
  bert.arch = "bert";
  Model<float> encoder(bert);
  CHECK_THROWS_AS(KvDecoder{encoder.params()}, core::UsageError);
}
