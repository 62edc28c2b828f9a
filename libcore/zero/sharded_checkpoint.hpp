// Sharded checkpoints of a ZeRO run (as DeepSpeed's per-rank `zero_pp_rank_*` files, in safetensors).
// A checkpoint folder checkpoints/step_<N>/ holds
//   rank_<r>.safetensors  rank r's slice [r s_g, min(S_g, (r + 1) s_g)) of every parameter group g
//                         (s_g = shard_size(S_g, ranks)): fp32 weights "w/<group>" (stage 3: the
//                         master shard) and AdamW moments "m/<group>", "v/<group>";
//   state.json            written by rank 0 once every shard is on disk: the run's state (step,
//                         model, tokenizer, ...) with the manifest under "shards": ranks, AdamW
//                         step count, each group's name, size and shard size;
//   DONE                  written last (train::latest_checkpoint ignores a folder without it).
// Every file is written atomically (temporary + rename). A reader takes any range of a group from
// the shards that hold it, so a run on another number of ranks re-shards while it loads, and
// `consolidate` writes the one full checkpoint (train/checkpoint.hpp) that eval, export, sample and
// a one-rank run read.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.hpp"

namespace core::zero {

namespace fs = std::filesystem;

struct ShardManifest {
  int ranks = 0;
  std::int64_t adam_steps = 0;
  std::vector<std::string> names;           // group names (params.hpp's order)
  std::vector<std::size_t> sizes, shards;   // S_g, s_g

  nlohmann::json to_json() const;
  // DataError naming `where` for a missing or ill-typed field or inconsistent sizes.
  static ShardManifest from_json(const nlohmann::json& j, const std::string& where);
};

fs::path shard_file(const fs::path& dir, int rank);

// One rank's slice of one group: the weights, and the AdamW moments, `count` floats each.
struct ShardSlice {
  const float *w = nullptr, *m = nullptr, *v = nullptr;
  std::size_t count = 0;
};
// Writes rank `rank`'s file (slices in group order). Throws IoError.
void write_shard(const fs::path& dir, int rank, const ShardManifest& manifest, const std::vector<ShardSlice>& slices);

// Reads ranges of the groups of a sharded checkpoint folder, opening (mapping) a rank's file when
// it is first needed. Throws InputMissingError (no state.json, a missing shard file), DataError (no
// manifest, a shard file that lacks a tensor or has the wrong length).
class ShardReader {
 public:
  explicit ShardReader(const fs::path& dir);
  ~ShardReader();
  const nlohmann::json& state() const { return state_; }
  const ShardManifest& manifest() const { return manifest_; }
  // Copies elements [lo, hi) of group g's `kind` ('w', 'm' or 'v') into out.
  void read(char kind, int g, std::size_t lo, std::size_t hi, float* out);

 private:
  const io::SafetensorsFile& file(int rank);
  fs::path dir_;
  nlohmann::json state_;
  ShardManifest manifest_;
  std::vector<std::unique_ptr<io::SafetensorsFile>> files_;
};

// `zpp-train consolidate`: the checkpoint `from` (a run directory: its newest complete checkpoint;
// or a checkpoint folder), sharded, as one full checkpoint under out_root (train::save_checkpoint:
// model.safetensors, optimizer.safetensors, state.json, DONE). Returns {checkpoint, step, ranks,
// parameters}. InputMissingError when there is no complete checkpoint; UsageError when it is not
// sharded; DataError when the shards do not describe the model of state.json.
nlohmann::json consolidate(const fs::path& from, const fs::path& out_root);

}  // namespace core::zero
