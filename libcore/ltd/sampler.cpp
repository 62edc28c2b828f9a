// Sorted token subsets per (step, rank, layer, sequence) (see sampler.hpp); the hash and the selection
// sampling are kernels/token_routing.hpp's, which the device kernel runs too.
#include "ltd/sampler.hpp"

#include "kernels/token_routing.hpp"

namespace core::ltd {

namespace {
std::uint64_t key_hash(const SubsetKey& k) {
  return kernels::routing::subset_key(k.seed, k.step, k.rank, k.layer, k.sequence);
}
}  // namespace

void sample_sorted_subset(const SubsetKey& key, int n, int r, std::int32_t* out) {
  kernels::routing::sample_sorted_subset(key_hash(key), n, r, out);
}

std::vector<train::TokenSubset> draw_token_subsets(const RoutingPlan& plan, int kept, std::int64_t step, int rank,
                                                   int micro, int B, int n) {
  std::vector<train::TokenSubset> subsets(plan.n_layer);
  if (!plan.dropping || kept >= n) return subsets;
  for (int layer : plan.layers) {
    train::TokenSubset& s = subsets[layer];
    s.kept = kept;
    s.positions.resize(std::size_t(B) * kept);
    for (int b = 0; b < B; ++b) {
      const SubsetKey key{plan.seed, step, rank, layer, std::int64_t(micro) * B + b};
      sample_sorted_subset(key, n, kept, s.positions.data() + std::size_t(b) * kept);
    }
  }
  return subsets;
}

train::TokenRouting device_token_routing(const RoutingPlan& plan, int kept, std::int64_t step, int rank, int micro,
                                         int B) {
  if (!plan.dropping || kept >= plan.seq_len) return {};
  return {plan.layers, kept, plan.seed, step, rank, std::int64_t(micro) * B};
}

}  // namespace core::ltd
