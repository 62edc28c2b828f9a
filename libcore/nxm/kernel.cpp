// Packed N:M int8/int4 kernels on the CPU (see kernel.hpp).
#include "nxm/kernel.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

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

// The GEMM path for N >= 4 tokens (tiles of 16): the activations of a tile are expanded once into a
// table of int16 pairs, one 64-byte entry per (unit, pattern): for 2:4 each group of 4 inputs has
// 6 possible kept pairs (i0 < i1), dense int8 has one pair per 2 inputs. A row then costs, per unit,
// one broadcast of its weight pair and two vpmaddwd over the entry its indices select (exact int32).
// Lanes of the two accumulators hold tokens {0-3, 8-11} and {4-7, 12-15} (unpack works per lane).
constexpr int kPairs24[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
constexpr std::int8_t kPatternToPair[16] = {-1, -1, -1, -1, 0, -1, -1, -1, 1, 3, -1, -1, 2, 4, 5, -1};

__attribute__((target("avx2"))) void accumulate_tiled_avx2(const PackedMatrix& m, const std::int8_t* xq, int N,
                                                           std::int32_t* acc) {
  const std::int64_t cols = m.cols, rows = m.rows, K = m.kept_per_row();
  const bool sparse = m.setting.sparse();
  const std::int64_t units = sparse ? cols / 4 : cols / 2;
  const int P = sparse ? 6 : 1;
  const int tiles = (N + 15) / 16;
  std::vector<std::int16_t> xt(std::size_t(cols) * 16);
  std::vector<std::int8_t> table(std::size_t(tiles + 1) / 2 * 2 * units * P * 64, 0);  // even tile count
  for (int tile = 0; tile < tiles; ++tile) {
    std::fill(xt.begin(), xt.end(), std::int16_t(0));
    for (int t = 0; t < 16 && tile * 16 + t < N; ++t) {
      const std::int8_t* x = xq + std::int64_t(tile * 16 + t) * cols;
      for (std::int64_t j = 0; j < cols; ++j) xt[j * 16 + t] = x[j];
    }
    std::int8_t* base = table.data() + std::size_t(tile) * units * P * 64;
    for (std::int64_t u = 0; u < units; ++u)
      for (int p = 0; p < P; ++p) {
        const std::int64_t c0 = sparse ? 4 * u + kPairs24[p][0] : 2 * u, c1 = sparse ? 4 * u + kPairs24[p][1] : 2 * u + 1;
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xt.data() + c0 * 16));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xt.data() + c1 * 16));
        std::int8_t* e = base + (u * P + p) * 64;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e), _mm256_unpacklo_epi16(a, b));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(e + 32), _mm256_unpackhi_epi16(a, b));
      }
  }
  static constexpr int kLane[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};  // token -> slot
  // Rows in blocks whose weight pairs and entry offsets are prepared once; tiles two at a time, so each
  // broadcast weight pair feeds four accumulators (32 tokens).
  constexpr std::int64_t kRowBlock = 32;
  const std::size_t tile_bytes = std::size_t(units) * P * 64;
