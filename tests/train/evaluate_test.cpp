// `zpp-train eval` on the library side, against definitions computed here with Model<float>::forward:
// stride 1 scores each target with its full context (min(i + 1, seq_len) tokens), stride = seq_len
// scores consecutive windows (the last one short), any stride scores every target once, the batch size
// changes nothing; a zero-weight model scores ln V (8 bits per byte on bytes); the same weights read
// from HF safetensors + config.json, an llm.c .bin and a checkpoint folder score alike (a checkpoint's
// recorded seq_len is the default window); sample runs
// from HF weights; BERT's masked windows; bad options and sources are named.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <numbers>
#include <random>

#include "common/errors.hpp"
#include "test_support.hpp"
#include "text/shard.hpp"
#include "tiny_config.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/interop.hpp"
#include "train/model.hpp"
#include "train/sample.hpp"

using namespace core::train;
using core::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr int kContext = 16;

ModelConfig gpt_config() { return core::test::tiny_config("gpt", 16, kContext, 256); }

std::vector<std::int32_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::int32_t> v(n);
  for (auto& x : v) x = static_cast<std::int32_t>(gen() % 96 + 32);
  return v;
}

// A shard folder (train: 300 tokens, val: `val`) and GPT weights as Hugging Face ships them.
struct Fixture {
  TempDir dir{"train-eval"};
  std::vector<std::int32_t> val = random_bytes(101, 7);  // 100 targets
  Model<float> model{gpt_config()};
  fs::path hf = dir / "hf" / "model.safetensors";

  explicit Fixture(bool zero_weights = false) {
    fs::create_directories(dir / "data");
    core::text::write_shard(dir / "data" / "train_000000.bin", random_bytes(300, 3));
    core::text::write_shard(dir / "data" / "val_000000.bin", val);
    if (!zero_weights) init_parameters(model.params(), 11);
    fs::create_directories(hf.parent_path());
    save_hf_gpt2(hf, model.params());
    const ModelConfig c = gpt_config();
    core::test::write_text(hf.parent_path() / "config.json",
                           nlohmann::json{{"model_type", "gpt2"}, {"n_layer", c.n_layer}, {"n_head", c.n_head},
                                          {"n_embd", c.n_embd}, {"n_ctx", c.n_positions}, {"vocab_size", c.vocab_size},
                                          {"activation_function", "gelu_new"}, {"layer_norm_epsilon", 1e-5}}
                               .dump());
  }
  EvalOptions options(const fs::path& weights) const {
    EvalOptions o;
    o.checkpoint = weights.string();
    o.data.input = (dir / "data").string();
    o.data.tokenizer = "bytes";
    o.threads = 1;
    return o;
  }
  // Sum of the losses of the targets of positions [scored_from, end) of val, the inputs [begin, end).
  double loss_sum(std::int64_t begin, std::int64_t end, std::int64_t scored_from) {
    const int T = static_cast<int>(end - begin);
    std::vector<std::int32_t> tok(val.begin() + begin, val.begin() + end), tgt(T, -1);
    for (std::int64_t i = scored_from; i < end; ++i) tgt[i - begin] = val[i + 1];
    Batch b;
    b.B = 1;
    b.T = T;
    b.tokens = tok.data();
    b.targets = tgt.data();
    return double(model.forward(b, Task::lm)) * double(end - scored_from);
  }
};

}  // namespace

TEST_CASE("eval, stride 1: each target scored once with all the context the position table allows") {
  Fixture f;
  EvalOptions o = f.options(f.hf);
  o.stride = 1;
  o.batch = 5;
  const auto r = evaluate(o);
  double sum = 0;
  for (std::int64_t i = 0; i < 100; ++i) sum += f.loss_sum(std::max<std::int64_t>(0, i - kContext + 1), i + 1, i);
  CHECK(r["tokens"] == 100);
  CHECK(r["windows"] == 1 + (100 - kContext));
  CHECK(r["seq_len"] == kContext);  // the model's n_positions
  CHECK(r["loss"].get<double>() == doctest::Approx(sum / 100).epsilon(1e-5));
  CHECK(r["perplexity"].get<double>() == doctest::Approx(std::exp(sum / 100)).epsilon(1e-5));
  CHECK(r["bits_per_byte"].get<double>() == doctest::Approx(sum / 100 / std::numbers::ln2).epsilon(1e-5));
}

