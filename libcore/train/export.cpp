// Model export for other tools (see export.hpp).
#include "train/export.hpp"

#include <fstream>
#include <sstream>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"
#include "text/gpt2_bpe.hpp"
#include "text/llmc_tokenizer.hpp"
#include "train/interop.hpp"
#include "train/model_source.hpp"

namespace core::train {

namespace {

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputMissingError("cannot open " + p.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The config.json of Hugging Face's GPT2LMHeadModel for this model (dropout off: the model was trained
// without it; eos/bos: GPT-2's end-of-text when the tokenizer has one).
nlohmann::json hf_config(const ModelConfig& c, const text::Tokenizer* tok) {
  nlohmann::json j = {{"architectures", {"GPT2LMHeadModel"}},
                      {"model_type", "gpt2"},
                      {"activation_function", "gelu_new"},
                      {"n_layer", c.n_layer},
                      {"n_head", c.n_head},
                      {"n_embd", c.n_embd},
                      {"n_positions", c.n_positions},
                      {"n_ctx", c.n_positions},
                      {"vocab_size", c.vocab_size},
                      {"layer_norm_epsilon", c.layer_norm_eps},
                      {"initializer_range", c.init_std},
                      {"resid_pdrop", 0.0},
                      {"embd_pdrop", 0.0},
                      {"attn_pdrop", 0.0},
                      {"tie_word_embeddings", true}};
  if (tok && tok->eot_token()) j["bos_token_id"] = j["eos_token_id"] = *tok->eot_token();
  return j;
}

}  // namespace

nlohmann::json export_model(const ExportOptions& o, const fs::path& out) {
  const ModelSource source = find_model(o.checkpoint);
  if (source.config.architecture() != Arch::gpt)
    throw UsageError("export: " + source.path.string() + " holds a " + source.config.arch +
                     " model; hf and llmc hold GPT-2 models only");
  std::unique_ptr<text::Tokenizer> tok;
  if (!o.tokenizer.empty() || !source.tokenizer.empty()) tok = source.make_tokenizer(o.tokenizer, "export");
  const ParamLayout layout(source.config);
  FlatBuffers<float> params(layout);
  source.load_weights_into(params);

  fs::create_directories(out);
  std::vector<std::string> files;
  if (o.format == "llmc") {
    save_llmc_checkpoint(out / "model.bin", params);
    files.push_back("model.bin");
    if (tok && tok->eot_token()) {  // what llm.c's trainer reads to print its samples
      text::write_llmc_tokenizer(out / "gpt2_tokenizer.bin", *tok);
      files.push_back("gpt2_tokenizer.bin");
    } else if (tok) {
      log::info("export: the {} tokenizer has no end-of-text token; llm.c's tokenizer file is not written", tok->spec());
    }
  } else {
    save_hf_gpt2(out / "model.safetensors", params);
    write_file_atomic(out / "config.json", hf_config(source.config, tok.get()).dump(2) + "\n");
    files = {"model.safetensors", "config.json"};
    if (const auto* gpt2 = dynamic_cast<const text::Gpt2Tokenizer*>(tok.get())) {
      const text::Gpt2TokenizerFiles from = text::gpt2_tokenizer_files(gpt2->dir());
      write_file_atomic(out / "vocab.json", read_bytes(from.vocab));
      write_file_atomic(out / "merges.txt", read_bytes(from.merges));
      files.insert(files.end(), {"vocab.json", "merges.txt"});
    } else if (tok) {
      log::info("export: the {} tokenizer has no Hugging Face files; only the model is written", tok->spec());
    }
  }
  for (const auto& f : files) log::info("export: wrote {}", (out / f).string());
  nlohmann::json r = {{"format", o.format},
                      {"files", files},
                      {"out", out.string()},
                      {"checkpoint", source.path.string()},
                      {"parameters", layout.parameter_count()}};
  r["tokenizer"] = tok ? nlohmann::json(tok->spec()) : nlohmann::json(nullptr);
  return r;
}

}  // namespace core::train
