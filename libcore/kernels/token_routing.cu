// Random-LTD's gather / scatter and subset sampling kernels (see token_routing.hpp). Rows move in 16-,
// 4- or 1-byte units (the widest that divides the row and the pointers' alignment), one unit per thread
// in a grid-stride loop; sampling runs one (layer, sequence) per thread, O(n) each.
#include <cstdint>

#include "kernels/device_utils.cuh"
#include "kernels/token_routing.hpp"

namespace core::kernels {
namespace {

constexpr int kThreads = 256;

// to_kept: gather (dst row b*kept+i <- src row b*T+p); otherwise scatter (dst row b*T+p <- src row b*kept+i).
template <class Unit>
__global__ void move_rows_kernel(Unit* dst, const Unit* src, const std::int32_t* positions, int T, int kept,
                                 std::int64_t units_per_row, std::int64_t total, bool to_kept) {
  for (std::int64_t u = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; u < total;
       u += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t row = u / units_per_row, col = u % units_per_row;  // row = b * kept + i
    const std::int64_t full = (row / kept) * T + positions[row];
    if (to_kept)
      dst[row * units_per_row + col] = src[full * units_per_row + col];
    else
      dst[full * units_per_row + col] = src[row * units_per_row + col];
  }
}

template <class Unit>
void move_rows_as(void* dst, const void* src, const std::int32_t* positions, int B, int T, int kept,
                  std::size_t row_bytes, bool to_kept, Stream stream) {
  const std::int64_t per_row = std::int64_t(row_bytes / sizeof(Unit)), total = per_row * B * kept;
  if (total == 0) return;
  dev::launch(move_rows_kernel<Unit>, dev::blocks_for(total, kThreads), kThreads, 0, stream, static_cast<Unit*>(dst),
              static_cast<const Unit*>(src), positions, T, kept, per_row, total, to_kept);
}

void move_rows(void* dst, const void* src, const std::int32_t* positions, int B, int T, int kept,
               std::size_t row_bytes, bool to_kept, Stream stream) {
  const auto aligned = [&](std::size_t unit) {
    return row_bytes % unit == 0 && reinterpret_cast<std::uintptr_t>(dst) % unit == 0 &&
           reinterpret_cast<std::uintptr_t>(src) % unit == 0;
  };
  if (aligned(16)) move_rows_as<uint4>(dst, src, positions, B, T, kept, row_bytes, to_kept, stream);
  else if (aligned(4)) move_rows_as<std::uint32_t>(dst, src, positions, B, T, kept, row_bytes, to_kept, stream);
  else move_rows_as<std::uint8_t>(dst, src, positions, B, T, kept, row_bytes, to_kept, stream);
}

__global__ void sample_subsets_kernel(std::int32_t* positions, const std::int32_t* layers, int num_layers,
                                      std::uint64_t seed, std::int64_t step, int rank, std::int64_t sequence0, int B,
                                      int T, int kept) {
  const int task = blockIdx.x * blockDim.x + threadIdx.x;  // = l * B + b
  if (task >= num_layers * B) return;
  const int l = task / B, b = task % B;
  routing::sample_sorted_subset(routing::subset_key(seed, step, rank, layers[l], sequence0 + b), T, kept,
                                positions + std::int64_t(task) * kept);
}

}  // namespace

void gather_rows(void* dst, const void* src, const std::int32_t* positions, int B, int T, int kept,
                 std::size_t row_bytes, Stream stream) {
  move_rows(dst, src, positions, B, T, kept, row_bytes, true, stream);
}

void scatter_rows(void* dst, const void* src, const std::int32_t* positions, int B, int T, int kept,
                  std::size_t row_bytes, Stream stream) {
  move_rows(dst, src, positions, B, T, kept, row_bytes, false, stream);
}

void sample_token_subsets(std::int32_t* positions, const std::int32_t* layers, int num_layers, std::uint64_t seed,
                          std::int64_t step, int rank, std::int64_t sequence0, int B, int T, int kept, Stream stream) {
  const int tasks = num_layers * B;
  if (tasks == 0 || kept == 0) return;
  dev::launch(sample_subsets_kernel, dev::blocks_for(tasks, 64), 64, 0, stream, positions, layers, num_layers, seed,
              step, rank, sequence0, B, T, kept);
}

}  // namespace core::kernels