TEST_CASE("eval, stride = seq_len: consecutive windows, the last one short; the batch size changes nothing") {
  Fixture f;
  double sum = 0;
  for (std::int64_t b = 0; b < 100; b += kContext) sum += f.loss_sum(b, std::min<std::int64_t>(b + kContext, 100), b);
  for (int batch : {1, 3, 8}) {
    CAPTURE(batch);
    EvalOptions o = f.options(f.hf);
    o.batch = batch;
    const auto r = evaluate(o);
    CHECK(r["tokens"] == 100);
    CHECK(r["windows"] == 7);
    CHECK(r["stride"] == kContext);
    CHECK(r["loss"].get<double>() == doctest::Approx(sum / 100).epsilon(1e-5));
  }
  // max_tokens: the first 40 targets, windows [0, 16), [16, 32), [32, 40).
  EvalOptions o = f.options(f.hf);
  o.max_tokens = 40;
  const auto r = evaluate(o);
  CHECK(r["tokens"] == 40);
  CHECK(r["loss"].get<double>() ==
        doctest::Approx((f.loss_sum(0, 16, 0) + f.loss_sum(16, 32, 16) + f.loss_sum(32, 40, 32)) / 40).epsilon(1e-5));
}

TEST_CASE("eval: any stride scores every target once; split all adds the train split's") {
  Fixture f;
  for (int stride : {2, 5, 9, 15}) {
    CAPTURE(stride);
    EvalOptions o = f.options(f.hf);
    o.stride = stride;
    const auto r = evaluate(o);
    CHECK(r["tokens"] == 100);
    CHECK(r["windows"] == 1 + (100 - kContext + stride - 1) / stride);
  }
  EvalOptions o = f.options(f.hf);
  o.data.split = "all";
  CHECK(evaluate(o)["tokens"] == 299 + 100);
  o.data.split = "train";
  CHECK(evaluate(o)["tokens"] == 299);
}

TEST_CASE("eval: a model with zero weights scores ln V per token, 8 bits per byte on the byte tokenizer") {
  Fixture f(/*zero_weights=*/true);
  const auto r = evaluate(f.options(f.hf));
  CHECK(r["loss"].get<double>() == doctest::Approx(std::log(256.0)).epsilon(1e-6));
  CHECK(r["perplexity"].get<double>() == doctest::Approx(256.0).epsilon(1e-5));
  CHECK(r["bits_per_byte"].get<double>() == doctest::Approx(8.0).epsilon(1e-6));
  CHECK(r["bytes"] == 100);
}

TEST_CASE("eval and sample read the same weights from HF safetensors, an llm.c .bin and a checkpoint folder") {
  Fixture f;
  const double hf = evaluate(f.options(f.hf))["loss"].get<double>();
  const fs::path bin = f.dir / "gpt2_tiny.bin";
  save_llmc_checkpoint(bin, f.model.params());
  CHECK(evaluate(f.options(bin))["loss"].get<double>() == hf);
  const ModelConfig c = gpt_config();
  AdamW<float> opt(f.model.layout(), AdamWHyper{});
  const nlohmann::json state = {{"tokenizer", "bytes"}, {"seq_len", 8}, {"model", model_state_json(c)}};
  save_checkpoint(f.dir / "run" / "checkpoints", 5, f.model.params(), opt, state);
  EvalOptions o = f.options(f.dir / "run");
  o.data.tokenizer.clear();  // the checkpoint's
  CHECK(evaluate(o)["seq_len"] == 8);  // the run's, recorded in the checkpoint
  o.seq_len = kContext;
  const auto r = evaluate(o);
  CHECK(r["loss"].get<double>() == hf);
  CHECK(r["checkpoint"].get<std::string>().ends_with("step_00000005"));

  SampleOptions s;
  s.checkpoint = f.hf.string();
  s.tokenizer = "bytes";
  s.max_new_tokens = 5;
  CHECK(generate(s)["tokens"] == 5);
  s.tokenizer.clear();
  CHECK_THROWS_WITH_AS(generate(s), doctest::Contains("records no tokenizer: pass tokenizer=gpt2:DIR"), core::UsageError);
}

