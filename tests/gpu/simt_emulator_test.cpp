// The host SIMT emulator (tests/support/simt) against the CUDA semantics the kernel tests rely on:
// shuffles (CUDA programming guide, warp shuffle functions), barriers, WMMA products (a naive
// product), and that it reports what the device would get wrong or hang on: a read of shared memory
// written by another thread without a barrier, a deadlock, a collective over lanes that ended.
#include "simt.hpp"
// (the emulator first)
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/device_utils.cuh"
#include "kernels/mma.cuh"
#include "kernels/runtime.hpp"

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

__global__ void iota_kernel(int* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = 3 * i;
}

// The runtime's streams and events (kernels/runtime.hpp; the emulated runtime runs each kernel and copy at its
// launch): work ordered by an event recorded on one stream and waited for on another sees the first stream's
// results, as on the device.
TEST_CASE("streams and events: work issued to a stream after a wait sees the work recorded before the event") {
  namespace detail = core::kernels::detail;
  const core::kernels::OwnedStream a, b;
  CHECK(a.get() != nullptr);
  CHECK(a.get() != b.get());
  constexpr int n = 100;
  auto* x = static_cast<int*>(detail::device_alloc(n * sizeof(int)));
  auto* y = static_cast<int*>(detail::device_alloc(n * sizeof(int)));
  launch(iota_kernel, 4, 32, 0, a.get(), x, n);
  core::kernels::Event done;
  done.record(a.get());
  done.wait(b.get());
  detail::copy_on_device(y, x, n * sizeof(int), b.get());
  detail::zero_on_device(x, n * sizeof(int), b.get());
  detail::synchronize_stream(b.get());
  std::vector<int> hy(n), hx(n);
  detail::copy_to_host(hy.data(), y, n * sizeof(int));
  detail::copy_to_host(hx.data(), x, n * sizeof(int));
  for (int i = 0; i < n; ++i) CHECK((hy[i] == 3 * i && hx[i] == 0));
  detail::device_free(x);
  detail::device_free(y);
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

// c[16 x 16] = a[16 x 32] b[32 x 16] + c0 with WMMA, one warp: a row-major; b column-major (b_col
// holds b^T row-major) or row-major; c0 read and c written with the given memory layouts.
template <class LayoutB>
__global__ void wmma_kernel(float* c, const float* c0, const bf* a, const bf* b, nvcuda::wmma::layout_t c0_layout,
                            nvcuda::wmma::layout_t c_layout) {
  namespace wmma = nvcuda::wmma;
  constexpr bool b_col = std::is_same_v<LayoutB, wmma::col_major>;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, c0, 16, c0_layout);
  for (int k = 0; k < 32; k += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf, LayoutB> fb;
    wmma::load_matrix_sync(fa, a + k, 32);
    wmma::load_matrix_sync(fb, b_col ? b + k : b + k * 16, b_col ? 32 : 16);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c, acc, 16, c_layout);
}

