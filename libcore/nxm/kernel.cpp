// Packed N:M int8/int4 kernels on the CPU (see kernel.hpp).
#include "nxm/kernel.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/errors.hpp"

namespace core::nxm {

namespace {

bool cpu_has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

__attribute__((target("avx2"))) inline std::int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// sum_i w[i] x[i] over 32 int8 pairs into 8 int32 lanes: |w| * (x signed by w), pairs summed in int16
// (|w|, |x| <= 127: at most 2 * 127^2 < 2^15), then to int32.
__attribute__((target("avx2"))) inline __m256i dot32(__m256i acc, __m256i w, __m256i x) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

// The two shuffle masks of one 2:4 chunk (16 groups, 64 inputs) from its 8 index bytes (group nibble
// idx0 | idx1 << 2). Inputs are loaded as xa = [groups 0-3 | groups 8-11], xb = [4-7 | 12-15]; the
// selected bytes land as [0-7 | 8-15] in the natural order of the kept weights.
__attribute__((target("avx2"))) inline void masks_24(const std::uint8_t* pat, __m256i& ma, __m256i& mb) {
  const __m128i p = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pat));
  const __m128i nib = _mm_set1_epi8(0x0F);
  const __m128i g = _mm_unpacklo_epi8(_mm_and_si128(p, nib), _mm_and_si128(_mm_srli_epi16(p, 4), nib));
  const __m128i lut0 = _mm_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  const __m128i lut1 = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m128i i0 = _mm_shuffle_epi8(lut0, g), i1 = _mm_shuffle_epi8(lut1, g);
  __m256i e = _mm256_set_m128i(_mm_unpackhi_epi8(i0, i1), _mm_unpacklo_epi8(i0, i1));
  e = _mm256_add_epi8(e, _mm256_setr_epi8(0, 0, 4, 4, 8, 8, 12, 12, 0, 0, 4, 4, 8, 8, 12, 12,  //
                                          0, 0, 4, 4, 8, 8, 12, 12, 0, 0, 4, 4, 8, 8, 12, 12));
  const __m256i hi80 = _mm256_setr_epi64x(0, -1, 0, -1);
  const __m256i lo80 = _mm256_setr_epi64x(-1, 0, -1, 0);
  ma = _mm256_or_si256(e, _mm256_and_si256(hi80, _mm256_set1_epi8(char(0x80))));
  mb = _mm256_or_si256(e, _mm256_and_si256(lo80, _mm256_set1_epi8(char(0x80))));
}

// Widens a row of packed int4 codes (low nibble first) to int8.
__attribute__((target("avx2"))) void widen_int4(const std::uint8_t* v, std::int64_t K, std::int8_t* out) {
  std::int64_t k = 0;
  const __m128i nib = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (; k + 32 <= K; k += 32) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + k / 2));
    const __m128i lo = _mm_sub_epi8(_mm_xor_si128(_mm_and_si128(b, nib), eight), eight);
    const __m128i hi = _mm_sub_epi8(_mm_xor_si128(_mm_and_si128(_mm_srli_epi16(b, 4), nib), eight), eight);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k), _mm_unpacklo_epi8(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + k + 16), _mm_unpackhi_epi8(lo, hi));
  }
  for (; k < K; ++k) {
    const int n = (v[k / 2] >> (4 * (k % 2))) & 0xF;
    out[k] = static_cast<std::int8_t>(n >= 8 ? n - 16 : n);
  }
}

// acc[n * ld + r] for rows [r0, r1) of a 2:4 or dense integer matrix.
__attribute__((target("avx2"))) void accumulate_avx2(const PackedMatrix& m, const std::int8_t* xq, int N,
                                                     std::int32_t* acc) {
  const std::int64_t cols = m.cols, K = m.kept_per_row(), rows = m.rows;
  const bool sparse = m.setting.sparse();
  const std::int64_t chunks = cols / 64;
#pragma omp parallel if (rows * cols >= (1 << 16))
  {
    std::vector<std::int8_t> wrow(m.setting.bits == 4 ? K + 32 : 0);
    std::vector<std::int8_t> masks(sparse ? 64 * chunks : 0);  // two 32-byte shuffle masks per chunk
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int8_t* w = reinterpret_cast<const std::int8_t*>(m.values.data() + r * m.value_row_bytes());
      if (m.setting.bits == 4) {
        widen_int4(m.values.data() + r * m.value_row_bytes(), K, wrow.data());
        w = wrow.data();
      }
      if (sparse) {
        const std::uint8_t* pat = m.indices.data() + r * m.index_row_bytes();
        for (std::int64_t c = 0; c < chunks; ++c) {
          __m256i ma, mb;
          masks_24(pat + 8 * c, ma, mb);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(masks.data() + 64 * c), ma);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(masks.data() + 64 * c + 32), mb);
        }
      }
      for (int n = 0; n < N; ++n) {
        const std::int8_t* x = xq + std::int64_t(n) * cols;
        __m256i a = _mm256_setzero_si256();
        if (sparse) {
          for (std::int64_t c = 0; c < chunks; ++c) {
            const std::int8_t* b = x + 64 * c;
            const __m256i xa = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + 32),
                                                   reinterpret_cast<const __m128i*>(b));
            const __m256i xb = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(b + 48),
                                                   reinterpret_cast<const __m128i*>(b + 16));
            const __m256i ma = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(masks.data() + 64 * c));
            const __m256i mb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(masks.data() + 64 * c + 32));
            const __m256i sel = _mm256_or_si256(_mm256_shuffle_epi8(xa, ma), _mm256_shuffle_epi8(xb, mb));
            a = dot32(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 * c)), sel);
          }
        } else {
          for (std::int64_t c = 0; c < cols; c += 32)
            a = dot32(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + c)),
                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + c)));
        }
        acc[std::int64_t(n) * rows + r] = hsum_epi32(a);
      }
    }
  }
}

}  // namespace

