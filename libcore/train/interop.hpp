// GPT-2 weight interoperability.
// Hugging Face safetensors naming (the `gpt2` checkpoints): wte.weight [V, C], wpe.weight,
// h.N.ln_1.{weight,bias}, h.N.attn.c_attn.{weight,bias}, h.N.attn.c_proj.*, h.N.ln_2.*,
// h.N.mlp.c_fc.*, h.N.mlp.c_proj.*, ln_f.*; Conv1D weights are stored [in, out] (transposed
// relative to our [out, in]). Reading accepts an optional "transformer." prefix and ignores the
// attention-mask buffers (attn.bias, attn.masked_bias) and lm_head.weight (tied to wte).
// llm.c model checkpoints (gpt2_124M.bin): 256 int32 header (magic 20240326, version 3 = float32,
// maxT, V, L, NH, C, Vp), then float32 parameters in llm.c's order: wte [Vp, C], wpe [maxT, C],
// ln1w [L, C], ln1b, qkvw [L, 3C, C], qkvb [L, 3C], attprojw [L, C, C], attprojb, ln2w, ln2b,
// fcw [L, 4C, C], fcb [L, 4C], fcprojw [L, C, 4C], fcprojb [L, C], lnfw [C], lnfb [C].
#pragma once
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "train/model_config.hpp"
#include "train/params.hpp"

namespace core::io {
class SafetensorsFile;
}

namespace core::train {

namespace fs = std::filesystem;

// Every weight read from a file goes through these: DataError naming `file`, the tensor and the
// first bad element for a NaN or infinity (which would otherwise surface as "training diverged").
void check_finite(const fs::path& file, const std::string& tensor, std::span<const float> values);
// Tensor `name` of a safetensors file as float32 (F32, F16 or BF16), checked as above; DataError
// naming the file and tensor for another dtype.
std::vector<float> read_weights_tensor(const io::SafetensorsFile& f, const fs::path& file, const std::string& name);
// A weights file for the loaders below and checkpoint.hpp's: read whole (group < 0), or mapped when only
// parameter group `group` is wanted (a data-parallel start-up reads a whole model one group at a time, so
// that no more than the group's pages are ever resident).
io::SafetensorsFile open_weights_file(const fs::path& path, int group);

// GPT models only (UsageError otherwise). Load checks every shape against the model and every
// value for finiteness (DataError naming the file and tensor); group >= 0 loads that parameter
// group's tensors only (the others are left as they are).
void save_hf_gpt2(const fs::path& path, const FlatBuffers<float>& params);
void load_hf_gpt2(const fs::path& path, FlatBuffers<float>& params, int group = -1);

// The model config an llm.c checkpoint describes (arch gpt, vocab_pad_to such that Vp matches).
ModelConfig read_llmc_config(const fs::path& path);
void load_llmc_checkpoint(const fs::path& path, FlatBuffers<float>& params, int group = -1);
void save_llmc_checkpoint(const fs::path& path, const FlatBuffers<float>& params);

}  // namespace core::train
