// The random-LTD kernels (kernels/token_routing.hpp) against their CPU references: the device's subsets
// equal core::ltd's sampler (the same hash and selection sampling) for every (layer, sequence), up to
// 8192 positions; gather / scatter of bf16 rows (16-byte units), fp32 rows of 3 values (4-byte units) and
// a uint8 padding mask (1-byte units) equal core::train's gather_token_rows / scatter_token_rows bit for
// bit, and scatter leaves the rows no position names as they were. Exits 77 (skipped) where no CUDA device
// answers; test_ltd_kernels_emulated runs the same cases on the SIMT emulator (tests/support/simt).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>
#include <random>
#include <vector>

#include "device_or_skip.hpp"
#include "kernels/bf16.hpp"
#include "kernels/token_routing.hpp"
#include "ltd/sampler.hpp"
#include "train/token_rows.hpp"

using namespace core::kernels;

namespace {

const bool kHaveDevice = core::test::device_or_skip("random-LTD kernel tests");

template <class T>
DeviceBuffer<T> upload(const std::vector<T>& v) {
  return DeviceBuffer<T>(std::span<const T>(v));
}

// Sorted random positions per sequence (from the host sampler, any valid subsets would do).
std::vector<std::int32_t> positions_for(int B, int T, int kept, std::uint64_t seed) {
  std::vector<std::int32_t> p(std::size_t(B) * kept);
  for (int b = 0; b < B; ++b) core::ltd::sample_sorted_subset({seed, 0, 0, 1, b}, T, kept, p.data() + std::size_t(b) * kept);
  return p;
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
void check_gather_scatter(int B, int Tn, int kept, int C, const std::vector<T>& src_full, const std::vector<T>& src_kept) {
  const auto pos = positions_for(B, Tn, kept, 17 + C);
  auto dpos = upload(pos);
  // gather
  std::vector<T> want(std::size_t(B) * kept * C);
  core::train::gather_token_rows(want.data(), src_full.data(), pos.data(), B, Tn, kept, C);
  auto dfull = upload(src_full);
  DeviceBuffer<T> dk(want.size());
  gather_rows(dk.data(), dfull.data(), dpos.data(), B, Tn, kept, C * sizeof(T));
  CHECK(same_bytes(dk.download(), want));
  // scatter onto a copy of src_full: the other rows stay
  std::vector<T> want_full = src_full;
  core::train::scatter_token_rows(want_full.data(), src_kept.data(), pos.data(), B, Tn, kept, C);
  auto dkept = upload(src_kept);
  scatter_rows(dfull.data(), dkept.data(), dpos.data(), B, Tn, kept, C * sizeof(T));
  CHECK(same_bytes(dfull.download(), want_full));
}

}  // namespace

TEST_CASE("device subsets equal the host sampler's, up to 8192 positions") {
  for (const auto& [B, T, kept] : std::vector<std::tuple<int, int, int>>{{3, 64, 16}, {2, 300, 299}, {1, 8192, 1024}}) {
    CAPTURE(T);
    const std::vector<std::int32_t> layers = {1, 2, 5};
    auto dlayers = upload(layers);
    DeviceBuffer<std::int32_t> dpos(layers.size() * B * kept);
    sample_token_subsets(dpos.data(), dlayers.data(), int(layers.size()), 99, 12, 1, 4, B, T, kept);
    const auto got = dpos.download();
    for (std::size_t l = 0; l < layers.size(); ++l)
      for (int b = 0; b < B; ++b) {
        std::vector<std::int32_t> want(kept);
        core::ltd::sample_sorted_subset({99, 12, 1, layers[l], 4 + b}, T, kept, want.data());
        const std::vector<std::int32_t> row(got.begin() + (l * B + b) * kept, got.begin() + (l * B + b + 1) * kept);
        CHECK(row == want);
      }
  }
}

TEST_CASE("gather and scatter equal the CPU reference: bf16, fp32 and uint8 rows") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int B = 3, Tn = 40, kept = 13;
  {
    const int C = 64;  // 128-byte rows: 16-byte units
    std::vector<bf16> full(std::size_t(B) * Tn * C), kept_rows(std::size_t(B) * kept * C);
    for (auto& x : full) x = to_bf16(u(rng));
    for (auto& x : kept_rows) x = to_bf16(u(rng));
    check_gather_scatter(B, Tn, kept, C, full, kept_rows);
  }
  {
    const int C = 3;  // 12-byte rows: 4-byte units
    std::vector<float> full(std::size_t(B) * Tn * C), kept_rows(std::size_t(B) * kept * C);
    for (auto& x : full) x = u(rng);
    for (auto& x : kept_rows) x = u(rng);
    check_gather_scatter(B, Tn, kept, C, full, kept_rows);
  }
  {
    std::vector<std::uint8_t> mask(std::size_t(B) * Tn), kept_mask(std::size_t(B) * kept);  // 1-byte rows
    for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 5 != 0;
    for (std::size_t i = 0; i < kept_mask.size(); ++i) kept_mask[i] = i % 2;
    check_gather_scatter(B, Tn, kept, 1, mask, kept_mask);
  }
}
