// Finding a model to run and its tokenizer (see model_source.hpp).
#include "train/model_source.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "common/errors.hpp"
#include "io/jsonl.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "train/interop.hpp"

namespace core::train {

fs::path resolve_checkpoint_folder(const fs::path& p, const std::string& spec) {
  if (fs::exists(p / "DONE")) return p;
  if (auto c = latest_checkpoint(p / "checkpoints")) return *c;
  if (auto c = latest_checkpoint(p)) return *c;
  throw InputMissingError("checkpoint: no complete checkpoint (folder with DONE) in '" + spec + "'");
}

namespace {

// GPT-2's config.json as Hugging Face writes it beside model.safetensors.
ModelConfig config_from_hf_json(const fs::path& weights) {
  const fs::path p = weights.parent_path() / "config.json";
  std::ifstream f(p);
  if (!f)
    throw InputMissingError(weights.string() + ": Hugging Face weights need the config.json that comes with them (" +
                            p.string() + " cannot be opened)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(p.string() + ": " + e.what());
  }
  const auto bad = [&p](const std::string& what) { return DataError(p.string() + ": " + what); };
  if (!j.is_object()) throw bad("expected a JSON object");
  if (j.contains("model_type") && j["model_type"] != "gpt2")
    throw bad("model_type " + io::json_excerpt(j["model_type"]) + " is not gpt2");
  if (j.contains("activation_function") && j["activation_function"] != "gelu_new")
    throw bad("activation_function " + io::json_excerpt(j["activation_function"]) + ": only gelu_new (GPT-2's tanh GELU) is supported");
  const auto integer = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      if (j.contains(k)) {
        if (!j[k].is_number_integer()) throw bad(std::string("'") + k + "' must be an integer");
        return j[k].get<int>();
      }
    throw bad(std::string("'") + *keys.begin() + "' is missing");
  };
  ModelConfig c;
  c.arch = "gpt";
  c.n_layer = integer({"n_layer"});
  c.n_head = integer({"n_head"});
  c.n_embd = integer({"n_embd"});
  c.n_positions = integer({"n_positions", "n_ctx"});
  c.vocab_size = integer({"vocab_size"});
  if (j.contains("layer_norm_epsilon")) {
    if (!j["layer_norm_epsilon"].is_number()) throw bad("'layer_norm_epsilon' must be a number");
    c.layer_norm_eps = j["layer_norm_epsilon"].get<double>();
  }
  try {
    c.validate();
  } catch (const UsageError& e) {
    throw bad(std::string("describes an invalid model: ") + e.what());
  }
  return c;
}

std::string kind_of(const std::string& spec) { return spec.substr(0, spec.find(':')); }

}  // namespace

ModelSource find_model(const std::string& spec) {
  if (spec.empty())
    throw UsageError("checkpoint: give a run directory, a checkpoint folder or GPT-2 weights (--checkpoint PATH)");
  const fs::path p(spec);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw InputMissingError("checkpoint: '" + spec + "' " + (ec ? "cannot be reached: " + ec.message() : "does not exist"));
  ModelSource s;
  if (fs::is_directory(p, ec)) {
    s.path = resolve_checkpoint_folder(p, spec);
    const nlohmann::json state = read_checkpoint_state(s.path);
    if (state.contains(kShardManifestKey))
      throw UsageError("checkpoint: " + s.path.string() + " holds the shards of a data-parallel (ZeRO) run; write "
                       "one full checkpoint with `zpp-train consolidate " + spec + " --out DIR` and give DIR");
    s.config = model_config_from_state(state, s.path);
    s.tokenizer = state.value("tokenizer", std::string("bytes"));
    if (state.contains("seq_len")) {
      if (!state["seq_len"].is_number_integer() || state["seq_len"].get<int>() <= 0)
        throw DataError((s.path / "state.json").string() + ": 'seq_len' must be an integer > 0");
      s.seq_len = state["seq_len"].get<int>();
    }
  } else if (p.extension() == ".bin") {
    s.format = ModelSource::Format::llmc;
    s.path = p;
    s.config = read_llmc_config(p);
  } else if (p.extension() == ".safetensors") {
    s.format = ModelSource::Format::hf;
    s.path = p;
    s.config = config_from_hf_json(p);
  } else {
    throw UsageError("checkpoint: '" + spec +
                     "' is neither a folder (run or checkpoint), an llm.c .bin nor a Hugging Face .safetensors file");
  }
  // A description (state.json, config.json) must agree with the weights' bytes before a layout of its size is
  // built: safetensors hold at least 2 bytes a parameter (16-bit), our checkpoints 4 (llm.c is checked exactly).
  if (s.format != ModelSource::Format::llmc) {
    const fs::path weights = s.format == ModelSource::Format::checkpoint ? s.path / "model.safetensors" : s.path;
    const std::uint64_t have = fs::file_size(weights, ec);
    const std::uint64_t per = s.format == ModelSource::Format::checkpoint ? 4 : 2;
    const auto want = static_cast<std::uint64_t>(s.config.parameter_count()) * per;
    if (!ec && have < want)
      throw DataError(weights.string() + ": the model described (" + std::to_string(s.config.parameter_count()) +
                      " parameters) needs at least " + std::to_string(want) + " bytes of weights, the file has " +
                      std::to_string(have));
  }
  return s;
}

void ModelSource::load_weights_into(FlatBuffers<float>& params, int group) const {
  switch (format) {
    case Format::checkpoint: load_weights(path / "model.safetensors", params, group); break;
    case Format::llmc: load_llmc_checkpoint(path, params, group); break;
    case Format::hf: load_hf_gpt2(path, params, group); break;
  }
}

std::unique_ptr<text::Tokenizer> ModelSource::make_tokenizer(const std::string& override, const std::string& command,
                                                             const std::string& key) const {
  if (tokenizer.empty() && override.empty())
    throw UsageError(command + ": " + path.string() + " records no tokenizer: pass " + key + "=gpt2:DIR (or bytes)");
  const std::string spec = override.empty() ? tokenizer : override;
  if (!tokenizer.empty() && kind_of(spec) != kind_of(tokenizer))
    throw UsageError(command + ": tokenizer " + spec + " is not of the kind of the checkpoint's (" + tokenizer + ")");
  std::unique_ptr<text::Tokenizer> tok;
  try {
    tok = text::make_tokenizer(spec);
  } catch (const InputMissingError& e) {
    throw InputMissingError(std::string(e.what()) + (override.empty() ? " (the tokenizer " + path.string() +
                                                                             "/state.json records; if its folder moved, "
                                                                             "pass " + key + "=gpt2:DIR)"
                                                                       : ""));
  }
  if (tok->vocab_size() > config.vocab_size)
    throw UsageError(command + ": tokenizer " + spec + " has " + std::to_string(tok->vocab_size()) +
                     " tokens, more than the model's vocabulary (" + std::to_string(config.vocab_size) + ")");
  return tok;
}

}  // namespace core::train
