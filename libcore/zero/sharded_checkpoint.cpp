// Per-rank checkpoint shards, their manifest, re-sharding reads and consolidation (see sharded_checkpoint.hpp).
#include "zero/sharded_checkpoint.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <span>

#include "common/errors.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"
#include "train/model_source.hpp"
#include "zero/engine.hpp"

namespace core::zero {

nlohmann::json ShardManifest::to_json() const {
  nlohmann::json groups = nlohmann::json::array();
  for (std::size_t g = 0; g < names.size(); ++g)
    groups.push_back({{"name", names[g]}, {"size", sizes[g]}, {"shard", shards[g]}});
  return {{"ranks", ranks}, {"adam_steps", adam_steps}, {"groups", groups}};
}

ShardManifest ShardManifest::from_json(const nlohmann::json& j, const std::string& where) {
  const auto bad = [&where](const std::string& what) {
    return DataError(where + ": '" + train::kShardManifestKey + "': " + what);
  };
  ShardManifest m;
  try {
    m.ranks = j.at("ranks").get<int>();
    m.adam_steps = j.at("adam_steps").get<std::int64_t>();
    for (const auto& g : j.at("groups")) {
      m.names.push_back(g.at("name").get<std::string>());
      m.sizes.push_back(g.at("size").get<std::size_t>());
      m.shards.push_back(g.at("shard").get<std::size_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  if (m.ranks < 1) throw bad("ranks must be >= 1");
  if (m.adam_steps < 0) throw bad("adam_steps must be >= 0");
  for (std::size_t g = 0; g < m.names.size(); ++g)
    if (m.shards[g] != shard_size(m.sizes[g], m.ranks))
      throw bad("group " + m.names[g] + ": shard " + std::to_string(m.shards[g]) + " is not that of " +
                std::to_string(m.sizes[g]) + " elements on " + std::to_string(m.ranks) + " ranks");
  return m;
}

fs::path shard_file(const fs::path& dir, int rank) {
  char name[48];
  std::snprintf(name, sizeof name, "rank_%05d.safetensors", rank);
  return dir / name;
}

namespace {

// [lo, hi) of rank q's slice of a group of `size` elements in shards of `shard`.
std::pair<std::size_t, std::size_t> slice_range(std::size_t size, std::size_t shard, int q) {
  const std::size_t lo = std::min(size, std::size_t(q) * shard);
  return {lo, std::min(size, lo + shard)};
}

}  // namespace

void write_shard(const fs::path& dir, int rank, const ShardManifest& manifest, const std::vector<ShardSlice>& slices) {
  io::SafetensorsWriter w;
  for (std::size_t g = 0; g < slices.size(); ++g) {
    const ShardSlice& s = slices[g];
    const std::vector<std::int64_t> shape = {std::int64_t(s.count)};
    w.add<float>("w/" + manifest.names[g], shape, std::span<const float>(s.w, s.count));
    w.add<float>("m/" + manifest.names[g], shape, std::span<const float>(s.m, s.count));
    w.add<float>("v/" + manifest.names[g], shape, std::span<const float>(s.v, s.count));
  }
  w.set_metadata("format", "zpp-train zero shard");
  w.set_metadata("rank", std::to_string(rank));
  w.set_metadata("ranks", std::to_string(manifest.ranks));
  w.write(shard_file(dir, rank));
}

ShardReader::ShardReader(const fs::path& dir) : dir_(dir), state_(train::read_checkpoint_state(dir)) {
  const std::string where = (dir / "state.json").string();
  if (!state_.contains(train::kShardManifestKey))
    throw UsageError("checkpoint " + dir.string() + " is not sharded (state.json has no '" +
                     train::kShardManifestKey + "'): it is already one full checkpoint");
  manifest_ = ShardManifest::from_json(state_[train::kShardManifestKey], where);
  files_.resize(manifest_.ranks);
}

ShardReader::~ShardReader() = default;

const io::SafetensorsFile& ShardReader::file(int rank) {
  if (!files_[rank]) {
    const fs::path p = shard_file(dir_, rank);
    if (!fs::exists(p))
      throw InputMissingError("checkpoint " + dir_.string() + ": shard " + p.filename().string() + " of rank " +
                              std::to_string(rank) + " (of " + std::to_string(manifest_.ranks) + ") is missing");
    files_[rank] = std::make_unique<io::SafetensorsFile>(p, io::SafetensorsFile::Mode::mmap);
  }
  return *files_[rank];
}

void ShardReader::read(char kind, int g, std::size_t lo, std::size_t hi, float* out) {
  const std::size_t S = manifest_.sizes[g], s = manifest_.shards[g];
  const std::string name = std::string(1, kind) + "/" + manifest_.names[g];
  for (std::size_t at = lo; at < hi;) {
    const int q = int(at / s);
    const auto [qlo, qhi] = slice_range(S, s, q);
    const io::SafetensorsFile& f = file(q);
    if (!f.contains(name) || f.get(name).dtype != "F32" || f.get(name).numel() != qhi - qlo)
      throw DataError(shard_file(dir_, q).string() + ": tensor '" + name + "' is missing or not F32 of " +
                      std::to_string(qhi - qlo) + " elements");
    const std::size_t end = std::min(hi, qhi);
    std::memcpy(out + (at - lo), f.get(name).bytes.data() + (at - qlo) * sizeof(float), (end - at) * sizeof(float));
    at = end;
  }
}

nlohmann::json consolidate(const fs::path& from, const fs::path& out_root) {
  const fs::path dir = train::resolve_checkpoint_folder(from, from.string());
  ShardReader reader(dir);
  const ShardManifest& m = reader.manifest();
  const train::ModelConfig config = train::model_config_from_state(reader.state(), dir);
  const train::ParamLayout layout(config);
  if (layout.num_groups() != int(m.names.size()))
    throw DataError((dir / "state.json").string() + ": the manifest has " + std::to_string(m.names.size()) +
                    " parameter groups, the model it describes " + std::to_string(layout.num_groups()));
  train::FlatBuffers<float> params(layout);
  train::AdamW<float> opt(layout, {});
  for (int g = 0; g < layout.num_groups(); ++g) {
    if (layout.groups()[g].name != m.names[g] || layout.groups()[g].size != m.sizes[g])
      throw DataError((dir / "state.json").string() + ": manifest group " + std::to_string(g) + " (" + m.names[g] +
                      ", " + std::to_string(m.sizes[g]) + " elements) is not the model's " + layout.groups()[g].name);
    reader.read('w', g, 0, m.sizes[g], params.group(g));
    reader.read('m', g, 0, m.sizes[g], opt.m().group(g));
    reader.read('v', g, 0, m.sizes[g], opt.v().group(g));
  }
  opt.set_steps_taken(m.adam_steps);
  nlohmann::json state = reader.state();
  state.erase(train::kShardManifestKey);
  state["consolidated_from"] = {{"checkpoint", dir.string()}, {"ranks", m.ranks}};
  const std::int64_t step = state.at("step").get<std::int64_t>();
  const fs::path written = train::save_checkpoint(out_root, step, params, opt, state, 0);
  return {{"checkpoint", written.string()}, {"step", step}, {"ranks", m.ranks},
          {"parameters", layout.parameter_count()}};
}

}  // namespace core::zero