#pragma omp parallel if (rows * cols * N >= (1 << 18))
  {
    std::vector<std::int8_t> wrow(m.setting.bits == 4 ? K + 32 : 0);
    std::vector<std::int32_t> wpair(kRowBlock * units), entry(kRowBlock * units);
#pragma omp for schedule(static)
    for (std::int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
      const std::int64_t nr = std::min(kRowBlock, rows - r0);
      for (std::int64_t i = 0; i < nr; ++i) {
        const std::int64_t r = r0 + i;
        const std::int8_t* w = reinterpret_cast<const std::int8_t*>(m.values.data() + r * m.value_row_bytes());
        if (m.setting.bits == 4) {
          widen_int4(m.values.data() + r * m.value_row_bytes(), K, wrow.data());
          w = wrow.data();
        }
        const std::uint8_t* pat = sparse ? m.indices.data() + r * m.index_row_bytes() : nullptr;
        for (std::int64_t u = 0; u < units; ++u) {
          wpair[i * units + u] = std::int32_t(std::uint16_t(std::int16_t(w[2 * u]))) |
                                 std::int32_t(std::uint32_t(std::uint16_t(std::int16_t(w[2 * u + 1]))) << 16);
          const int p = sparse ? kPatternToPair[(pat[u / 2] >> (4 * (u % 2))) & 0xF] : 0;
          entry[i * units + u] = static_cast<std::int32_t>((u * P + p) * 64);
        }
      }
      if (tiles == 1) {  // up to 16 tokens: one tile, two accumulators
        for (std::int64_t i = 0; i < nr; ++i) {
          __m256i a0 = _mm256_setzero_si256(), a1 = a0;
          const std::int32_t* wp = wpair.data() + i * units;
          const std::int32_t* en = entry.data() + i * units;
          for (std::int64_t u = 0; u < units; ++u) {
            const __m256i wv = _mm256_set1_epi32(wp[u]);
            const std::int8_t* e0 = table.data() + en[u];
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e0)), wv));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e0 + 32)), wv));
          }
          alignas(32) std::int32_t out[16];
          _mm256_store_si256(reinterpret_cast<__m256i*>(out), a0);
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), a1);
          for (int t = 0; t < N; ++t) acc[std::int64_t(t) * rows + r0 + i] = out[kLane[t]];
        }
        continue;
      }
      for (int tile = 0; tile < tiles; tile += 2) {
        const std::int8_t* b0 = table.data() + tile * tile_bytes;
        const std::int8_t* b1 = b0 + tile_bytes;  // the table has an even number of tiles
        for (std::int64_t i = 0; i < nr; ++i) {
          __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
          const std::int32_t* wp = wpair.data() + i * units;
          const std::int32_t* en = entry.data() + i * units;
          for (std::int64_t u = 0; u < units; ++u) {
            const __m256i wv = _mm256_set1_epi32(wp[u]);
            const std::int8_t* e0 = b0 + en[u];
            const std::int8_t* e1 = b1 + en[u];
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e0)), wv));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e0 + 32)), wv));
            a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e1)), wv));
            a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(e1 + 32)), wv));
          }
          alignas(32) std::int32_t out[32];
          _mm256_store_si256(reinterpret_cast<__m256i*>(out), a0);
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), a1);
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + 16), a2);
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + 24), a3);
          for (int t = 0; t < 32 && tile * 16 + t < N; ++t)
            acc[std::int64_t(tile * 16 + t) * rows + r0 + i] = out[16 * (t / 16) + kLane[t % 16]];
        }
      }
    }
  }
}

// ---- vnni path (AVX-512 VBMI + VNNI, 256-bit vectors) ----

bool cpu_has_vnni() {
  return cpu_has_avx2() && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni");
}

#define NXM_VNNI __attribute__((target("avx2,fma,avx512f,avx512vl,avx512bw,avx512vbmi,avx512vnni")))

// 32 kept codes (chunk c of a row) as signed bytes: int8 as stored, int4 widened (low nibble first).
template <int Bits>
NXM_VNNI inline __m256i load_codes(const std::uint8_t* row, std::int64_t c) {
  if constexpr (Bits == 8) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * c));
  } else {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * c));
    const __m128i nib = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(b, nib), hi = _mm_and_si128(_mm_srli_epi16(b, 4), nib);
    const __m256i w = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
    const __m256i eight = _mm256_set1_epi8(8);
    return _mm256_sub_epi8(_mm256_xor_si256(w, eight), eight);
  }
}