// The programming guide ("Warp Matrix Functions"): for matrix_a / matrix_b the layout is the
// fragment's (row_major: element (r, c) at r * ldm + c; col_major: at c * ldm + r), for
// accumulators the layout argument (mem_row_major / mem_col_major alike).
TEST_CASE("WMMA fragments multiply like the matrices they hold, in every memory layout") {
  namespace wmma = nvcuda::wmma;
  alignas(32) bf a[16 * 32], b_col[16 * 32], b_row[32 * 16];
  alignas(32) float c0[16 * 16], c[16 * 16];
  std::vector<float> af(16 * 32), bf_(32 * 16);  // bf_[k * 16 + n] = b(k, n)
  for (int i = 0; i < 16 * 32; ++i) {
    af[i] = static_cast<float>((i * 7) % 11 - 5) / 4, bf_[i] = static_cast<float>((i * 5) % 13 - 6) / 8;
    a[i] = __float2bfloat16(af[i]), b_row[i] = __float2bfloat16(bf_[i]);
  }
  for (int k = 0; k < 32; ++k)
    for (int n = 0; n < 16; ++n) b_col[n * 32 + k] = b_row[k * 16 + n];
  for (int i = 0; i < 16 * 16; ++i) c0[i] = static_cast<float>(i);  // c0(r, n) = 16 r + n as row-major
  const auto want = [&](int r, int n, bool c0_transposed) {
    float s = c0_transposed ? static_cast<float>(16 * n + r) : static_cast<float>(16 * r + n);
    for (int k = 0; k < 32; ++k) s += af[r * 32 + k] * bf_[k * 16 + n];
    return s;
  };
  launch(wmma_kernel<wmma::col_major>, 1, 32, 0, nullptr, c, c0, a, b_col,
         wmma::mem_row_major, wmma::mem_row_major);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) CHECK(c[r * 16 + n] == doctest::Approx(want(r, n, false)).epsilon(1e-6));
  // b row-major; c0 read column-major (so c0(r, n) = 16 n + r); c written column-major.
  launch(wmma_kernel<wmma::row_major>, 1, 32, 0, nullptr, c, c0, a, b_row, wmma::mem_col_major, wmma::mem_col_major);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) CHECK(c[n * 16 + r] == doctest::Approx(want(r, n, true)).epsilon(1e-6));
}

// A WMMA load from a pointer 16 bytes off a 256-bit boundary, with ldm 12 (24 bytes), or with lane 0 exited.
__global__ void wmma_misuse_kernel(const bf* a, int what) {
  namespace wmma = nvcuda::wmma;
  if (what == 2 && threadIdx.x == 0) return;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, bf, wmma::row_major> fa;
  wmma::load_matrix_sync(fa, what == 0 ? a + 8 : a, what == 1 ? 12 : 16);
}

