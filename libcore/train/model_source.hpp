// Where the commands that only run a model (`sample`, `eval`) take it from, found by what the path is:
//   - a training run directory (its newest complete checkpoint) or a checkpoints/step_N folder:
//     state.json describes the model and the tokenizer, model.safetensors holds the weights;
//   - an llm.c GPT-2 checkpoint (*.bin, header magic 20240326): the header describes the model;
//   - Hugging Face GPT-2 weights (*.safetensors) with the config.json that comes beside them
//     (n_layer, n_head, n_embd, n_positions or n_ctx, vocab_size, layer_norm_epsilon).
// The last two record no tokenizer: the command's tokenizer= option names it (gpt2:DIR).
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "text/tokenizer.hpp"
#include "train/model_config.hpp"
#include "train/params.hpp"

namespace core::train {

namespace fs = std::filesystem;

struct ModelSource {
  enum class Format { checkpoint, llmc, hf };
  Format format = Format::checkpoint;
  fs::path path;          // the checkpoint folder or the weights file
  ModelConfig config;
  std::string tokenizer;  // the spec the checkpoint records; empty for llm.c and HF files
  int seq_len = 0;        // the sequence length the checkpoint's run trained with (0: not recorded)

  // Fills params (laid out for `config`) from the source; DataError naming the file and tensor.
  // group >= 0: that parameter group only (see interop.hpp).
  void load_weights_into(FlatBuffers<float>& params, int group = -1) const;
  // The tokenizer to run the model with: `override` (the command's config key `key`) when given (for
  // a checkpoint it must be of the kind recorded, its folder may have moved), else the recorded one.
  // UsageError when there is none or it has more tokens than the model's vocabulary;
  // InputMissingError with a hint when the recorded tokenizer's files are gone.
  std::unique_ptr<text::Tokenizer> make_tokenizer(const std::string& override, const std::string& command,
                                                  const std::string& key = "tokenizer") const;
};

// The checkpoint folder a path names: itself when it has DONE, else the newest complete checkpoint
// under p/checkpoints or p (InputMissingError naming `spec` when there is none).
fs::path resolve_checkpoint_folder(const fs::path& p, const std::string& spec);

// Throws UsageError (empty spec, a file of another kind), InputMissingError (nothing there, no
// complete checkpoint, no config.json beside HF weights), DataError (malformed state.json,
// config.json or llm.c header).
ModelSource find_model(const std::string& spec);

}  // namespace core::train
