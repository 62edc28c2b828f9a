// The host SIMT emulator (tests/support/simt) against the CUDA semantics the kernel tests rely on:
// shuffles (CUDA programming guide, warp shuffle functions), barriers, WMMA products (a naive
// product), and that it reports what the device would get wrong or hang on: a read of shared memory
// written by another thread without a barrier, a deadlock, a collective over lanes that ended.
#include "simt.hpp"
// (the emulator first)
#include <doctest/doctest.h>

#include <vector>

#include "kernels/device_utils.cuh"
#include "kernels/mma.cuh"

namespace {

using core::kernels::dev::bf;
using core::kernels::dev::launch;

__global__ void shuffle_kernel(int* out, int lane_mask, int width) {
  const int lane = threadIdx.x % 32;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 100 * static_cast<int>(threadIdx.x / 32) + lane, lane_mask, width);
}

TEST_CASE(
    "__shfl_xor_sync exchanges within a warp; a partner in a later group of `width` lanes gives the caller's value") {
  std::vector<int> out(64);
  launch(shuffle_kernel, 1, 64, 0, nullptr, out.data(), 5, 32);
  for (int t = 0; t < 64; ++t) CHECK(out[t] == 100 * (t / 32) + ((t % 32) ^ 5));
  launch(shuffle_kernel, 1, 64, 0, nullptr, out.data(), 16, 16);  // xor 16 crosses the groups of 16:
  for (int t = 0; t < 64; ++t)                                    // only towards earlier ones
    CHECK(out[t] == 100 * (t / 32) + (t % 32 < 16 ? t % 32 : t % 32 - 16));
}

// out[t] = __shfl_sync of lane * 10 + warp * 1000 from src_lane, over groups of `width` lanes.
__global__ void broadcast_kernel(int* out, int src_lane, int width) {
  const int lane = threadIdx.x % 32;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10 + 1000 * static_cast<int>(threadIdx.x / 32), src_lane, width);
}

// The CUDA programming guide: __shfl_sync returns var of lane srcLane of the caller's group of
// `width` lanes, srcLane taken modulo width; PTX shfl.sync (CUDA's c = ((32 - width) << 8) | 0x1f):
// only bits 4..0 of srcLane / laneMask count, so -1 is lane width - 1 and a laneMask of 33 is 1.
TEST_CASE("__shfl_sync reads lane srcLane mod width of the caller's group; only 5 bits of a lane argument count") {
  std::vector<int> out(64);
  launch(broadcast_kernel, 1, 64, 0, nullptr, out.data(), 11, 8);  // lane 3 of each group of 8
  CHECK(out[0] == 30);
  CHECK(out[13] == 110);   // group 1: lane 8 + 3
  CHECK(out[31] == 270);   // group 3: lane 24 + 3
  CHECK(out[36] == 1030);  // warp 1, group 0: lane 3
  launch(broadcast_kernel, 1, 64, 0, nullptr, out.data(), -1, 16);  // the last lane of each group of 16
  CHECK(out[0] == 150);
  CHECK(out[20] == 310);
  launch(broadcast_kernel, 1, 32, 0, nullptr, out.data(), 5, 1);  // width 1: every lane its own value
  for (int t = 0; t < 32; ++t) CHECK(out[t] == 10 * t);
  launch(shuffle_kernel, 1, 32, 0, nullptr, out.data(), 33, 32);
  CHECK(out[6] == 7);
  CHECK(out[7] == 6);
  CHECK_THROWS_WITH_AS(launch(broadcast_kernel, 1, 32, 0, nullptr, out.data(), 0, 12), doctest::Contains("width 12"),
                       simt::EmulationError);
}