TEST_CASE("WMMA loads need the whole warp, a 256-bit aligned pointer and ldm a multiple of 16 bytes") {
  alignas(32) bf a[32 * 16] = {};
  CHECK_THROWS_WITH_AS(launch(wmma_misuse_kernel, 1, 32, 0, nullptr, a, 0), doctest::Contains("256-bit aligned"),
                       simt::EmulationError);
  CHECK_THROWS_WITH_AS(launch(wmma_misuse_kernel, 1, 32, 0, nullptr, a, 1), doctest::Contains("ldm 12"),
                       simt::EmulationError);
  CHECK_THROWS_WITH_AS(launch(wmma_misuse_kernel, 1, 32, 0, nullptr, a, 2), doctest::Contains("without lane 0"),
                       simt::EmulationError);
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


// The fragment tables of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type",
// .bf16), transcribed as printed there: g = groupID = %laneid >> 2, t = threadID_in_group =
// %laneid % 4; a register holds two elements, the lower-numbered one in its low half ("Elements
// (low to high)").
int ptx_a_row(int i, int g) { return (i < 2 || (4 <= i && i < 6)) ? g : g + 8; }
int ptx_a_col(int i, int t) { return i < 4 ? t * 2 + (i & 0x1) : t * 2 + (i & 0x1) + 8; }
int ptx_b_row(int i, int t) { return i < 2 ? t * 2 + (i & 0x1) : t * 2 + (i & 0x1) + 8; }
int ptx_c_row(int i, int g) { return i < 2 ? g : g + 8; }
int ptx_c_col(int i, int t) { return t * 2 + (i & 0x1); }

std::uint16_t bits(bf x) {
  std::uint16_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
std::uint32_t pack(bf lo, bf hi) { return bits(lo) | static_cast<std::uint32_t>(bits(hi)) << 16; }

// d = a b + c for a [16 x 16], b [16 x 8] (k-major), c, d [16 x 8], all row-major in global memory;
// each lane builds its fragments straight from the PTX tables (no ldmatrix).
__global__ void mma_from_tables_kernel(float* d, const bf* a, const bf* b, const float* c) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane % 4;
  std::uint32_t fa[4], fb[2];
  for (int r = 0; r < 4; ++r)
    fa[r] = pack(a[ptx_a_row(2 * r, g) * 16 + ptx_a_col(2 * r, t)], a[ptx_a_row(2 * r + 1, g) * 16 + ptx_a_col(2 * r + 1, t)]);
  for (int r = 0; r < 2; ++r) fb[r] = pack(b[ptx_b_row(2 * r, t) * 8 + g], b[ptx_b_row(2 * r + 1, t) * 8 + g]);
  float acc[4];
  for (int i = 0; i < 4; ++i) acc[i] = c[ptx_c_row(i, g) * 8 + ptx_c_col(i, t)];
  core::kernels::dev::mma_bf16_16816(acc, fa, fb[0], fb[1]);
  for (int i = 0; i < 4; ++i) d[ptx_c_row(i, g) * 8 + ptx_c_col(i, t)] = acc[i];
}

TEST_CASE("mma.sync m16n8k16 bf16 takes A, B and C and gives D in the PTX ISA's fragment layouts") {
  // Lane 13 (g 3, t 1) by hand from the tables: a0 a1 = A(3, 2) A(3, 3), a2 a3 = A(11, 2) A(11, 3),
  // a4 a5 = A(3, 10) A(3, 11), a6 a7 = A(11, 10) A(11, 11); b0 b1 = B(2, 3) B(3, 3), b2 b3 = B(10, 3)
  // B(11, 3); c0..c3 = C(3, 2), C(3, 3), C(11, 2), C(11, 3).
  CHECK((ptx_a_row(0, 3) == 3 && ptx_a_col(1, 1) == 3 && ptx_a_row(2, 3) == 11 && ptx_a_col(2, 1) == 2));
  CHECK((ptx_a_row(5, 3) == 3 && ptx_a_col(5, 1) == 11 && ptx_a_row(6, 3) == 11 && ptx_a_col(6, 1) == 10));
  CHECK((ptx_b_row(1, 1) == 3 && ptx_b_row(2, 1) == 10 && ptx_c_row(2, 3) == 11 && ptx_c_col(3, 1) == 3));
  // Integer entries varying along rows and columns: an element taken from the wrong place, or the
  // halves of a register swapped, changes some entry of d; the sums are exact in fp32.
  std::vector<bf> a(16 * 16), b(16 * 8);
  std::vector<float> af(a.size()), bf_(b.size()), c(16 * 8), d(16 * 8);
  for (std::size_t i = 0; i < a.size(); ++i) af[i] = static_cast<float>((i * 37) % 61) - 30, a[i] = __float2bfloat16(af[i]);
  for (std::size_t i = 0; i < b.size(); ++i) bf_[i] = static_cast<float>((i * 23) % 53) - 26, b[i] = __float2bfloat16(bf_[i]);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(1000 * i);
  launch(mma_from_tables_kernel, 1, 32, 0, nullptr, d.data(), a.data(), b.data(), c.data());
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      float want = c[r * 8 + n];
      for (int k = 0; k < 16; ++k) want += af[r * 16 + k] * bf_[k * 8 + n];
      CAPTURE(r);
      CAPTURE(n);
      CHECK(d[r * 8 + n] == want);
    }
}

