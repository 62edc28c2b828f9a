// Seeded random numbers (xoshiro256**, seeded through SplitMix64). split(k) derives an
// independent stream for rank or thread k, so results do not depend on scheduling.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace core {

class Rng {
 public:
  using result_type = std::uint64_t;
  explicit Rng(std::uint64_t seed = 0) { seed_state(seed); }

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return next(); }

  // Independent stream k derived from this generator's seed (not its current position).
  Rng split(std::uint64_t k) const { return Rng(mix(seed_ ^ mix(k + 0x9e3779b97f4a7c15ULL))); }

  double uniform() { return (next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  std::uint64_t below(std::uint64_t n) {  // [0, n), unbiased
    const std::uint64_t limit = max() - max() % n;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return x % n;
  }
  double normal() {  // Box-Muller, one value per call
    double u1;
    do u1 = uniform();
    while (u1 <= 0.0);
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::uint64_t seed() const { return seed_; }

 private:
  static std::uint64_t mix(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  void seed_state(std::uint64_t seed) {
    seed_ = seed;
    std::uint64_t z = seed;
    for (auto& w : s_) w = mix(z += 0x9e3779b97f4a7c15ULL);
  }
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  std::uint64_t seed_ = 0;
  std::uint64_t s_[4];
};

}  // namespace core
