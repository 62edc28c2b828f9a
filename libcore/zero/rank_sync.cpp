// Host-side steps the ZeRO engines share (see rank_sync.hpp).
#include "zero/rank_sync.hpp"

#include <string>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "train/checkpoint.hpp"
#include "train/data_parallel.hpp"

namespace core::zero {

using comm::DType;
using comm::ReduceOp;

nlohmann::json broadcast_json(comm::Communicator& host, const nlohmann::json& value) {
  std::string text = host.rank() == 0 ? value.dump() : std::string();
  std::uint64_t len = text.size();
  host.broadcast(&len, sizeof len, DType::u8, 0);
  text.resize(len);
  host.broadcast(text.data(), len, DType::u8, 0);
  return nlohmann::json::parse(text);
}

void broadcast_group_state(comm::Communicator& host, train::Model<float>& model, train::AdamW<float>& opt, int g,
                           const std::function<void(int)>& read) {
  const std::size_t S = model.params().group_size(g);
  for (auto* buffers : {&model.params(), &opt.m(), &opt.v()}) buffers->allocate(g);
  if (host.rank() == 0) read(g);
  for (auto* buffers : {&model.params(), &opt.m(), &opt.v()}) host.broadcast(buffers->group(g), S, DType::f32, 0);
}

std::vector<std::vector<int>> reduce_buckets(const std::vector<std::size_t>& group_sizes, std::size_t bucket_elems) {
  std::vector<std::vector<int>> buckets(1);
  std::size_t elems = 0;
  for (int g = int(group_sizes.size()) - 1; g >= 0; --g) {
    buckets.back().push_back(g);
    elems += group_sizes[g];
    if (elems >= bucket_elems && g > 0) {
      buckets.emplace_back();
      elems = 0;
    }
  }
  if (buckets.back().empty()) buckets.pop_back();
  return buckets;
}

std::pair<double, double> mean_link_bytes(comm::Communicator& host, const LinkBytes& mine) {
  const int N = host.size();
  std::vector<std::uint64_t> all(2 * N);
  const std::uint64_t pair[2] = {mine.intra, mine.inter};
  host.all_gather(pair, all.data(), sizeof pair, DType::u8);
  double intra = 0, inter = 0;
  for (int q = 0; q < N; ++q) {
    intra += double(all[2 * q]);
    inter += double(all[2 * q + 1]);
  }
  return {intra / N, inter / N};
}

nlohmann::json StepBytes::record(comm::Communicator& host, const LinkBytes& mine) {
  const auto [intra, inter] = mean_link_bytes(host, mine);
  intra_ += intra;
  inter_ += inter;
  ++steps_;
  return {{"intra", intra}, {"inter", inter}};
}

nlohmann::json StepBytes::mean() const {
  const double steps = steps_ > 0 ? double(steps_) : 1.0;
  return {{"intra", intra_ / steps}, {"inter", inter_ / steps}};
}

fs::path write_sharded_checkpoint(comm::Communicator& host, const fs::path& root, std::int64_t step,
                                  const nlohmann::json& state, int keep, const ShardManifest& manifest,
                                  const std::vector<ShardSlice>& slices) {
  const int r = host.rank(), N = host.size();
  const fs::path dir = train::checkpoint_folder(root, step);
  if (r == 0) {  // a folder of this step left by an interrupted save is written again
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (ec) throw IoError("cannot create checkpoint folder " + dir.string() + ": " + ec.message());
  }
  const fs::path at = broadcast_json(host, dir.string()).get<std::string>();  // (after rank 0 made it)
  std::string error;
  try {
    write_shard(at, r, manifest, slices);
  } catch (const std::exception& e) {
    error = e.what();
  }
  float failed = error.empty() ? 0.0f : 1.0f;  // every rank learns whether all shards are on disk
  host.all_reduce(&failed, &failed, 1, DType::f32, ReduceOp::sum);
  if (!error.empty()) throw IoError(error);
  if (failed > 0)
    throw IoError("checkpoint " + at.string() + ": " + std::to_string(int(failed)) + " of " + std::to_string(N) +
                  " ranks could not write their shard (see their messages); the folder stays incomplete");
  if (r == 0) {
    nlohmann::json manifest_state = state;
    manifest_state["step"] = step;
    manifest_state[train::kShardManifestKey] = manifest.to_json();
    write_file_atomic(at / "state.json", manifest_state.dump(2) + "\n");
    write_file_atomic(at / "DONE", "");
    train::prune_checkpoints(root, keep);
  }
  return at;
}

std::unique_ptr<ShardReader> open_shards(comm::Communicator& host, const fs::path& dir_on_rank0, const ShardManifest& mine) {
  const fs::path dir = broadcast_json(host, dir_on_rank0.string()).get<std::string>();
  auto reader = std::make_unique<ShardReader>(dir);  // on the file system every rank shares
  const ShardManifest& m = reader->manifest();
  if (m.names != mine.names || m.sizes != mine.sizes)
    throw DataError((dir / "state.json").string() + ": the shards hold other parameter groups than the model's");
  return reader;
}

nlohmann::json zero_summary(const ZeroOptions& z, bool bf16, const Topology& t) {
  return {{"stage", z.stage},
          {"zero_quantized_weights", z.zero_quantized_weights},
          {"zero_hpz_partition_size", z.zero_hpz_partition_size},
          {"zero_quantized_gradients", z.zero_quantized_gradients},
          {"bf16", bf16},
          {"ranks", t.world_size},
          {"ranks_per_node", t.ranks_per_node},
          {"nodes", t.nodes}};
}

}  // namespace core::zero