// Byte selectors of chunk c of a 2:4 row (16 groups, 64 inputs): kept value b sits at bits 2b, 2b+1 of
// the chunk's 8 index bytes; vpmultishiftqb moves them to byte b, then (sel & 3) | 4 (b / 2) is its
// input's position among the 64.
NXM_VNNI inline __m256i selectors_24(const std::uint8_t* pat, std::int64_t c) {
  std::uint64_t bits;
  std::memcpy(&bits, pat + 8 * c, 8);
  const __m256i shift = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,  //
                                         32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62);
  const __m256i base = _mm256_setr_epi8(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28,  //
                                        32, 32, 36, 36, 40, 40, 44, 44, 48, 48, 52, 52, 56, 56, 60, 60);
  const __m256i sel = _mm256_multishift_epi64_epi8(shift, _mm256_set1_epi64x(static_cast<long long>(bits)));
  return _mm256_ternarylogic_epi32(sel, _mm256_set1_epi8(3), base, 0xEA);  // (sel & 3) | base
}

// acc[(n0 + t) * rows + r] for R consecutive rows from r and T tokens from n0 (xu: activations + 128).
template <int Bits, bool Sparse, int R, int T>
NXM_VNNI void block_vnni(const PackedMatrix& m, const std::int32_t* offset, const std::uint8_t* xu, int n0,
                         std::int64_t r, std::int32_t* acc) {
  const std::int64_t cols = m.cols, chunks = m.kept_per_row() / 32, vb = m.value_row_bytes(), ib = m.index_row_bytes();
  __m256i a[R][T];
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < T; ++t) a[i][t] = _mm256_setzero_si256();
  const std::uint8_t* x0 = xu + std::int64_t(n0) * cols;
  for (std::int64_t c = 0; c < chunks; ++c) {
    __m256i w[R], sel[R];
    for (int i = 0; i < R; ++i) {
      w[i] = load_codes<Bits>(m.values.data() + (r + i) * vb, c);
      if constexpr (Sparse) sel[i] = selectors_24(m.indices.data() + (r + i) * ib, c);
    }
    for (int t = 0; t < T; ++t) {
      if constexpr (Sparse) {
        const std::uint8_t* xc = x0 + t * cols + 64 * c;
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xc + 32));
        for (int i = 0; i < R; ++i) a[i][t] = _mm256_dpbusd_epi32(a[i][t], _mm256_permutex2var_epi8(lo, sel[i], hi), w[i]);
      } else {
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x0 + t * cols + 32 * c));
        for (int i = 0; i < R; ++i) a[i][t] = _mm256_dpbusd_epi32(a[i][t], xv, w[i]);
      }
    }
  }
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < T; ++t) acc[std::int64_t(n0 + t) * m.rows + r + i] = hsum_epi32(a[i][t]) - offset[r + i];
}

constexpr int kTokenTile = 8;

// Rows [r0, r1) for all N tokens: token tiles outermost (their activations stay in L1), then row pairs.
template <int Bits, bool Sparse, int T>
void rows_vnni(const PackedMatrix& m, const std::int32_t* offset, const std::uint8_t* xu, int n0, std::int64_t r0,
               std::int64_t r1, std::int32_t* acc) {
  std::int64_t r = r0;
  for (; r + 2 <= r1; r += 2) block_vnni<Bits, Sparse, 2, T>(m, offset, xu, n0, r, acc);
  if (r < r1) block_vnni<Bits, Sparse, 1, T>(m, offset, xu, n0, r, acc);
}

template <int Bits, bool Sparse, int... Ts>
void tile_vnni(int T, const PackedMatrix& m, const std::int32_t* offset, const std::uint8_t* xu, int n0,
               std::int64_t r0, std::int64_t r1, std::int32_t* acc, std::integer_sequence<int, Ts...>) {
  ((T == Ts + 1 ? rows_vnni<Bits, Sparse, Ts + 1>(m, offset, xu, n0, r0, r1, acc) : void()), ...);
}