void quantize_activations(const float* x, int N, std::int64_t cols, std::int8_t* xq, float* scales) {
  for (int n = 0; n < N; ++n) {
    const float* row = x + std::int64_t(n) * cols;
    float mx = 0;
    for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, std::fabs(row[j]));
    const float s = mx / 127.0f;
    scales[n] = s;
    const float inv = s > 0 ? 1.0f / s : 0.0f;
    for (std::int64_t j = 0; j < cols; ++j)
      xq[std::int64_t(n) * cols + j] = static_cast<std::int8_t>(std::clamp(std::lround(row[j] * inv), -127L, 127L));
  }
}

PackedLinear::PackedLinear(const PackedMatrix& m) : m_(m) {
  const bool fast_shape = m.setting.quantized() && m.cols % 64 == 0 &&
                          (!m.setting.sparse() || (m.setting.keep == 2 && m.setting.group == 4));
  avx2_ = fast_shape && cpu_has_avx2();
  if (avx2_) return;
  const std::int64_t K = m.kept_per_row();
  cols_.resize(m.rows * K);
  std::vector<float> vals;
  std::vector<std::int32_t> col;
  if (m.setting.quantized()) codes_.resize(m.rows * K);
  else vals_.resize(m.rows * K);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    m.row(r, vals, col);
    std::copy(col.begin(), col.end(), cols_.begin() + r * K);
    for (std::int64_t k = 0; k < K; ++k) {
      if (m.setting.quantized()) codes_[r * K + k] = static_cast<std::int8_t>(m.code(r, k));
      else vals_[r * K + k] = vals[k];
    }
  }
}

void PackedLinear::accumulate_portable(const std::int8_t* xq, int N, std::int32_t* acc) const {
  const std::int64_t K = m_.kept_per_row(), rows = m_.rows, cols = m_.cols;
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 16))
  for (std::int64_t r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      const std::int8_t* x = xq + std::int64_t(n) * cols;
      std::int32_t a = 0;
      for (std::int64_t k = 0; k < K; ++k) a += std::int32_t(codes_[r * K + k]) * x[cols_[r * K + k]];
      acc[std::int64_t(n) * rows + r] = a;
    }
}

void PackedLinear::accumulate(const std::int8_t* xq, int N, std::int32_t* acc) const {
  if (!m_.setting.quantized()) throw UsageError("PackedLinear::accumulate needs an 8- or 4-bit setting");
  if (avx2_) accumulate_avx2(m_, xq, N, acc);
  else accumulate_portable(xq, N, acc);
}

void PackedLinear::forward_float(const float* x, int N, float* y) const {
  const std::int64_t K = m_.kept_per_row(), rows = m_.rows, cols = m_.cols;
#pragma omp parallel for schedule(static) if (rows * cols >= (1 << 16))
  for (std::int64_t r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      const float* xr = x + std::int64_t(n) * cols;
      float a = 0;
      for (std::int64_t k = 0; k < K; ++k) a += vals_[r * K + k] * xr[cols_[r * K + k]];
      y[std::int64_t(n) * rows + r] = a;
    }
}

void PackedLinear::forward(const float* x, int N, float* y, const float* bias) const {
  const std::int64_t rows = m_.rows;
  if (m_.setting.quantized()) {
    std::vector<std::int8_t> xq(std::size_t(N) * m_.cols);
    std::vector<float> sx(N);
    std::vector<std::int32_t> acc(std::size_t(N) * rows);
    quantize_activations(x, N, m_.cols, xq.data(), sx.data());
    accumulate(xq.data(), N, acc.data());
    for (int n = 0; n < N; ++n)
      for (std::int64_t r = 0; r < rows; ++r)
        y[n * rows + r] = sx[n] * m_.scales[r] * float(acc[n * rows + r]) + (bias ? bias[r] : 0.0f);
    return;
  }
  forward_float(x, N, y);
  if (bias)
    for (int n = 0; n < N; ++n)
      for (std::int64_t r = 0; r < rows; ++r) y[n * rows + r] += bias[r];
}

}  // namespace core::nxm
