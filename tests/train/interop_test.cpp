// Weight interop round trips on files the test writes: HF GPT-2 safetensors (Conv1D weights
// transposed), llm.c checkpoints (header + parameter order), native checkpoints; malformed files
// give DataError naming the file; so do non-finite weights and integer tensors. Each format loads
// one parameter group at a time exactly as the whole file.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <span>

#include "common/errors.hpp"
#include "io/safetensors.hpp"
#include "test_support.hpp"
#include "tiny_config.hpp"
#include "train/checkpoint.hpp"
#include "train/interop.hpp"
#include "train/model_source.hpp"

using namespace core::train;
using core::test::TempDir;

namespace {

ModelConfig cfg() {
  ModelConfig c = core::test::tiny_config("gpt", 8, 16, 50);
  c.vocab_pad_to = 16;
  return c;
}

bool same(const FlatBuffers<float>& a, const FlatBuffers<float>& b) {
  for (int g = 0; g < a.num_groups(); ++g)
    for (std::size_t i = 0; i < a.group_size(g); ++i)
      if (a.group(g)[i] != b.group(g)[i]) return false;
  return true;
}

// A tiny GPT's initial weights (seed 5) and AdamW moments that differ in every element and group, 5 steps
// taken, beside a temporary folder.
struct StateFixture {
  TempDir tmp{"interop_state"};
  ParamLayout layout{cfg()};
  FlatBuffers<float> a{layout};
  AdamW<float> opt{layout, AdamWHyper{}};
  StateFixture() {
    init_parameters(a, 5);
    for (int g = 0; g < a.num_groups(); ++g)
      for (std::size_t i = 0; i < a.group_size(g); ++i) {
        opt.m().group(g)[i] = 0.25f * float(i % 7) - float(g);
        opt.v().group(g)[i] = 0.5f * float(i % 5) + float(g);
      }
    opt.set_steps_taken(5);
  }
};

}  // namespace

TEST_CASE("parameter layout: flat groups with aligned named views") {
  ParamLayout layout(cfg());
  CHECK(layout.num_groups() == 3);
  CHECK(layout.embed(kWte).shape == std::vector<std::int64_t>{64, 8});  // 50 padded to 64
  CHECK(layout.block(1, kQkvW).name == "h.1.attn.c_attn.weight");
  CHECK(layout.block(1, kQkvW).shape == std::vector<std::int64_t>{24, 8});
  for (const auto& g : layout.groups())
    for (const auto& t : g.tensors) CHECK(t.offset % kAlign == 0);
  CHECK(!layout.block(0, kQkvB).decay);
  CHECK(layout.block(0, kFcW).decay);
  // 12 tensors per block: 2 LN (2C each) + qkv (3C^2 + 3C) + proj (C^2 + C) + fc (4C^2 + 4C) + proj (4C^2 + C)
  const std::size_t C = 8;
  CHECK(layout.parameter_count() == 64 * C + 16 * C + 2 * C + 2 * (12 * C * C + 13 * C));
  // The closed form that checks headers before any layout is built counts the same, for GPT and BERT.
  CHECK(cfg().parameter_count() == static_cast<std::int64_t>(layout.parameter_count()));
  ModelConfig bert = core::test::tiny_config("bert", 16, 32, 300);
  bert.num_labels = 3;
  CHECK(bert.parameter_count() == static_cast<std::int64_t>(ParamLayout(bert).parameter_count()));
}

TEST_CASE("HF GPT-2 safetensors round trip, with Conv1D weights stored [in, out]") {
  TempDir tmp("interop_hf");
  ParamLayout layout(cfg());
  FlatBuffers<float> a(layout), b(layout);
  init_parameters(a, 1);
  save_hf_gpt2(tmp / "model.safetensors", a);
  const core::io::SafetensorsFile f(tmp / "model.safetensors");
  const auto t = f.get("h.0.attn.c_attn.weight");
  REQUIRE(t.shape == std::vector<std::int64_t>{8, 24});
  const auto vals = core::io::to_f32(t);
  CHECK(vals[1 * 24 + 5] == a.block(0, kQkvW)[5 * 8 + 1]);  // file [in=1, out=5] == ours [out=5, in=1]
  CHECK(f.get("wte.weight").shape == std::vector<std::int64_t>{50, 8});
  load_hf_gpt2(tmp / "model.safetensors", b);
  CHECK(same(a, b));

  ModelConfig other = cfg();
  other.n_embd = 16;
  ParamLayout ol(other);
  FlatBuffers<float> c(ol);
  CHECK_THROWS_WITH_AS(load_hf_gpt2(tmp / "model.safetensors", c), doctest::Contains("wte.weight"), core::DataError);
}