template <int Bits, bool Sparse>
void accumulate_vnni(const PackedMatrix& m, const std::int32_t* offset, const std::int8_t* xq, int N,
                     std::int32_t* acc) {
  const std::int64_t cols = m.cols, rows = m.rows;
  std::vector<std::uint8_t> xu(std::size_t(N) * cols);
  for (std::size_t j = 0; j < xu.size(); ++j) xu[j] = static_cast<std::uint8_t>(xq[j] ^ 0x80);  // x + 128
#pragma omp parallel if (rows * cols * N >= (1 << 18))
  {
    int nt = 1, tid = 0;
#ifdef _OPENMP
    nt = omp_get_num_threads();
    tid = omp_get_thread_num();
#endif
    const std::int64_t pairs = (rows + 1) / 2;  // even row boundaries keep every thread on row pairs
    const std::int64_t r0 = std::min(rows, 2 * (pairs * tid / nt)), r1 = std::min(rows, 2 * (pairs * (tid + 1) / nt));
    for (int n0 = 0; n0 < N; n0 += kTokenTile)
      tile_vnni<Bits, Sparse>(std::min(kTokenTile, N - n0), m, offset, xu.data(), n0, r0, r1, acc,
                              std::make_integer_sequence<int, kTokenTile>());
  }
}

// ---- vnni GEMM of 2:4 matrices for many tokens: a table of kept-activation quadruples ----
// A unit of 8 inputs (two groups of 4) holds 4 kept weights of a row, at one of 6 x 6 index patterns.
// For a tile of 32 tokens the activations (x + 128) are expanded once per tile into a table with one
// 128-byte entry per (unit, pattern): for every token, the 4 activations that pattern keeps, as one
// dword lane. A row then costs, per unit, one broadcast of its 4 codes and two 512-bit vpdpbusd on
// the entry its pattern selects (128 kept multiply-adds, no gather per token); the offset 128 sum(w)
// is removed as above (exact int32). The matrix is re-laid once, when loaded, in blocks of 8 units
// per row (its 32 codes as int8 and the 8 entries' offsets, 48 bytes): per tile, blocks are the outer
// loop, so that a block's entries (36 KB) stay in L1 while the rows stream past them sequentially,
// their partial sums (32 tokens) kept per row. Each thread builds a block's entries into its own
// 36 KB buffer right before its rows use them, rather than the whole table first (0.4-1.8 MB at
// BERT-base widths: read back from L2/L3); rows are split over the threads. Per tile the partial sums
// go to the output directly (as int32, or dequantized for forward).
constexpr int kTableTokens = 32;
constexpr int kTableMinTokens = 16;  // fewer tokens: the gather kernel above
constexpr std::int64_t kEntryBytes = kTableTokens * 4;
constexpr std::int64_t kUnitBytes = 36 * kEntryBytes;
constexpr std::int64_t kBlockUnits = 8;  // 64 inputs: every vnni-path width is a multiple
constexpr std::int64_t kBlockRowBytes = 4 * kBlockUnits + 2 * kBlockUnits;  // codes, then uint16 offsets

// Index byte of a unit (2 bits per kept value, LSB first) -> its entry's byte offset in the unit.
constexpr std::array<std::uint16_t, 256> kEntryOffset = [] {
  std::array<std::uint16_t, 256> t{};
  const auto pair = [](int i0, int i1) {
    for (int p = 0; p < 6; ++p)
      if (kPairs24[p][0] == i0 && kPairs24[p][1] == i1) return p;
    return 0;  // not increasing: packed files with such indices are rejected when read
  };
  for (int b = 0; b < 256; ++b)
    t[b] = static_cast<std::uint16_t>(kEntryBytes * (6 * pair(b & 3, (b >> 2) & 3) + pair((b >> 4) & 3, b >> 6)));
  return t;
}();