// Thread t writes shared[t], then reads shared[(t + 37) % n], with or without a barrier between;
// block b writes out[b * n + t].
__global__ void neighbour_kernel(float* out, bool barrier) {
  float* shared = reinterpret_cast<float*>(core::kernels::dev::dynamic_smem());
  shared[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = shared[(threadIdx.x + 37) % blockDim.x];
}

TEST_CASE("shared memory written by another thread is seen after __syncthreads, and unwritten (NaN) without it") {
  const int n = 128;
  std::vector<float> out(2 * n);
  launch(neighbour_kernel, 2, n, n * sizeof(float), nullptr, out.data(), true);
  for (int t = 0; t < 2 * n; ++t) CHECK(out[t] == static_cast<float>((t % n + 37) % n));
  launch(neighbour_kernel, 2, n, n * sizeof(float), nullptr, out.data(), false);
  // Block 0 runs its threads in index order: thread t < n - 37 reads slot t + 37 before its writer
  // ran. Block 1 runs them in reverse: the last 37 threads read slots 0..36 before theirs ran.
  for (int t = 0; t < n; ++t) {
    CAPTURE(t);
    CHECK(std::isnan(out[t]) == (t < n - 37));
    CHECK(std::isnan(out[n + t]) == (t >= n - 37));
  }
}

// Warp 0's lower half waits at __syncthreads while its upper half waits for the whole warp.
__global__ void deadlock_kernel() {
  if (threadIdx.x < 16)
    __syncthreads();
  else
    __syncwarp();
}

// The upper half of each warp ends; the lower half then synchronises and shuffles over the full
// warp, reading lane ^ lane_mask.
__global__ void ended_lanes_kernel(int* out, int lane_mask) {
  if (threadIdx.x % 32 >= 16) return;
  __syncwarp();
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), lane_mask);
}

