// Training checkpoints: <root>/step_<NNNNNNNN>/ holding model.safetensors (every tensor of the
// layout by its name, native [out, in] orientation, float32), optimizer.safetensors (AdamW moments
// m/<group> and v/<group> as flat group buffers), state.json (step, config, tokenizer, ...) and a
// DONE marker written last: a folder without DONE is an interrupted save and is ignored.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "common/rundir.hpp"
#include "train/model_config.hpp"
#include "train/optimizer.hpp"
#include "train/params.hpp"

namespace core::train {

namespace fs = std::filesystem;

// Weights file alone (also what `sample` reads). Throws IoError.
void save_weights(const fs::path& path, const FlatBuffers<float>& params, const nlohmann::json& metadata = {});
// Fills every tensor of the layout; DataError naming the file and tensor for a missing tensor or a
// shape mismatch, InputMissingError when absent. group >= 0: that parameter group's tensors only (the
// file mapped, not read whole: a data-parallel start-up reads a whole model one group at a time).
void load_weights(const fs::path& path, FlatBuffers<float>& params, int group = -1);

// Writes a complete checkpoint folder and returns it; older complete ones beyond `keep` are removed.
fs::path save_checkpoint(const fs::path& root, std::int64_t step, const FlatBuffers<float>& params,
                         AdamW<float>& opt, const nlohmann::json& state, int keep = 2);
// The state of a model kept elsewhere (a TransformerCuda's, on the device): copy(kind, g, offset, n, dst)
// puts n floats at `offset` of group g's weights ('w') or AdamW moments ('m', 'v') into host memory at dst.
using StateCopy = std::function<void(char kind, int g, std::size_t offset, std::size_t n, float* dst)>;
// As above, each tensor copied out by `copy` while the files are written (no more than the largest tensor
// on the host at once: the same files as from host buffers holding the same values).
fs::path save_checkpoint(const fs::path& root, std::int64_t step, const ParamLayout& layout, std::int64_t adam_steps,
                         const StateCopy& copy, const nlohmann::json& state, int keep = 2);
// root/step_<NNNNNNNN>: the folder of the checkpoint after `step` steps.
fs::path checkpoint_folder(const fs::path& root, std::int64_t step);
// Removes the complete checkpoints under root beyond the newest `keep` (0: keeps all).
void prune_checkpoints(const fs::path& root, int keep);
// Keeps the records of metrics.jsonl up to `step` (those a resumed run does not write again): a run
// killed after its last checkpoint left records past it, and its last line may be cut short.
void trim_metrics(const fs::path& file, std::int64_t step);
// The newest folder under root that has DONE, if any.
std::optional<fs::path> latest_checkpoint(const fs::path& root);
// The checkpoint a run in `run` continues when `resume` is set: the newest complete one, with its
// state.json and step. An existing run without `resume` is a UsageError naming `command` (train,
// finetune); --resume without a complete checkpoint warns and starts from scratch (nullopt); a
// checkpoint past `train_iters` is a UsageError.
struct ResumePoint {
  fs::path dir;
  nlohmann::json state;
  std::int64_t step = 0;
};
std::optional<ResumePoint> find_resume_point(const RunDir& run, bool resume, std::int64_t train_iters,
                                             const std::string& command);
// The AdamW step count a checkpoint folder's optimizer.safetensors records (DataError naming it when
// missing or malformed).
std::int64_t checkpoint_adam_steps(const fs::path& dir);
// Restores params and the optimizer (moments and step count); returns state.json. group >= 0: that
// parameter group's weights and moments only (and the step count), as load_weights.
nlohmann::json load_checkpoint(const fs::path& dir, FlatBuffers<float>& params, AdamW<float>& opt, int group = -1);
// The model description state.json holds under "model" (a resumed run must match it), and the
// config it describes (DataError naming dir/state.json for a missing key or an invalid model).
nlohmann::json model_state_json(const ModelConfig& config);
ModelConfig model_config_from_state(const nlohmann::json& state, const fs::path& dir);
// state.json of a checkpoint folder (InputMissingError naming it; DataError naming it and the key
// for malformed JSON, a missing or negative step, one that is not the folder's, or a wrong type).
nlohmann::json read_checkpoint_state(const fs::path& dir);

}  // namespace core::train