TEST_CASE("llm.c checkpoint round trip and malformed files") {
  TempDir tmp("interop_llmc");
  ParamLayout layout(cfg());
  FlatBuffers<float> a(layout), b(layout);
  init_parameters(a, 2);
  save_llmc_checkpoint(tmp / "model.bin", a);
  const ModelConfig rc = read_llmc_config(tmp / "model.bin");
  CHECK(rc.n_layer == 2);
  CHECK(rc.n_head == 2);
  CHECK(rc.n_embd == 8);
  CHECK(rc.n_positions == 16);
  CHECK(rc.vocab_size == 50);
  CHECK(rc.padded_vocab() == 64);
  // llm.c order: wte, wpe, then ln1w of every layer; check one value of layer 1's ln_1 gain.
  {
    std::ifstream in(tmp / "model.bin", std::ios::binary);
    std::vector<std::int32_t> h(8);
    in.read(reinterpret_cast<char*>(h.data()), 32);
    CHECK(h[0] == 20240326);
    CHECK(h[1] == 3);
    a.block(1, kLn1W)[3] = 7.5f;
  }
  save_llmc_checkpoint(tmp / "model.bin", a);
  {
    std::ifstream in(tmp / "model.bin", std::ios::binary);
    in.seekg(1024 + (64 * 8 + 16 * 8 + 8 + 3) * 4);
    float v = 0;
    in.read(reinterpret_cast<char*>(&v), 4);
    CHECK(v == 7.5f);
  }
  load_llmc_checkpoint(tmp / "model.bin", b);
  CHECK(same(a, b));

  std::string bytes = core::test::read_text(tmp / "model.bin");
  core::test::write_text(tmp / "short.bin", bytes.substr(0, bytes.size() - 4));
  CHECK_THROWS_WITH_AS(load_llmc_checkpoint(tmp / "short.bin", b), doctest::Contains("short.bin"), core::DataError);
  core::test::write_text(tmp / "long.bin", bytes + std::string(8, '\0'));
  CHECK_THROWS_WITH_AS(read_llmc_config(tmp / "long.bin"), doctest::Contains("but the file has"), core::DataError);
  // A header that describes a huge model is refused from the file's size, before anything is allocated
  // (L = 2^31 - 1 allocated gigabytes before failing with bad_alloc).
  for (const std::int32_t layers : {std::numeric_limits<std::int32_t>::max(), 1000000}) {
    std::string huge = bytes.substr(0, 1024);
    std::memcpy(huge.data() + 4 * 4, &layers, 4);
    core::test::write_text(tmp / "huge.bin", huge + std::string(64, '\0'));
    CHECK_THROWS_AS(read_llmc_config(tmp / "huge.bin"), core::DataError);
  }
  bytes[0] = 'x';
  core::test::write_text(tmp / "magic.bin", bytes);
  CHECK_THROWS_WITH_AS(read_llmc_config(tmp / "magic.bin"), doctest::Contains("magic"), core::DataError);
}

TEST_CASE("native weights file round trip and shape mismatch") {
  TempDir tmp("interop_native");
  ModelConfig bc = cfg();
  bc.arch = "bert";
  ParamLayout layout(bc);
  FlatBuffers<float> a(layout), b(layout);
  init_parameters(a, 4);
  save_weights(tmp / "w.safetensors", a);
  load_weights(tmp / "w.safetensors", b);
  CHECK(same(a, b));
  ParamLayout gl(cfg());
  FlatBuffers<float> g(gl);
  load_weights(tmp / "w.safetensors", g);  // the GPT tensors are a subset of BERT's
  bc.n_embd = 16;
  ParamLayout wide(bc);
  FlatBuffers<float> w(wide);
  CHECK_THROWS_WITH_AS(load_weights(tmp / "w.safetensors", w), doctest::Contains("w.safetensors"), core::DataError);
}

