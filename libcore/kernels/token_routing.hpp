// Token routing of random-LTD (Yao et al. 2022) on the device, and the pieces the host shares with it.
//   - The counter-based hash and selection sampling (Knuth, TAOCP vol. 2, Algorithm 3.4.2 S) that draw a
//     sequence's sorted r-subset of its n positions: inline, host and device, so core::ltd's sampler (the
//     CPU reference) and sample_token_subsets below draw the very same subsets. Draw i of a stream is
//     fmix(key ^ fmix(i * A + B)) with MurmurHash3's finaliser; a key folds in (seed, step, rank, layer,
//     sequence) one field at a time.
//   - gather_rows / scatter_rows: rows of any width in bytes (bf16 or fp32 activations, a uint8 padding
//     mask), as core::train's gather_token_rows / scatter_token_rows (train/token_rows.hpp).
// The launchers need a CUDA build (TOOLKIT_HAVE_CUDA); the inline functions do not.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/runtime.hpp"

#if defined(__CUDACC__)
#define TOOLKIT_HOST_DEVICE __host__ __device__
#else
#define TOOLKIT_HOST_DEVICE
#endif

namespace core::kernels {

namespace routing {

TOOLKIT_HOST_DEVICE inline std::uint64_t fmix(std::uint64_t z) {
  z ^= z >> 33;
  z *= 0xff51afd7ed558ccdULL;
  z ^= z >> 33;
  z *= 0xc4ceb9fe1a85ec53ULL;
  return z ^ (z >> 33);
}

TOOLKIT_HOST_DEVICE inline std::uint64_t absorb(std::uint64_t h, std::uint64_t field) {
  return fmix(h ^ fmix(field + 0x9e3779b97f4a7c15ULL));
}

// The key of the stream of (seed, step, rank, layer, sequence).
TOOLKIT_HOST_DEVICE inline std::uint64_t subset_key(std::uint64_t seed, std::int64_t step, int rank, int layer,
                                                    std::int64_t sequence) {
  std::uint64_t h = fmix(seed ^ 0x5851f42d4c957f2dULL);
  h = absorb(h, static_cast<std::uint64_t>(step));
  h = absorb(h, static_cast<std::uint64_t>(static_cast<std::int64_t>(rank)));
  h = absorb(h, static_cast<std::uint64_t>(static_cast<std::int64_t>(layer)));
  return absorb(h, static_cast<std::uint64_t>(sequence));
}

TOOLKIT_HOST_DEVICE inline std::uint64_t draw(std::uint64_t key, std::uint64_t counter) {
  return fmix(key ^ fmix(counter * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL));
}

// The high 64 bits of a * b.
TOOLKIT_HOST_DEVICE inline std::uint64_t mulhi(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// out[0..r) = a uniform r-subset of [0, n), strictly increasing: position i is kept when a uniform
// integer in [0, n - i) (multiply-shift of draw i; bias below (n - i) / 2^64) is below the number still needed.
TOOLKIT_HOST_DEVICE inline void sample_sorted_subset(std::uint64_t key, int n, int r, std::int32_t* out) {
  int taken = 0;
  for (int i = 0; i < n && taken < r; ++i)
    if (mulhi(draw(key, static_cast<std::uint64_t>(i)), static_cast<std::uint64_t>(n - i)) <
        static_cast<std::uint64_t>(r - taken))
      out[taken++] = i;
}

}  // namespace routing

// dst[b*kept + i] = src[b*T + positions[b*kept + i]] for rows of row_bytes bytes (gather), and the reverse
// (scatter: rows of dst that no position names are left as they are). positions: each sequence's kept
// positions, in [0, T) (device memory).
void gather_rows(void* dst, const void* src, const std::int32_t* positions, int B, int T, int kept,
                 std::size_t row_bytes, Stream stream = nullptr);
void scatter_rows(void* dst, const void* src, const std::int32_t* positions, int B, int T, int kept,
                  std::size_t row_bytes, Stream stream = nullptr);

// positions [num_layers][B][kept]: for layer layers[l] (device array) and sequence b, the subset of the stream
// subset_key(seed, step, rank, layers[l], sequence0 + b), as core::ltd::draw_token_subsets draws it.
void sample_token_subsets(std::int32_t* positions, const std::int32_t* layers, int num_layers, std::uint64_t seed,
                          std::int64_t step, int rank, std::int64_t sequence0, int B, int T, int kept,
                          Stream stream = nullptr);

}  // namespace core::kernels