// Lanes 0 and 1 end; the others shuffle with xor 1 over the full warp. In block 1 (threads run in
// reverse order) lanes 2..31 wait at the shuffle before lanes 1 and 0 end.
__global__ void late_exit_kernel(int* out) {
  if (threadIdx.x < 2) return;
  out[blockIdx.x * 32 + threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

// The CUDA programming guide (__syncwarp, warp shuffle functions): "all non-exited threads named in
// mask must execute" the same call: lanes that exited do not hold a full-mask barrier or shuffle up,
// but reading the value of one is undefined.
TEST_CASE("warp collectives whose mask names exited lanes wait only for the others; reading an exited lane fails") {
  std::vector<int> out(64, -1);
  launch(ended_lanes_kernel, 1, 64, 0, nullptr, out.data(), 1);
  for (int t = 0; t < 64; ++t) CHECK(out[t] == (t % 32 < 16 ? t ^ 1 : -1));
  launch(late_exit_kernel, 2, 32, 0, nullptr, out.data());
  for (int t = 2; t < 32; ++t) CHECK((out[t] == (t ^ 1) && out[32 + t] == (t ^ 1)));
  CHECK_THROWS_WITH_AS(launch(ended_lanes_kernel, 1, 64, 0, nullptr, out.data(), 16),
                       doctest::Contains("which has exited"), simt::EmulationError);
}

// Lanes of one warp pass different masks to __syncwarp.
__global__ void mask_mismatch_kernel() { __syncwarp(threadIdx.x % 2 ? 0xffffffffu : 0x55555555u); }

TEST_CASE("a deadlock and mismatched masks are EmulationErrors naming the block") {
  std::vector<int> out(64);
  CHECK_THROWS_WITH_AS(launch(deadlock_kernel, 1, 64, 0, nullptr), doctest::Contains("deadlock in block (0,0,0)"),
                       simt::EmulationError);
  CHECK_THROWS_WITH_AS(launch(mask_mismatch_kernel, 1, 32, 0, nullptr), doctest::Contains("different masks"),
                       simt::EmulationError);
  CHECK_THROWS_AS(launch(shuffle_kernel, 1, 2048, 0, nullptr, out.data(), 1, 32), simt::EmulationError);
  // The emulator is usable again after an error.
  launch(shuffle_kernel, 1, 64, 0, nullptr, out.data(), 1, 32);
  CHECK(out[0] == 1);
}

// c[16 x 16] = a[16 x 32] b[32 x 16] + 1 with WMMA (b given column-major), one warp.
__global__ void wmma_kernel(float* c, const bf* a, const bf* b_col) {
  namespace wmma = nvcuda::wmma;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 1.0f);
  for (int k = 0; k < 32; k += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf, wmma::col_major> fb;
    wmma::load_matrix_sync(fa, a + k, 32);
    wmma::load_matrix_sync(fb, b_col + k, 32);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

TEST_CASE("WMMA fragments multiply like the matrices they hold") {
  std::vector<bf> a(16 * 32), b_col(16 * 32);
  std::vector<float> af(a.size()), bf_(b_col.size()), c(16 * 16);
  for (int i = 0; i < 16 * 32; ++i) {
    af[i] = static_cast<float>((i * 7) % 11 - 5) / 4, bf_[i] = static_cast<float>((i * 5) % 13 - 6) / 8;
    a[i] = __float2bfloat16(af[i]), b_col[i] = __float2bfloat16(bf_[i]);
  }
  launch(wmma_kernel, 1, 32, 0, nullptr, c.data(), a.data(), b_col.data());
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) {
      float want = 1.0f;
      for (int k = 0; k < 32; ++k) want += af[r * 32 + k] * bf_[col * 32 + k];
      CHECK(c[r * 16 + col] == doctest::Approx(want).epsilon(1e-6));
    }
}

// d[16 x 8] = a[16 x 16] b[16 x 8] + 1 (row-major) with one mma.sync, the operands taken from shared
// memory by ldmatrix: a as four 8 x 8 matrices (rows 0-15 at column 0, then at column 8), b (k-major)
// through the transposing form, as GEMM kernels on the device do. Checks the emulator's ldmatrix and
// mma layouts against each other, both taken from the PTX ISA.
__global__ void mma_kernel(float* d, const bf* a, const bf* b) {
  bf* a_s = reinterpret_cast<bf*>(core::kernels::dev::dynamic_smem());
  bf* b_s = a_s + 16 * 16;
  const int lane = threadIdx.x;
  for (int i = lane; i < 16 * 16; i += 32) a_s[i] = a[i];
  for (int i = lane; i < 16 * 8; i += 32) b_s[i] = b[i];
  __syncwarp();
  std::uint32_t fa[4], fb[4];
  simt::ldmatrix_x4(fa, a_s + (lane % 16) * 16 + (lane / 16) * 8, false);
  core::kernels::dev::ldmatrix_x4_trans(fb, b_s + (lane % 16) * 8);  // lanes 16-31 repeat 0-15
  float acc[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  core::kernels::dev::mma_bf16_16816(acc, fa, fb[0], fb[1]);
  const int g = lane / 4, q = lane % 4;
  for (int i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * q + i % 2] = acc[i];
}

TEST_CASE("mma.sync m16n8k16 on operands loaded by ldmatrix multiplies like the matrices") {
  std::vector<bf> a(16 * 16), b(16 * 8);
  std::vector<float> af(a.size()), bf_(b.size()), d(16 * 8);
  for (std::size_t i = 0; i < a.size(); ++i)
    af[i] = static_cast<float>((i * 7) % 11) - 5, a[i] = __float2bfloat16(af[i]);
  for (std::size_t i = 0; i < b.size(); ++i)
    bf_[i] = static_cast<float>((i * 5) % 13) / 4 - 1.5f, b[i] = __float2bfloat16(bf_[i]);
  launch(mma_kernel, 1, 32, (16 * 16 + 16 * 8) * sizeof(bf), nullptr, d.data(), a.data(), b.data());
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      float want = 1.0f;
      for (int k = 0; k < 16; ++k) want += af[r * 16 + k] * bf_[k * 8 + c];
      CHECK(d[r * 8 + c] == want);  // small integers and quarters: exact in fp32
    }
}

}  // namespace
