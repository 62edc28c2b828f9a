// The packed N:M int8/int4 linears on a CUDA device, from the packed file's own bytes (packed.hpp): the
// codes, the per-row scales and the index bits are copied to the device once, when the linear is made,
// and stay there. A call quantizes the activations on the host exactly as the CPU kernels do
// (kernel.hpp: quantize_activations, per-token int8), copies the int8 activations to the device, and a
// portable SIMT kernel (any sm, and the host SIMT emulator of tests/support/simt) accumulates
// code_w * code_x exactly in int32 and scales once: y = s_x s_w acc + b, the CPU kernels' equation.
//
// Kernel: one warp per output row, blocks of 4 rows x up to 8 tokens (more tokens: more blocks). Each
// lane walks its share of the row's kept values in order, decodes code and in-group position from the
// packed bytes, and ORs the codes into a 4-byte word of weights aligned to 4 input columns (zeros where
// nothing is kept); each finished word costs one 32-bit load of the activations and one __dp4a per token.
// The word of a 2:4 group is exactly one dp4a; dense int8/int4 is the same loop (every column kept),
// any keep:group of the format works (positions are increasing along a row, so a word is finished when
// the next kept value lies past it; a word split between two lanes adds up the same). The activation
// rows are padded with zeros to a multiple of 4 columns on the device. Lanes add their int32 partial
// sums with warp shuffles. No tensor cores: mma.sp (sparse tensor cores) is not used.
//
// 8- and 4-bit settings only (fp16/fp32 values have no integer product): UsageError otherwise.
// Needs a CUDA build (TOOLKIT_HAVE_CUDA); host code, no CUDA headers. Not thread-safe (one call at a time
// per object: the activation and output buffers are reused between calls).
#pragma once
#include <cstdint>
#include <memory>
#include <span>

namespace core::nxm {

struct PackedMatrix;

class CudaPackedLinear {
 public:
  // Copies the matrix's bytes and the bias (empty: none) to the current device.
  CudaPackedLinear(const PackedMatrix& m, std::span<const float> bias);
  ~CudaPackedLinear();
  CudaPackedLinear(const CudaPackedLinear&) = delete;
  CudaPackedLinear& operator=(const CudaPackedLinear&) = delete;

  std::int64_t rows() const;
  std::int64_t cols() const;
  // Bytes the persistent device copy holds (codes, indices, scales, bias).
  std::size_t device_bytes() const;

  // y[N, rows] = x[N, cols] W^T + bias; host arrays (copies in and out per call).
  void forward(const float* x, int N, float* y) const;
  // acc[N, rows] = sum_k code_w[r, k] xq[n, col(r, k)], exact int32 (host arrays), as PackedLinear::accumulate.
  void accumulate(const std::int8_t* xq, int N, std::int32_t* acc) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace core::nxm
