// The engines' common bookkeeping of groups, shards and buckets (see group_shards.hpp).
#include "zero/group_shards.hpp"

namespace core::zero {

using Pass = train::Model<float>::Pass;

std::size_t shard_size(std::size_t size, int parts) {
  const std::size_t per = (size + parts - 1) / parts;
  return (per + 15) / 16 * 16;
}

int next_group_in_pass(int g, int G, Pass pass) {
  if (pass == Pass::forward) return g + 1 < G ? g + 1 : -1;  // embed, blocks 0 .. L-1
  if (g == 0) return G > 1 ? G - 1 : -1;                     // head and embed, blocks L-1 .. 0
  return g >= 2 ? g - 1 : -1;
}

std::vector<std::vector<int>> allgather_buckets(const std::vector<std::size_t>& group_sizes, std::size_t bucket_elems) {
  std::vector<std::vector<int>> buckets;
  std::vector<int> bucket;
  std::size_t elems = 0;
  const int G = int(group_sizes.size());
  for (int g = 0; g < G; ++g) {
    bucket.push_back(g);
    elems += group_sizes[g];
    if (elems < bucket_elems && g + 1 < G) continue;
    buckets.push_back(std::exchange(bucket, {}));
    elems = 0;
  }
  return buckets;
}

std::vector<int> GroupShards::prefetch_after(int g, Pass pass, std::size_t budget) const {
  std::vector<int> ahead;
  std::size_t elems = 0;
  const int G = groups();
  for (int n = next_group_in_pass(g, G, pass); n >= 0 && elems < budget; n = next_group_in_pass(n, G, pass)) {
    ahead.push_back(n);
    elems += size[n];
  }
  return ahead;
}

ShardManifest GroupShards::manifest(const train::ParamLayout& layout, int ranks, std::int64_t adam_steps) const {
  ShardManifest m;
  m.ranks = ranks;
  m.adam_steps = adam_steps;
  for (int g = 0; g < groups(); ++g) {
    m.names.push_back(layout.groups()[g].name);
    m.sizes.push_back(size[g]);
    m.shards.push_back(shard[g]);
  }
  return m;
}

}  // namespace core::zero
