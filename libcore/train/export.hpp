// `zpp-train export`: a GPT model from any source find_model reads (run, checkpoint folder, llm.c .bin,
// Hugging Face weights) written for other tools, into the run directory:
//   hf:   model.safetensors in Hugging Face's GPT-2 naming (Conv1D weights stored [in, out]) and the
//         config.json of a GPT2LMHeadModel (gelu_new, no dropout, tied head), plus vocab.json and
//         merges.txt when the tokenizer is GPT-2's: what transformers' from_pretrained(DIR) loads;
//   llmc: model.bin, an llm.c checkpoint (version 3, float32) that llm.c's trainer continues from, and
//         gpt2_tokenizer.bin (text/llmc_tokenizer.hpp) when the tokenizer has an end-of-text token (GPT-2's),
//         so that llm.c prints its samples as text.
// Every file is written to a temporary name and renamed.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "common/config.hpp"

namespace core::train {

struct ExportOptions {
  std::string checkpoint;  // run directory, checkpoint folder, llm.c .bin or HF .safetensors (model_source.hpp)
  std::string format = "hf";
  std::string tokenizer;   // empty: the checkpoint's (hf: its files are copied when it is GPT-2's)

  template <class V>
  void visit(V& v) {
    v("checkpoint", checkpoint, "run directory, checkpoints/step_N folder, llm.c .bin, or HF .safetensors + config.json");
    v("format", format, "hf (Hugging Face GPT-2 folder) or llmc (llm.c model.bin)", core::one_of({"hf", "llmc"}));
    v("tokenizer", tokenizer, "tokenizer whose files go with the export (hf: vocab.json + merges.txt; llmc: gpt2_tokenizer.bin; empty: the checkpoint's)");
  }
};

// Writes into `out` and returns {"format", "files", "checkpoint", "parameters", "tokenizer"}. Throws
// UsageError for a BERT model (neither format holds one), and the errors of find_model.
nlohmann::json export_model(const ExportOptions& options, const std::filesystem::path& out);

}  // namespace core::train