// The blocked layout of a 2:4 matrix: [cols / 64 blocks][rows][kBlockRowBytes].
std::vector<std::uint8_t> block_matrix(const PackedMatrix& m) {
  const std::int64_t blocks = m.cols / (8 * kBlockUnits), ib = m.index_row_bytes();
  std::vector<std::uint8_t> out(std::size_t(blocks * m.rows * kBlockRowBytes));
  for (std::int64_t b = 0; b < blocks; ++b)
    for (std::int64_t r = 0; r < m.rows; ++r) {
      std::uint8_t* o = out.data() + (b * m.rows + r) * kBlockRowBytes;
      for (std::int64_t k = 0; k < 4 * kBlockUnits; ++k) o[k] = static_cast<std::uint8_t>(m.code(r, 4 * kBlockUnits * b + k));
      for (std::int64_t j = 0; j < kBlockUnits; ++j)
        std::memcpy(o + 4 * kBlockUnits + 2 * j, &kEntryOffset[m.indices[r * ib + kBlockUnits * b + j]], 2);
    }
  return out;
}

// The table entries of units [u0, u1) from the tile's activations transposed (xt[j * 32 + t]), unit u
// at table + (u - u0) * kUnitBytes.
NXM_VNNI void build_table_units(const std::uint8_t* xt, std::int64_t u0, std::int64_t u1, std::uint8_t* table) {
  for (std::int64_t u = u0; u < u1; ++u)
    for (int h = 0; h < kTableTokens / 16; ++h) {  // tokens 16 h .. 16 h + 15: bytes 64 h .. 64 h + 63 of an entry
      __m128i lo[2][6], hi[2][6];  // per group: the 6 kept pairs of every token as 16-bit lanes
      for (int g = 0; g < 2; ++g)
        for (int p = 0; p < 6; ++p) {
          const std::uint8_t* c = xt + (8 * u + 4 * g) * kTableTokens + 16 * h;
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + kPairs24[p][0] * kTableTokens));
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + kPairs24[p][1] * kTableTokens));
          lo[g][p] = _mm_unpacklo_epi8(a, b);
          hi[g][p] = _mm_unpackhi_epi8(a, b);
        }
      std::uint8_t* e = table + (u - u0) * kUnitBytes + 64 * h;
      for (int p0 = 0; p0 < 6; ++p0)
        for (int p1 = 0; p1 < 6; ++p1, e += kEntryBytes) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(e), _mm_unpacklo_epi16(lo[0][p0], lo[1][p1]));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(e + 16), _mm_unpackhi_epi16(lo[0][p0], lo[1][p1]));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(e + 32), _mm_unpacklo_epi16(hi[0][p0], hi[1][p1]));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(e + 48), _mm_unpackhi_epi16(hi[0][p0], hi[1][p1]));
        }
    }
}

// xt[j * 32 + t] = x[t, j] + 128 for the tile's tokens t < tokens (0 for the others); 64 columns at a
// time, so that the strided writes stay in L1.
void transpose_tile(const std::int8_t* x, int tokens, std::int64_t cols, std::uint8_t* xt) {
  if (tokens < kTableTokens) std::fill(xt, xt + cols * kTableTokens, std::uint8_t(0));
  for (std::int64_t j0 = 0; j0 < cols; j0 += 64)
    for (int t = 0; t < tokens; ++t) {
      const std::int8_t* row = x + std::int64_t(t) * cols;
      for (std::int64_t j = j0; j < std::min(cols, j0 + 64); ++j) xt[j * kTableTokens + t] = static_cast<std::uint8_t>(row[j] ^ 0x80);
    }
}

