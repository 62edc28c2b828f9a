// What the ZeRO engines (engine.hpp on host buffers, device_engine.hpp on device buffers) do alike over
// a communicator of host buffers: rank 0's JSON values and training state on every rank, the per-step
// link bytes averaged over ranks, writing a sharded checkpoint folder (every rank its shard, then rank
// 0 the manifest and DONE) and opening one whose groups must be the model's, and the run summary's
// description of the ZeRO configuration; the per-step bytes and their mean over the run.
#pragma once
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "comm/communicator.hpp"
#include "train/model.hpp"
#include "train/optimizer.hpp"
#include "zero/link_counter.hpp"
#include "zero/options.hpp"
#include "zero/sharded_checkpoint.hpp"
#include "zero/topology.hpp"

namespace core::zero {

// Rank 0's value on every rank of `host`.
nlohmann::json broadcast_json(comm::Communicator& host, const nlohmann::json& value);

// Rank 0's weights and AdamW moments of group g on every rank: allocates them where they are not resident,
// read(g) fills rank 0's (called on rank 0 only), then broadcasts them.
void broadcast_group_state(comm::Communicator& host, train::Model<float>& model, train::AdamW<float>& opt, int g,
                           const std::function<void(int)>& read);

// The mean over the ranks of `host` of each rank's bytes (intra, inter).
std::pair<double, double> mean_link_bytes(comm::Communicator& host, const LinkBytes& mine);

// The bytes_per_step of the metrics and the summary: each step's link bytes averaged over the ranks
// (collective over `host`), and their mean over the steps recorded.
class StepBytes {
 public:
  nlohmann::json record(comm::Communicator& host, const LinkBytes& mine);  // {intra, inter} of this step
  nlohmann::json mean() const;                                             // over the steps so far
 private:
  double intra_ = 0, inter_ = 0;
  std::int64_t steps_ = 0;
};

// The shard range [lo, hi) rank r owns of a group of `size` elements in shards of `shard`.
inline std::pair<std::size_t, std::size_t> owned_range(std::size_t size, std::size_t shard, int r) {
  const std::size_t lo = std::min(size, std::size_t(r) * shard);
  return {lo, std::min(size, lo + shard)};
}

// The buckets in which stages 0 and 1 reduce the gradients after backward: the groups from last to first
// (the order backward finishes them), a bucket closing once it holds `bucket_elems` elements
// (reduce_bucket_size) and at group 0.
std::vector<std::vector<int>> reduce_buckets(const std::vector<std::size_t>& group_sizes, std::size_t bucket_elems);

// Writes the checkpoint folder of `step` under `root` (rank 0's argument counts): this rank's slices,
// then on rank 0, once every rank reports its shard written, state.json (`state`, step and manifest)
// and DONE; older checkpoints beyond `keep` are pruned. IoError on every rank when a shard failed.
fs::path write_sharded_checkpoint(comm::Communicator& host, const fs::path& root, std::int64_t step,
                                  const nlohmann::json& state, int keep, const ShardManifest& manifest,
                                  const std::vector<ShardSlice>& slices);

// Opens the sharded checkpoint folder rank 0 names. DataError unless it holds the groups of `mine`.
std::unique_ptr<ShardReader> open_shards(comm::Communicator& host, const fs::path& dir_on_rank0, const ShardManifest& mine);

// The "zero" object of the summary: options, bf16, ranks and nodes.
nlohmann::json zero_summary(const ZeroOptions& z, bool bf16, const Topology& t);

}  // namespace core::zero