TEST_CASE("eval of a BERT: masked windows, the same masks at any batch size") {
  TempDir dir("train-eval-bert");
  fs::create_directories(dir / "data");
  core::text::write_shard(dir / "data" / "train_000000.bin", random_bytes(50, 1));
  core::text::write_shard(dir / "data" / "val_000000.bin", random_bytes(200, 2));
  ModelConfig c = core::test::tiny_config("bert", 16, kContext, 264);  // bytes + [MASK]
  Model<float> model(c);
  init_parameters(model.params(), 5);
  AdamW<float> opt(model.layout(), AdamWHyper{});
  const nlohmann::json state = {{"tokenizer", "bytes"}, {"model", model_state_json(c)}};
  save_checkpoint(dir / "ckpt", 1, model.params(), opt, state);
  EvalOptions o;
  o.checkpoint = (dir / "ckpt").string();
  o.data.input = (dir / "data").string();
  o.threads = 1;
  o.batch = 1;
  const auto one = evaluate(o);
  o.batch = 4;
  const auto four = evaluate(o);
  CHECK(one["tokens"] == four["tokens"]);
  CHECK(one["tokens"].get<int>() > 0);
  CHECK(one["tokens"].get<int>() < 199);
  CHECK(four["loss"].get<double>() == doctest::Approx(one["loss"].get<double>()).epsilon(1e-5));
  o.seed = 2;
  const auto other = evaluate(o);
  CHECK((other["tokens"] != one["tokens"] || other["loss"] != one["loss"]));
  o.stride = 4;
  CHECK_THROWS_WITH_AS(evaluate(o), doctest::Contains("stride: a bert model"), core::UsageError);
}

TEST_CASE("eval: bad options and model sources name what is wrong") {
  Fixture f;
  EvalOptions o = f.options(f.hf);
  o.seq_len = kContext + 1;
  CHECK_THROWS_WITH_AS(evaluate(o), doctest::Contains("seq_len = 17 exceeds the model's position table"),
                       core::UsageError);
  o.seq_len = 8;
  o.stride = 9;
  CHECK_THROWS_WITH_AS(evaluate(o), doctest::Contains("stride = 9 exceeds seq_len = 8"), core::UsageError);
  o = f.options(f.dir / "model.pt");
  core::test::write_text(f.dir / "model.pt", "x");
  CHECK_THROWS_WITH_AS(evaluate(o), doctest::Contains("neither a folder"), core::UsageError);
  o = f.options(f.dir / "nothing");
  CHECK_THROWS_AS(evaluate(o), core::InputMissingError);
  const fs::path bin = f.dir / "tiny.bin";
  save_llmc_checkpoint(bin, f.model.params());
  o = f.options(bin);
  o.data.tokenizer.clear();
  CHECK_THROWS_WITH_AS(evaluate(o), doctest::Contains("records no tokenizer: pass data.tokenizer=gpt2:DIR"),
                       core::UsageError);
  // HF weights: the config.json beside them is required and must describe GPT-2.
  const fs::path config = f.hf.parent_path() / "config.json";
  const std::string good = core::test::read_text(config);
  core::test::write_text(config, nlohmann::json{{"model_type", "gpt2"}, {"activation_function", "relu"}}.dump());
  CHECK_THROWS_WITH_AS(evaluate(f.options(f.hf)), doctest::Contains("config.json: activation_function"),
                       core::DataError);
  core::test::write_text(config, nlohmann::json{{"model_type", "gpt2"}, {"n_layer", 2}}.dump());
  CHECK_THROWS_WITH_AS(evaluate(f.options(f.hf)), doctest::Contains("config.json: 'n_head' is missing"),
                       core::DataError);
  fs::remove(config);
  CHECK_THROWS_WITH_AS(evaluate(f.options(f.hf)), doctest::Contains("need the config.json"), core::InputMissingError);
  core::test::write_text(config, good);
  CHECK(evaluate(f.options(f.hf))["tokens"] == 100);
}