// part[i * 32 + t] += the products of one block (8 units) of R rows, wb: their blocked bytes, entries:
// the block's first unit in the table.
template <int R>
NXM_VNNI void block_table(const std::uint8_t* entries, const std::uint8_t* wb, std::int32_t* part) {
  __m512i a[R][2];
  for (int i = 0; i < R; ++i) {
    a[i][0] = _mm512_loadu_si512(part + i * kTableTokens);
    a[i][1] = _mm512_loadu_si512(part + i * kTableTokens + 16);
  }
  for (int j = 0; j < kBlockUnits; ++j, entries += kUnitBytes)
    for (int i = 0; i < R; ++i) {
      std::int32_t w;
      std::uint16_t off;
      std::memcpy(&w, wb + i * kBlockRowBytes + 4 * j, 4);
      std::memcpy(&off, wb + i * kBlockRowBytes + 4 * kBlockUnits + 2 * j, 2);
      const __m512i wv = _mm512_set1_epi32(w);
      const std::uint8_t* e = entries + off;
      a[i][0] = _mm512_dpbusd_epi32(a[i][0], _mm512_load_si512(e), wv);
      a[i][1] = _mm512_dpbusd_epi32(a[i][1], _mm512_load_si512(e + 64), wv);
    }
  for (int i = 0; i < R; ++i) {
    _mm512_storeu_si512(part + i * kTableTokens, a[i][0]);
    _mm512_storeu_si512(part + i * kTableTokens + 16, a[i][1]);
  }
}

// What the table kernel writes per token t and row r: the exact int32 accumulator acc[t * rows + r], or
// (y set) the layer's output y[t * rows + r] = s_x[t] s_w[r] acc + bias[r] directly from the tile's
// partial sums, which saves forward() a second pass over the accumulators.
struct TableOutput {
  std::int32_t* acc = nullptr;
  float* y = nullptr;
  const float* sx = nullptr;    // per token
  const float* sw = nullptr;    // per row
  const float* bias = nullptr;  // per row, may be null
};

// Rows [r0, r1) of one tile (part[(r - r0) * 32 + t], tokens n0 ..) to the output, 16 rows at a time:
// a gather reads one token of 16 rows (stride 128 bytes, in L1), rows land contiguous in the output.
NXM_VNNI void store_table_tile(const std::int32_t* part, std::int64_t r0, std::int64_t r1, int n0, int tokens,
                               std::int64_t rows, const std::int32_t* offset, const TableOutput& out) {
  const __m512i stride = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                            _mm512_set1_epi32(kTableTokens));
  for (std::int64_t rb = r0; rb < r1; rb += 16) {
    const __mmask16 live = static_cast<__mmask16>((1u << std::min<std::int64_t>(16, r1 - rb)) - 1u);
    const __m512i off = _mm512_maskz_loadu_epi32(live, offset + rb);
    const std::int32_t* p = part + (rb - r0) * kTableTokens;
    if (out.y == nullptr) {
      for (int t = 0; t < tokens; ++t) {
        const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, stride, p + t, 4);
        _mm512_mask_storeu_epi32(out.acc + std::int64_t(n0 + t) * rows + rb, live, _mm512_sub_epi32(v, off));
      }
      continue;
    }
    const __m512 sw = _mm512_maskz_loadu_ps(live, out.sw + rb);
    const __m512 b = out.bias ? _mm512_maskz_loadu_ps(live, out.bias + rb) : _mm512_setzero_ps();
    for (int t = 0; t < tokens; ++t) {
      const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, stride, p + t, 4);
      const __m512 a = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, off));
      const __m512 s = _mm512_mul_ps(_mm512_set1_ps(out.sx[n0 + t]), sw);
      _mm512_mask_storeu_ps(out.y + std::int64_t(n0 + t) * rows + rb, live, _mm512_fmadd_ps(s, a, b));
    }
  }
}

