// The packed N:M int8/int4 linears on a CUDA device (see packed_cuda.hpp; the CPU kernels, kernel.cpp,
// compute the same int32 sums).
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "kernels/device_utils.cuh"
#include "kernels/runtime.hpp"
#include "nxm/kernel.hpp"
#include "nxm/packed.hpp"
#include "nxm/packed_cuda.hpp"

namespace core::nxm {
// (named, not anonymous: CudaPackedLinear::Impl holds these types)
namespace packed_cuda {

namespace dev = kernels::dev;

constexpr int kWarps = 4;   // rows per block, one warp each
constexpr int kTokens = 8;  // tokens per block (a thread keeps one int32 sum per token)
constexpr int kRun = 4;     // consecutive kept values per lane and step

// A packed matrix on the device: the file's bytes (packed.hpp) and their shape.
struct DevMatrix {
  const std::uint8_t* values;   // [rows, value_row_bytes]: int8 codes, or two int4 codes per byte (low first)
  const std::uint8_t* indices;  // [rows, index_row_bytes]: index_bits per kept value, LSB first; null: dense
  const float* scales;          // [rows]
  const float* bias;            // [rows]; null: none
  std::int64_t rows, value_row_bytes, index_row_bytes;
  int kept, keep, group, index_bits, bits;  // kept values per row (cols <= 2^28: int offsets in a row)
};

// The quantized activations of N tokens and the outputs.
struct DevBatch {
  const std::int8_t* xq;  // [N, stride]: int8 codes, columns past cols zero
  const float* sx;        // [N]: the tokens' scales
  std::int64_t stride;    // cols rounded up to a multiple of 4
  int N;
  std::int32_t* acc;  // [N, rows] exact sums; null: not wanted
  float* y;           // [N, rows] s_x s_w acc + b; null: not wanted
};

// The k-th kept code of a row (two's complement int4 in [-7, 7] or int8).
__device__ inline int kept_code(const DevMatrix& m, const std::uint8_t* v, int k) {
  if (m.bits == 8) return static_cast<std::int8_t>(v[k]);
  const int nib = (v[k >> 1] >> (4 * (k & 1))) & 0xF;
  return nib >= 8 ? nib - 16 : nib;
}

// The position in its group of the k-th kept value of a row: index_bits bits at bit k * index_bits, LSB
// first (at most 6 bits: they span at most two bytes).
__device__ inline int kept_position(const DevMatrix& m, const std::uint8_t* idx, int k) {
  const int bit = k * m.index_bits, shift = bit & 7;
  unsigned bits = idx[bit >> 3];
  if (shift + m.index_bits > 8) bits |= unsigned(idx[(bit >> 3) + 1]) << 8;
  return int(bits >> shift) & ((1 << m.index_bits) - 1);
}

// acc[t] += dot(weights of the 4 columns of `word`, activations of token t there), for the tile's tokens.
__device__ inline void add_word(int (&acc)[kTokens], unsigned w, int word, const std::int8_t* x,
                                std::int64_t stride, int T) {
#pragma unroll
  for (int t = 0; t < kTokens; ++t)
    if (t < T) acc[t] = __dp4a(int(w), *reinterpret_cast<const int*>(x + t * stride + 4 * word), acc[t]);
}

__global__ void __launch_bounds__(kWarps * 32) packed_linear_kernel(DevMatrix m, DevBatch b) {
  const int lane = int(threadIdx.x % 32);
  const std::int64_t r = std::int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (r >= m.rows) return;  // the whole warp: r is the same for its lanes
  const int t0 = int(blockIdx.y) * kTokens;
  const int T = b.N - t0 < kTokens ? b.N - t0 : kTokens;
  const std::uint8_t* v = m.values + r * m.value_row_bytes;
  const std::uint8_t* idx = m.indices ? m.indices + r * m.index_row_bytes : nullptr;
  const std::int8_t* x = b.xq + std::int64_t(t0) * b.stride;

  int acc[kTokens];
#pragma unroll
  for (int t = 0; t < kTokens; ++t) acc[t] = 0;
  for (int k0 = kRun * lane; k0 < m.kept; k0 += kRun * 32) {
    const int k1 = k0 + kRun < m.kept ? k0 + kRun : m.kept;
    // N:M: the group of kept value k0 and its rank there, then counted on (one division per run).
    int group = idx ? k0 / m.keep : 0, rank = idx ? k0 - group * m.keep : 0;
    int word = -1;   // the 4-column word being filled
    unsigned w = 0;  // its weights, one byte per column (0 where nothing is kept)
    for (int k = k0; k < k1; ++k) {
      const int c = idx ? group * m.group + kept_position(m, idx, k) : k;
      if (c >> 2 != word) {
        if (word >= 0) add_word(acc, w, word, x, b.stride, T);
        word = c >> 2;
        w = 0;
      }
      w |= unsigned(kept_code(m, v, k) & 0xFF) << (8 * (c & 3));
      if (idx && ++rank == m.keep) rank = 0, ++group;
    }
    if (word >= 0) add_word(acc, w, word, x, b.stride, T);
  }
#pragma unroll
  for (int t = 0; t < kTokens; ++t)
    for (int o = 16; o > 0; o >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t >= T || lane != t) continue;
    const std::int64_t out = std::int64_t(t0 + t) * m.rows + r;
    if (b.acc) b.acc[out] = acc[t];
    if (b.y) b.y[out] = b.sx[t0 + t] * m.scales[r] * float(acc[t]) + (m.bias ? m.bias[r] : 0.0f);
  }
}

// A device buffer that keeps its allocation when a later call needs no more.
template <class T>
class Workspace {
 public:
  T* reserve(std::size_t n) {
    if (n > buffer_.size()) buffer_ = kernels::DeviceBuffer<T>(n);
    return buffer_.data();
  }

