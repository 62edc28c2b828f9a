// CPU kernels that run a packed matrix W [rows, cols] without decoding it: Y[N, rows] = X[N, cols] W^T + b.
// Integer settings (8 and 4 bits) quantize each input row symmetrically to int8 (s_x = max|x| / 127),
// accumulate code_w * code_x exactly in int32 and scale once: y = s_x s_w acc + b. The N:M structure
// is used directly: for 2:4 the kernel gathers the two kept inputs of every group with byte shuffles
// driven by the packed 2-bit indices (AVX2: 16 groups, 32 kept weights per step; the index nibble of a
// group selects its shuffle through a 16-entry table) and int4 rows are widened to int8 per row.
// Other settings (any keep:group, fp16/fp32 values) go through a portable loop over kept values.
// The AVX2 paths are chosen at run time (__builtin_cpu_supports) and need cols % 64 == 0.
#pragma once
#include <cstdint>
#include <vector>

#include "nxm/packed.hpp"

namespace core::nxm {

class PackedLinear {
 public:
  explicit PackedLinear(const PackedMatrix& m);
  std::int64_t rows() const { return m_.rows; }
  std::int64_t cols() const { return m_.cols; }
  const Setting& setting() const { return m_.setting; }

  // y[N, rows] = x[N, cols] W^T + bias (bias may be null).
  void forward(const float* x, int N, float* y, const float* bias) const;
  // Integer settings: acc[N, rows] = sum_k code_w[r, k] xq[n, col(r, k)] (exact int32).
  void accumulate(const std::int8_t* xq, int N, std::int32_t* acc) const;
  bool uses_avx2() const { return avx2_; }

 private:
  void accumulate_portable(const std::int8_t* xq, int N, std::int32_t* acc) const;
  void forward_float(const float* x, int N, float* y) const;  // fp16/fp32 values
  PackedMatrix m_;
  std::vector<std::int32_t> cols_;  // portable path: the input column of every kept value [rows * kept]
  std::vector<float> vals_;         // portable float path: the kept values [rows * kept]
  std::vector<std::int8_t> codes_;  // portable integer path: the kept codes [rows * kept]
  bool avx2_ = false;
};

// Symmetric per-row int8 quantization of activations: xq[n, :] = round(x / s_n) (ties to even),
// s_n = max|x[n, :]| / 127.
void quantize_activations(const float* x, int N, std::int64_t cols, std::int8_t* xq, float* scales);

}  // namespace core::nxm
