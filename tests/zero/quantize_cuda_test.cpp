// ZeRO++'s device quantizers (zero/quantize_cuda.hpp) against the CPU reference (zero/quantize.hpp), bit
// for bit: int8 and int4 codes and fp32 scales, dequantized values, and qgZ's fused dequantize-and-sum over
// strided spans, on random data with zero and constant blocks, ragged tails (n not a multiple of the block,
// odd n for int4), block sizes that take the vector path (multiples of 8) and the scalar one, quantized by
// one warp (blocks of up to 64 threads' work) or by a whole thread block, and
// misaligned buffers. Exits 77 (skipped) where no CUDA device answers; test_zero_cuda_emulated runs the same
// cases on the SIMT emulator (tests/support/simt).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "device_or_skip.hpp"
#include "common/errors.hpp"
#include "common/rng.hpp"
#include "zero/quantize.hpp"
#include "zero/quantize_cuda.hpp"

using core::kernels::DeviceBuffer;
namespace zero = core::zero;

namespace {

const bool kHaveDevice = core::test::device_or_skip("device quantizer tests");

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Normal values with a zero block at the start and constant blocks in the middle.
std::vector<float> test_data(std::size_t n, std::size_t block, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<float> x(n);
  for (auto& v : x) v = float(rng.normal() * 3.0);
  for (std::size_t i = 0; i < block && i < n; ++i) x[i] = 0.0f;
  for (std::size_t i = 2 * block; i < 3 * block && i < n; ++i) x[i] = -0.25f;
  for (std::size_t i = 3 * block; i < 4 * block && i < n; ++i) x[i] = i % 2 ? 1e-30f : -0.0f;  // tiny absmax
  return x;
}

// Device buffer of n elements starting `offset` elements into an allocation (misaligned for offset 1).
template <class T>
struct Offset {
  Offset(std::size_t n, std::size_t offset) : buffer(n + offset), offset(offset), n(n) {}
  T* data() { return buffer.data() + offset; }
  std::vector<T> download() const {
    const auto all = buffer.download();
    return std::vector<T>(all.begin() + std::ptrdiff_t(offset), all.end());
  }
  void upload(const std::vector<T>& v) {
    std::vector<T> all(offset, T{});
    all.insert(all.end(), v.begin(), v.end());
    buffer.upload(all);
  }
  DeviceBuffer<T> buffer;
  std::size_t offset, n;
};

void check_int8(std::size_t n, std::size_t block, std::size_t offset) {
  CAPTURE(n);
  CAPTURE(block);
  CAPTURE(offset);
  const auto x = test_data(n, block, n * 31 + block);
  const std::size_t nb = zero::block_count(n, block);
  std::vector<std::int8_t> codes(n);
  std::vector<float> scales(nb), back(n);
  zero::quantize_int8(x.data(), n, block, codes.data(), scales.data());
  zero::dequantize_int8(codes.data(), scales.data(), n, block, back.data());

  Offset<float> dx(n, offset), dback(n, offset);
  Offset<std::int8_t> dcodes(n, offset);
  DeviceBuffer<float> dscales(nb);
  dx.upload(x);
  zero::device::quantize_int8(dx.data(), n, block, dcodes.data(), dscales.data());
  CHECK(same_bytes(dcodes.download(), codes));
  CHECK(same_bytes(dscales.download(), scales));
  zero::device::dequantize_int8(dcodes.data(), dscales.data(), n, block, dback.data());
  CHECK(same_bytes(dback.download(), back));
}

void check_int4(std::size_t n, std::size_t block, std::size_t offset) {
  CAPTURE(n);
  CAPTURE(block);
  CAPTURE(offset);
  const auto x = test_data(n, block, n * 37 + block);
  const std::size_t nb = zero::block_count(n, block), cb = zero::int4_bytes(n);
  std::vector<std::uint8_t> packed(cb);
  std::vector<float> scales(nb), back(n);
  zero::quantize_int4(x.data(), n, block, packed.data(), scales.data());
  zero::dequantize_int4(packed.data(), scales.data(), n, block, back.data());

  Offset<float> dx(n, offset), dback(n, offset);
  Offset<std::uint8_t> dpacked(cb, offset);
  DeviceBuffer<float> dscales(nb);
  dx.upload(x);
  zero::device::quantize_int4(dx.data(), n, block, dpacked.data(), dscales.data());
  CHECK(same_bytes(dpacked.download(), packed));
  CHECK(same_bytes(dscales.download(), scales));
  zero::device::dequantize_int4(dpacked.data(), dscales.data(), n, block, dback.data());
  CHECK(same_bytes(dback.download(), back));
}

}  // namespace

TEST_CASE("device int8 codes, scales and dequantized values equal the CPU quantizer's bit for bit") {
  // 64, 5, 40, 256 and 512: one warp a block; 520 and 2048: a thread block a block.
  for (const std::size_t block : {64, 2048, 5, 40, 256, 512, 520})
    for (const std::size_t n : {std::size_t{1}, std::size_t{13}, 4 * block + 3, std::size_t{4096}})
      check_int8(n, block, 0);
  check_int8(1000, 64, 1);  // misaligned buffers: the scalar path
}

TEST_CASE("device int4 nibbles, scales and dequantized values equal the CPU quantizer's bit for bit") {
  for (const std::size_t block : {2, 64, 2048, 38, 256, 512, 520})
    for (const std::size_t n : {std::size_t{1}, std::size_t{13}, 4 * block + 3, std::size_t{4096}})
      check_int4(n, block, 0);
  check_int4(1001, 64, 1);
  DeviceBuffer<float> x(4), s(1);
  DeviceBuffer<std::uint8_t> p(2);
  CHECK_THROWS_AS(zero::device::quantize_int4(x.data(), 4, 3, p.data(), s.data()), core::UsageError);
}

TEST_CASE("qgZ's fused device dequantize-and-sum equals the CPU reduction bit for bit") {
  // 3 inputs interleaved as in qgZ's intra-node step (input j of destination m at position j * nodes + m).
  for (const std::size_t block : {std::size_t{64}, std::size_t{30}}) {
    const std::size_t n = 999, nodes = 2, inputs = 3, cb = zero::int4_bytes(n), nb = zero::block_count(n, block);
    CAPTURE(block);
    std::vector<std::uint8_t> packed(nodes * inputs * cb);
    std::vector<float> scales(nodes * inputs * nb);
    for (std::size_t p = 0; p < nodes * inputs; ++p) {
      const auto x = test_data(n, block, 100 + p);
      zero::quantize_int4(x.data(), n, block, packed.data() + p * cb, scales.data() + p * nb);
    }
    DeviceBuffer<std::uint8_t> dpacked{std::span<const std::uint8_t>(packed)};
    DeviceBuffer<float> dscales{std::span<const float>(scales)}, dout(n);
    for (std::size_t m = 0; m < nodes; ++m) {
      std::vector<float> want(n);
      zero::dequantize_sum_int4(packed.data() + m * cb, nodes * cb, scales.data() + m * nb, nodes * nb, int(inputs), n,
                                block, 1.0f / 3.0f, want.data());
      zero::device::dequantize_sum_int4(dpacked.data() + m * cb, nodes * cb, dscales.data() + m * nb, nodes * nb,
                                        int(inputs), n, block, 1.0f / 3.0f, dout.data());
      CHECK(same_bytes(dout.download(), want));
    }
  }
}