TEST_CASE("non-finite weights and non-float dtypes are DataErrors naming the file and tensor, in every format") {
  TempDir tmp("interop_nonfinite");
  ParamLayout layout(cfg());
  FlatBuffers<float> a(layout), b(layout);
  init_parameters(a, 1);
  a.block(1, kFcW)[5] = std::numeric_limits<float>::quiet_NaN();
  save_hf_gpt2(tmp / "hf.safetensors", a);
  save_llmc_checkpoint(tmp / "llmc.bin", a);
  save_weights(tmp / "native.safetensors", a);
  CHECK_THROWS_WITH_AS(load_hf_gpt2(tmp / "hf.safetensors", b), doctest::Contains("'h.1.mlp.c_fc.weight' holds nan"),
                       core::DataError);
  CHECK_THROWS_WITH_AS(load_llmc_checkpoint(tmp / "llmc.bin", b), doctest::Contains("'h.1.mlp.c_fc.weight' holds nan"),
                       core::DataError);
  CHECK_THROWS_WITH_AS(load_weights(tmp / "native.safetensors", b), doctest::Contains("'h.1.mlp.c_fc.weight' holds nan"),
                       core::DataError);

  // An integer tensor where a weight belongs: the message names the file, not only the tensor.
  init_parameters(a, 1);
  save_hf_gpt2(tmp / "hf.safetensors", a);
  const core::io::SafetensorsFile f(tmp / "hf.safetensors");
  core::io::SafetensorsWriter w;
  for (const auto& name : f.names()) {
    if (name == "ln_f.bias") {
      const std::vector<std::int32_t> ints(8, 0);
      w.add<std::int32_t>(name, {8}, std::span<const std::int32_t>(ints));
    } else {
      const auto v = core::io::to_f32(f.get(name));
      w.add<float>(name, f.get(name).shape, std::span<const float>(v));
    }
  }
  w.write(tmp / "ints.safetensors");
  CHECK_THROWS_WITH_AS(load_hf_gpt2(tmp / "ints.safetensors", b), doctest::Contains("ints.safetensors: tensor 'ln_f.bias'"),
                       core::DataError);
}

TEST_CASE_FIXTURE(StateFixture, "one parameter group at a time: every format fills exactly that group, as the whole "
                                 "file's load does") {
  // (what a data-parallel start-up does on rank 0: only group g of the buffers is resident while it is read)
  save_hf_gpt2(tmp / "hf.safetensors", a);
  save_llmc_checkpoint(tmp / "llmc.bin", a);
  const auto dir = save_checkpoint(tmp / "checkpoints", 3, a, opt, {{"tokenizer", "bytes"}});
  CHECK(checkpoint_adam_steps(dir) == 5);
  const auto bits = [](const float* x, const float* y, std::size_t n) {
    return std::memcmp(x, y, n * sizeof(float)) == 0;
  };
  const std::vector<std::pair<std::string, std::function<void(FlatBuffers<float>&, AdamW<float>&, int)>>> formats = {
      {"hf", [&](FlatBuffers<float>& p, AdamW<float>&, int g) { load_hf_gpt2(tmp / "hf.safetensors", p, g); }},
      {"llmc", [&](FlatBuffers<float>& p, AdamW<float>&, int g) { load_llmc_checkpoint(tmp / "llmc.bin", p, g); }},
      {"checkpoint", [&](FlatBuffers<float>& p, AdamW<float>& o, int g) { load_checkpoint(dir, p, o, g); }}};
  for (const auto& [name, load] : formats) {
    CAPTURE(name);
    FlatBuffers<float> b(layout, Allocation::deferred);
    AdamW<float> o(layout, AdamWHyper{}, Allocation::deferred);
    for (int g = 0; g < layout.num_groups(); ++g) {
      CAPTURE(g);
      for (auto* buffers : {&b, &o.m(), &o.v()}) buffers->allocate(g);
      load(b, o, g);  // (a write into another group would touch a buffer that is not allocated)
      CHECK(b.resident_elements() == layout.groups()[g].size);
      CHECK(bits(b.group(g), a.group(g), a.group_size(g)));
      if (name == "checkpoint") {
        CHECK(bits(o.m().group(g), opt.m().group(g), a.group_size(g)));
        CHECK(bits(o.v().group(g), opt.v().group(g), a.group_size(g)));
        CHECK(o.steps_taken() == 5);
      }
      for (auto* buffers : {&b, &o.m(), &o.v()}) buffers->release(g);
    }
  }
}