// ldmatrix .m8n8 .x4 .b16 on four 8 x 8 matrices of 16-bit codes (matrix j, row r, col c) -> 0xjrc,
// stored 48 bytes apart row to row and not in order: lane 8j + r gives the address of row r of
// matrix j. out[lane * 4 + j] = register j.
__global__ void ldmatrix_kernel(std::uint32_t* out, bool transpose) {
  auto* s = reinterpret_cast<std::uint16_t*>(core::kernels::dev::dynamic_smem());
  constexpr int ld = 24;  // elements per stored row: 48 bytes, rows stay 16-byte aligned
  const int lane = threadIdx.x;
  const auto row_of = [&](int j, int r) { return s + (r * 4 + (3 - j)) * ld; };  // matrix 3 first
  for (int j = 0; j < 4; ++j)
    for (int c = 0; c < 8; ++c) row_of(j, lane % 8)[c] = static_cast<std::uint16_t>(j << 8 | (lane % 8) << 4 | c);
  __syncwarp();
  std::uint32_t r[4];
  simt::ldmatrix_x4(r, row_of(lane / 8, lane % 8), transpose);
  for (int j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}

// PTX ISA, ldmatrix: threads 8j..8j+7 give the row addresses of matrix j (16-byte aligned); each
// lane receives, per matrix, row laneid >> 2, columns 2 (laneid % 4) and +1 (the lower one in the
// low half); .trans delivers the matrix transposed, i.e. rows 2 (laneid % 4), +1 of column laneid >> 2.
TEST_CASE("ldmatrix x4 gives each lane the PTX ISA's elements, with and without .trans") {
  const std::size_t smem = 32 * 24 * sizeof(std::uint16_t);
  std::vector<std::uint32_t> out(32 * 4);
  launch(ldmatrix_kernel, 1, 32, smem, nullptr, out.data(), false);
  // Lane 13 (row 3, columns 2, 3), by hand.
  CHECK(out[13 * 4 + 0] == 0x00330032u);
  CHECK(out[13 * 4 + 1] == 0x01330132u);
  CHECK(out[13 * 4 + 3] == 0x03330332u);
  for (int lane = 0; lane < 32; ++lane)
    for (unsigned j = 0; j < 4; ++j) {
      const unsigned row = lane / 4u, col = 2u * (lane % 4u);
      CHECK(out[lane * 4 + j] == ((j << 8 | row << 4 | col) | (j << 8 | row << 4 | (col + 1)) << 16));
    }
  launch(ldmatrix_kernel, 1, 32, smem, nullptr, out.data(), true);
  // Lane 13 with .trans: rows 2, 3 of column 3.
  CHECK(out[13 * 4 + 0] == 0x00330023u);
  CHECK(out[13 * 4 + 2] == 0x02330223u);
  for (int lane = 0; lane < 32; ++lane)
    for (unsigned j = 0; j < 4; ++j) {
      const unsigned col = lane / 4u, row = 2u * (lane % 4u);
      CHECK(out[lane * 4 + j] == ((j << 8 | row << 4 | col) | (j << 8 | (row + 1) << 4 | col) << 16));
    }
}

// ldmatrix with one row address 8 bytes off, or with lane 31 exited.
__global__ void ldmatrix_misuse_kernel(bool misaligned) {
  auto* s = reinterpret_cast<bf*>(core::kernels::dev::dynamic_smem());
  const int lane = threadIdx.x;
  if (!misaligned && lane == 31) return;
  std::uint32_t r[4];
  simt::ldmatrix_x4(r, s + lane * 8 + (misaligned && lane == 5 ? 4 : 0), false);
}

TEST_CASE("ldmatrix needs 16-byte aligned row addresses and every lane of the warp (PTX ISA)") {
  CHECK_THROWS_WITH_AS(launch(ldmatrix_misuse_kernel, 1, 32, 33 * 16, nullptr, true),
                       doctest::Contains("16-byte aligned"), simt::EmulationError);
  CHECK_THROWS_WITH_AS(launch(ldmatrix_misuse_kernel, 1, 32, 33 * 16, nullptr, false),
                       doctest::Contains("ldmatrix with lanes of the warp exited"), simt::EmulationError);
}

// __expf and __logf round as the PTX nvcc emits does (x * log2(e) to fp32 first), and __fdividef
// has the special cases of crt/device_functions.h.
TEST_CASE("the fast intrinsics follow nvcc's lowering and __fdividef's documented special cases") {
  const float x = 20.3f;
  CHECK(__expf(x) == std::exp2(x * 1.44269502f));
  CHECK(__expf(x) != std::exp(x));  // the fp32 product loses what exp keeps
  CHECK(__expf(-INFINITY) == 0.0f);
  CHECK(__logf(8.0f) == 3.0f * 0.693147182f);
  CHECK(__fdividef(6.0f, 3.0f) == 2.0f);
  CHECK(__fdividef(1.0f, 0x1p127f) == 0.0f);  // 2^-127 by IEEE division
  CHECK(std::isnan(__fdividef(INFINITY, -0x1p127f)));
  CHECK(__fdividef(INFINITY, 0x1p100f) == INFINITY);
}

}  // namespace
