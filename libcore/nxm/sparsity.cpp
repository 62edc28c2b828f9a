// N:M projection and per-row symmetric quantization (see sparsity.hpp).
#include "nxm/sparsity.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "io/half.hpp"

namespace core::nxm {

void check_nm_shape(std::int64_t cols, const Setting& s, const std::string& tensor) {
  if (s.sparse() && cols % s.group != 0)
    throw DataError("tensor " + tensor + ": " + std::to_string(cols) + " input columns are not divisible by the group " +
                    std::to_string(s.group) + " of " + s.to_string());
}

void nm_mask(const float* w, std::int64_t rows, std::int64_t cols, const Setting& s, std::uint8_t* mask,
             const std::string& tensor) {
  if (!s.sparse()) {
    std::fill(mask, mask + rows * cols, std::uint8_t(1));
    return;
  }
  check_nm_shape(cols, s, tensor);
  const int G = s.group;
  int order[64];
#pragma omp parallel for private(order) schedule(static) if (rows * cols >= (1 << 18))
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t g = 0; g < cols; g += G) {
      const float* x = w + r * cols + g;
      std::uint8_t* m = mask + r * cols + g;
      for (int i = 0; i < G; ++i) order[i] = i;
      // Largest |w| first; equal magnitudes in index order (stable), so ties go to the lower index.
      std::stable_sort(order, order + G, [x](int a, int b) { return std::fabs(x[a]) > std::fabs(x[b]); });
      for (int i = 0; i < G; ++i) m[i] = 0;
      for (int i = 0; i < s.keep; ++i) m[order[i]] = 1;
    }
}

void nm_project(float* w, std::int64_t rows, std::int64_t cols, const Setting& s, const std::string& tensor) {
  if (!s.sparse()) return;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(rows * cols));
  nm_mask(w, rows, cols, s, mask.data(), tensor);
  for (std::int64_t i = 0; i < rows * cols; ++i)
    if (!mask[i]) w[i] = 0.0f;
}

int quant_max(int bits) { return (1 << (bits - 1)) - 1; }

float row_scale(const float* row, std::int64_t cols, int bits) {
  float m = 0.0f;
  for (std::int64_t j = 0; j < cols; ++j) m = std::max(m, std::fabs(row[j]));
  return m / float(quant_max(bits));
}

std::int32_t quantize_code(float w, float scale, int bits) {
  if (scale == 0.0f) return 0;
  const int q = quant_max(bits);
  const long c = std::lround(w / scale);
  return static_cast<std::int32_t>(std::clamp<long>(c, -q, q));
}

QuantizedMatrix quantize_rows(const float* w, std::int64_t rows, std::int64_t cols, int bits) {
  QuantizedMatrix q;
  q.scales.resize(rows);
  q.codes.resize(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* x = w + r * cols;
    const float s = row_scale(x, cols, bits);
    q.scales[r] = s;
    for (std::int64_t j = 0; j < cols; ++j) q.codes[r * cols + j] = static_cast<std::int8_t>(quantize_code(x[j], s, bits));
  }
  return q;
}

void fake_quantize(float* w, std::int64_t rows, std::int64_t cols, int bits) {
  if (bits == 32) return;
  if (bits == 16) {
    for (std::int64_t i = 0; i < rows * cols; ++i) w[i] = io::f16_to_float(io::float_to_f16(w[i]));
    return;
  }
  const QuantizedMatrix q = quantize_rows(w, rows, cols, bits);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) w[r * cols + j] = float(q.codes[r * cols + j]) * q.scales[r];
}

void compress_matrix(float* w, std::int64_t rows, std::int64_t cols, const Setting& s, const std::string& tensor) {
  nm_project(w, rows, cols, s, tensor);
  fake_quantize(w, rows, cols, s.bits);
}

}  // namespace core::nxm