void accumulate_table_vnni(const PackedMatrix& m, const std::uint8_t* blocked, const std::int32_t* offset,
                           const std::int8_t* xq, int N, const TableOutput& out) {
  constexpr int kRows = 4;
  const std::int64_t cols = m.cols, rows = m.rows, units = cols / 8, blocks = units / kBlockUnits;
  thread_local std::vector<std::uint8_t> xt_buffer;  // reused across calls (no page faults per call)
  // Grown only: a resize that shrank, then grew, would zero the grown part on every call.
  xt_buffer.resize(std::max(xt_buffer.size(), std::size_t(cols) * kTableTokens));
  std::uint8_t* const xt = xt_buffer.data();  // the calling thread's, shared with the team
#pragma omp parallel if (rows * cols * N >= (1 << 18))
  {
    int nt = 1, tid = 0;
#ifdef _OPENMP
    nt = omp_get_num_threads();
    tid = omp_get_thread_num();
#endif
    const std::int64_t r0 = rows * tid / nt, r1 = rows * (tid + 1) / nt;
    thread_local std::vector<std::int32_t> part_buffer;  // this thread's rows x 32 tokens
    part_buffer.resize(std::max(part_buffer.size(), std::size_t(r1 - r0) * kTableTokens));
    const std::span<std::int32_t> part(part_buffer.data(), std::size_t(r1 - r0) * kTableTokens);
    thread_local std::vector<std::uint8_t> table_buffer(kBlockUnits * kUnitBytes + 64);  // one block's entries
    // Entries on cache lines (aligned loads).
    std::uint8_t* const entries = table_buffer.data() + (-reinterpret_cast<std::uintptr_t>(table_buffer.data()) & 63);
    for (int n0 = 0; n0 < N; n0 += kTableTokens) {
      const int tokens = std::min(kTableTokens, N - n0);
#pragma omp single
      transpose_tile(xq + std::int64_t(n0) * cols, tokens, cols, xt);
      std::fill(part.begin(), part.end(), 0);
      for (std::int64_t b = 0; b < blocks && r0 < r1; ++b) {
        build_table_units(xt, b * kBlockUnits, (b + 1) * kBlockUnits, entries);
        const std::uint8_t* wb = blocked + (b * rows + r0) * kBlockRowBytes;
        std::int64_t r = r0;
        for (; r + kRows <= r1; r += kRows, wb += kRows * kBlockRowBytes)
          block_table<kRows>(entries, wb, part.data() + (r - r0) * kTableTokens);
        for (; r < r1; ++r, wb += kBlockRowBytes) block_table<1>(entries, wb, part.data() + (r - r0) * kTableTokens);
      }
      store_table_tile(part.data(), r0, r1, n0, tokens, rows, offset, out);
#pragma omp barrier
    }
  }
}

}  // namespace

namespace {
// One row: s = max|x| / 127, codes round(x / s) (to nearest, ties to even), in [-127, 127].
__attribute__((target("avx2"))) float quantize_row_avx2(const float* x, std::int64_t cols, std::int8_t* q) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 mx = _mm256_setzero_ps();
  std::int64_t j = 0;
  for (; j + 8 <= cols; j += 8) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + j)));
  alignas(32) float m8[8];
  _mm256_store_ps(m8, mx);
  float m = 0;
  for (float v : m8) m = std::max(m, v);
  for (std::int64_t k = j; k < cols; ++k) m = std::max(m, std::fabs(x[k]));
  const float s = m / 127.0f, inv = s > 0 ? 1.0f / s : 0.0f;
  const __m256 vinv = _mm256_set1_ps(inv);
  j = 0;
  for (; j + 32 <= cols; j += 32) {
    __m256i v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * k), vinv));
    const __m256i p16a = _mm256_packs_epi32(v[0], v[1]), p16b = _mm256_packs_epi32(v[2], v[3]);
    __m256i p8 = _mm256_packs_epi16(p16a, p16b);  // lanes interleaved by the packs: fix the order
    p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    p8 = _mm256_max_epi8(p8, _mm256_set1_epi8(-127));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), p8);
  }
  for (; j < cols; ++j) q[j] = static_cast<std::int8_t>(std::clamp(std::nearbyint(x[j] * inv), -127.0f, 127.0f));
  return s;
}
}  // namespace