 private:
  kernels::DeviceBuffer<T> buffer_;
};

}  // namespace packed_cuda

struct CudaPackedLinear::Impl {
  std::int64_t rows = 0, cols = 0, stride = 0;
  packed_cuda::DevMatrix matrix{};  // the buffers below and the shape, as the kernel reads them
  kernels::DeviceBuffer<std::uint8_t> values, indices;
  kernels::DeviceBuffer<float> scales, bias;
  packed_cuda::Workspace<std::int8_t> xq;
  packed_cuda::Workspace<float> sx, y;
  packed_cuda::Workspace<std::int32_t> acc;
  std::vector<std::int8_t> staged;  // host: activations padded to `stride` columns

  void run(const std::int8_t* xq_host, const float* sx_host, int N, std::int32_t* acc_host, float* y_host) {
    if (N < 1) return;
    const std::size_t n = std::size_t(N);
    const std::int8_t* src = xq_host;
    if (stride != cols) {
      staged.assign(n * stride, 0);
      for (std::size_t t = 0; t < n; ++t) std::memcpy(staged.data() + t * stride, xq_host + t * cols, cols);
      src = staged.data();
    }
    std::int8_t* xq_dev = xq.reserve(n * stride);
    kernels::detail::copy_to_device(xq_dev, src, n * stride);
    packed_cuda::DevBatch b{xq_dev, nullptr, stride, N, nullptr, nullptr};
    if (y_host) {
      float* sx_dev = sx.reserve(n);
      kernels::detail::copy_to_device(sx_dev, sx_host, n * sizeof(float));
      b.sx = sx_dev;
      b.y = y.reserve(n * rows);
    }
    if (acc_host) b.acc = acc.reserve(n * rows);
    using namespace packed_cuda;
    const dim3 grid(unsigned((rows + kWarps - 1) / kWarps), unsigned((N + kTokens - 1) / kTokens));
    dev::launch(packed_linear_kernel, grid, dim3(kWarps * 32), 0, nullptr, matrix, b);
    if (acc_host) kernels::detail::copy_to_host(acc_host, b.acc, n * rows * sizeof(std::int32_t));
    if (y_host) kernels::detail::copy_to_host(y_host, b.y, n * rows * sizeof(float));
  }
};

CudaPackedLinear::CudaPackedLinear(const PackedMatrix& m, std::span<const float> bias) : impl_(std::make_unique<Impl>()) {
  if (!m.setting.quantized())
    throw UsageError("device=cuda runs 8- and 4-bit settings only; " + m.name + " is " + m.setting.to_string());
  if (m.cols > (std::int64_t(1) << 28)) throw UsageError("device=cuda: " + m.name + " is wider than 2^28 columns");
  if (!bias.empty() && std::int64_t(bias.size()) != m.rows)
    throw UsageError("CudaPackedLinear: bias of " + std::to_string(bias.size()) + " values for " + m.name + " with " +
                     std::to_string(m.rows) + " rows");
  Impl& d = *impl_;
  d.rows = m.rows;
  d.cols = m.cols;
  d.stride = (m.cols + 3) / 4 * 4;
  d.values = kernels::DeviceBuffer<std::uint8_t>(std::span<const std::uint8_t>(m.values));
  if (m.setting.sparse()) d.indices = kernels::DeviceBuffer<std::uint8_t>(std::span<const std::uint8_t>(m.indices));
  d.scales = kernels::DeviceBuffer<float>(std::span<const float>(m.scales));
  if (!bias.empty()) d.bias = kernels::DeviceBuffer<float>(bias);
  d.matrix = packed_cuda::DevMatrix{d.values.data(),
                                    m.setting.sparse() ? d.indices.data() : nullptr,
                                    d.scales.data(),
                                    bias.empty() ? nullptr : d.bias.data(),
                                    m.rows,
                                    m.value_row_bytes(),
                                    m.index_row_bytes(),
                                    int(m.kept_per_row()),
                                    m.setting.keep,
                                    m.setting.group,
                                    m.setting.index_bits(),
                                    m.setting.bits};
}

CudaPackedLinear::~CudaPackedLinear() = default;

std::int64_t CudaPackedLinear::rows() const { return impl_->rows; }
std::int64_t CudaPackedLinear::cols() const { return impl_->cols; }

std::size_t CudaPackedLinear::device_bytes() const {
  return impl_->values.bytes() + impl_->indices.bytes() + impl_->scales.bytes() + impl_->bias.bytes();
}

void CudaPackedLinear::forward(const float* x, int N, float* y) const {
  std::vector<std::int8_t> xq(std::size_t(N) * impl_->cols);
  std::vector<float> sx(N);
  quantize_activations(x, N, impl_->cols, xq.data(), sx.data());
  impl_->run(xq.data(), sx.data(), N, nullptr, y);
}

void CudaPackedLinear::accumulate(const std::int8_t* xq, int N, std::int32_t* acc) const {
  impl_->run(xq, nullptr, N, acc, nullptr);
}

}  // namespace core::nxm