TEST_CASE_FIXTURE(StateFixture, "a checkpoint whose tensors are copied out one at a time (a device model's) has the "
                                 "host buffers' files") {
  const auto host = save_checkpoint(tmp / "host", 2, a, opt, {{"tokenizer", "bytes"}});
  std::size_t copied = 0;  // floats copied out
  const auto copy = [&](char kind, int g, std::size_t offset, std::size_t n, float* dst) {
    const float* src = kind == 'w' ? a.group(g) : kind == 'm' ? opt.m().group(g) : opt.v().group(g);
    REQUIRE(offset + n <= a.group_size(g));
    std::memcpy(dst, src + offset, n * sizeof(float));
    copied += n;
  };
  const auto dev = save_checkpoint(tmp / "copied", 2, layout, opt.steps_taken(), copy, {{"tokenizer", "bytes"}});
  std::size_t group_elems = 0;
  for (const auto& g : layout.groups()) group_elems += g.size;
  CHECK(copied == layout.parameter_count() + 2 * group_elems);  // every tensor's weights, the groups' moments
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "state.json", "DONE"})
    CHECK(core::test::read_text(dev / file) == core::test::read_text(host / file));
}

TEST_CASE("a checkpoint's state.json and optimizer metadata with wrong keys or types are DataErrors naming the file") {
  TempDir tmp("checkpoint_state");
  ParamLayout layout(cfg());
  FlatBuffers<float> a(layout);
  init_parameters(a, 1);
  AdamW<float> opt(layout, AdamWHyper{});
  const auto dir = save_checkpoint(tmp.path(), 7, a, opt, {{"tokenizer", "bytes"}});
  CHECK(read_checkpoint_state(dir)["step"] == 7);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{\"tokenizer\": \"bytes\"}", "'step' must be an integer >= 0"},
      {"{\"step\": \"7\"}", "'step' must be an integer >= 0"},
      {"{\"step\": -1}", "'step' must be an integer >= 0"},
      {"{\"step\": 6}", "'step' = 6 does not match the folder step_00000007"},
      {"{\"step\": 7, \"model\": 5}", "'model' must be an object"},
      {"{\"step\": 7, \"tokenizer\": 5}", "'tokenizer' must be a string"},
      {"{\"step\": 7, \"threads\": \"x\"}", "'threads' must be an integer"},
  };
  for (const auto& [json, what] : bad) {
    CAPTURE(json);
    core::test::write_text(dir / "state.json", json);
    const std::string expected = "state.json: " + what;
    CHECK_THROWS_WITH_AS(read_checkpoint_state(dir), doctest::Contains(expected.c_str()), core::DataError);
  }
  core::test::write_text(dir / "state.json", "{\"step\": 7}");
  // adam_steps that is not a count
  const core::io::SafetensorsFile f(dir / "optimizer.safetensors");
  core::io::SafetensorsWriter w;
  for (const auto& name : f.names()) {
    const auto v = core::io::to_f32(f.get(name));
    w.add<float>(name, f.get(name).shape, std::span<const float>(v));
  }
  w.set_metadata("adam_steps", "seven");
  w.write(dir / "optimizer.safetensors");
  FlatBuffers<float> b(layout);
  CHECK_THROWS_WITH_AS(load_checkpoint(dir, b, opt), doctest::Contains("'adam_steps' = 'seven'"), core::DataError);
}

TEST_CASE("a state.json that describes more parameters than model.safetensors holds is refused before allocating") {
  TempDir tmp("checkpoint_state_size");
  ParamLayout layout(cfg());
  FlatBuffers<float> a(layout);
  init_parameters(a, 1);
  AdamW<float> opt(layout, AdamWHyper{});
  nlohmann::json model = model_state_json(cfg());
  const auto dir = save_checkpoint(tmp.path(), 3, a, opt, {{"tokenizer", "bytes"}, {"model", model}});
  CHECK(find_model(dir.string()).config.n_layer == 2);
  model["n_layer"] = 1000000;  // was: a layout and buffers of ~10^6 layers allocated before any check
  core::test::write_text(dir / "state.json", nlohmann::json{{"step", 3}, {"tokenizer", "bytes"}, {"model", model}}.dump());
  CHECK_THROWS_WITH_AS(find_model(dir.string()), doctest::Contains("model.safetensors: the model described"),
                       core::DataError);
}