void quantize_activations(const float* x, int N, std::int64_t cols, std::int8_t* xq, float* scales) {
  const bool avx2 = cpu_has_avx2();
  for (int n = 0; n < N; ++n) {
    const float* row = x + std::int64_t(n) * cols;
    std::int8_t* q = xq + std::int64_t(n) * cols;
    if (avx2) {
      scales[n] = quantize_row_avx2(row, cols, q);
      continue;
    }
    float mx = 0;
    for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, std::fabs(row[j]));
    const float s = mx / 127.0f, inv = s > 0 ? 1.0f / s : 0.0f;
    scales[n] = s;
    for (std::int64_t j = 0; j < cols; ++j) q[j] = static_cast<std::int8_t>(std::clamp(std::nearbyint(row[j] * inv), -127.0f, 127.0f));
  }
}

const char* to_string(KernelPath p) {
  switch (p) {
    case KernelPath::vnni: return "vnni";
    case KernelPath::avx2: return "avx2";
    case KernelPath::portable: break;
  }
  return "portable";
}

KernelPath best_kernel_path(const Setting& s, std::int64_t cols, KernelPath limit) {
  const bool fast_shape = s.quantized() && cols % 64 == 0 && (!s.sparse() || (s.keep == 2 && s.group == 4));
  if (!fast_shape) return KernelPath::portable;
  if (limit >= KernelPath::vnni && cpu_has_vnni()) return KernelPath::vnni;
  if (limit >= KernelPath::avx2 && cpu_has_avx2()) return KernelPath::avx2;
  return KernelPath::portable;
}

PackedLinear::PackedLinear(const PackedMatrix& m, KernelPath limit) : m_(m), path_(best_kernel_path(m.setting, m.cols, limit)) {
  const std::int64_t K = m.kept_per_row();
  if (path_ == KernelPath::vnni) {
    offset_.resize(m.rows);
    for (std::int64_t r = 0; r < m.rows; ++r) {
      std::int32_t sum = 0;
      for (std::int64_t k = 0; k < K; ++k) sum += m.code(r, k);
      offset_[r] = 128 * sum;
    }
    if (m.setting.sparse()) blocked_ = block_matrix(m);
  }
  if (path_ != KernelPath::portable) return;
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

bool PackedLinear::uses_table(int N) const {
  return path_ == KernelPath::vnni && m_.setting.sparse() && N >= kTableMinTokens;
}

void PackedLinear::accumulate(const std::int8_t* xq, int N, std::int32_t* acc) const {
  if (!m_.setting.quantized()) throw UsageError("PackedLinear::accumulate needs an 8- or 4-bit setting");
  const bool sparse = m_.setting.sparse();
  if (path_ == KernelPath::vnni) {
    if (uses_table(N)) accumulate_table_vnni(m_, blocked_.data(), offset_.data(), xq, N, {.acc = acc});
    else if (m_.setting.bits == 8) (sparse ? accumulate_vnni<8, true> : accumulate_vnni<8, false>)(m_, offset_.data(), xq, N, acc);
    else (sparse ? accumulate_vnni<4, true> : accumulate_vnni<4, false>)(m_, offset_.data(), xq, N, acc);
  } else if (path_ == KernelPath::avx2 && N >= 4) {
    accumulate_tiled_avx2(m_, xq, N, acc);
  } else if (path_ == KernelPath::avx2) {
    accumulate_avx2(m_, xq, N, acc);
  } else {
    accumulate_portable(xq, N, acc);
  }
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
    // Scratch reused across calls: no page faults and no zeroing of fresh megabytes per call.
    thread_local std::vector<std::int8_t> xq;
    thread_local std::vector<float> sx;
    thread_local std::vector<std::int32_t> acc;
    xq.resize(std::max(xq.size(), std::size_t(N) * m_.cols));
    sx.resize(std::max(sx.size(), std::size_t(N)));
    acc.resize(std::max(acc.size(), std::size_t(N) * rows));
    quantize_activations(x, N, m_.cols, xq.data(), sx.data());
    if (uses_table(N)) {  // the output straight from the kernel's partial sums
      accumulate_table_vnni(m_, blocked_.data(), offset_.data(), xq.data(), N,
                            {.y = y, .sx = sx.data(), .sw = m_.scales.data(), .bias = bias});
      return;
    }
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
