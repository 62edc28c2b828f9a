// Counter-based random numbers and selection sampling of sorted token subsets (see sampler.hpp).
#include "ltd/sampler.hpp"

namespace core::ltd {

namespace {
// MurmurHash3's 64-bit finaliser (a bijection with full avalanche).
std::uint64_t fmix(std::uint64_t z) {
  z ^= z >> 33;
  z *= 0xff51afd7ed558ccdULL;
  z ^= z >> 33;
  z *= 0xc4ceb9fe1a85ec53ULL;
  return z ^ (z >> 33);
}
// Folds one more key field into the hash state.
std::uint64_t absorb(std::uint64_t h, std::uint64_t field) { return fmix(h ^ fmix(field + 0x9e3779b97f4a7c15ULL)); }

std::uint64_t key_hash(const SubsetKey& k) {
  std::uint64_t h = fmix(k.seed ^ 0x5851f42d4c957f2dULL);
  h = absorb(h, static_cast<std::uint64_t>(k.step));
  h = absorb(h, static_cast<std::uint64_t>(k.rank));
  h = absorb(h, static_cast<std::uint64_t>(k.layer));
  return absorb(h, static_cast<std::uint64_t>(k.sequence));
}

std::uint64_t draw(std::uint64_t key, std::uint64_t counter) {
  return fmix(key ^ fmix(counter * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL));
}
}  // namespace

std::uint64_t counter_random(const SubsetKey& key, std::uint64_t counter) { return draw(key_hash(key), counter); }

void sample_sorted_subset(const SubsetKey& key, int n, int r, std::int32_t* out) {
  const std::uint64_t k = key_hash(key);
  int taken = 0;
  for (int i = 0; i < n && taken < r; ++i) {
    const std::uint64_t left = std::uint64_t(n - i), needed = std::uint64_t(r - taken);
    // A uniform integer in [0, left) by the multiply-shift map (bias below left / 2^64).
    const std::uint64_t u = static_cast<std::uint64_t>((static_cast<unsigned __int128>(draw(k, i)) * left) >> 64);
    if (u < needed) out[taken++] = i;
  }
}

std::vector<train::TokenSubset> draw_token_subsets(const RoutingPlan& plan, int kept, std::int64_t step, int rank,
                                                   int micro, int B) {
  std::vector<train::TokenSubset> subsets(plan.n_layer);
  if (!plan.dropping || kept >= plan.seq_len) return subsets;
  for (int layer : plan.layers) {
    train::TokenSubset& s = subsets[layer];
    s.kept = kept;
    s.positions.resize(std::size_t(B) * kept);
    for (int b = 0; b < B; ++b) {
      const SubsetKey key{plan.seed, step, rank, layer, std::int64_t(micro) * B + b};
      sample_sorted_subset(key, plan.seq_len, kept, s.positions.data() + std::size_t(b) * kept);
    }
  }
  return subsets;
}

}  // namespace core::ltd
