// Sorted-set kernels for pattern matching: intersection, intersection size and difference of
// ascending, duplicate-free uint32 arrays. Skewed sizes use galloping (exponential + binary
// search from the small side); similar sizes use a branch-free merge, or an 8x8 all-pairs AVX2
// block compare (Schlegel et al. / Lemire et al. style) selected at run time when the CPU has it.
// Also the counting kernels of the plans' formulas: pairs, wedge tables and GraphPi's
// inclusion-exclusion over independent tail vertices (iep_count).
// Outputs need 16 slack slots (kSlack) past the largest possible result and must not alias an input.
// This header is self-contained (standard library and <immintrin.h> only): the compiled
// back-end embeds its text into the generated code.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#define GZ_X86 1
#endif

namespace gzk {

using u32 = std::uint32_t;
constexpr std::size_t kGallopRatio = 24;
constexpr std::size_t kSlack = 16;  // output slots past the result that a vector store may write

// The set bits of a bitmap of `words` words.
inline std::uint64_t popcount_words(const std::uint64_t* a, std::uint32_t words) {
  std::uint64_t n = 0;
  for (std::uint32_t w = 0; w < words; ++w) n += static_cast<std::uint64_t>(__builtin_popcountll(a[w]));
  return n;
}

// The elements intersect / intersect_count touch for lists of lengths a and b (plan cost models): both
// merged, or beyond kGallopRatio the short one galloped through the long one (1 + log2 of the ratio each).
inline double intersection_work(double a, double b) {
  const double lo = std::max(1.0, std::min(a, b)), hi = std::max(a, b);
  if (hi <= lo * static_cast<double>(kGallopRatio)) return a + b;
  return lo * (1 + std::log2(hi / lo));
}

// First index i with a[i] >= x.
inline std::size_t lower_index(const u32* a, std::size_t n, u32 x) {
  std::size_t lo = 0, len = n;
  while (len > 0) {
    const std::size_t half = len / 2;
    if (a[lo + half] < x) {
      lo += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  return lo;
}

// Whether intersect / subtract of a set of n elements below `bound` with the sorted list (b, nb) do the same
// work on the whole list as on its part below the bound, so that part need not be searched for: nothing lies
// above the bound, or both lengths choose a merge (nb <= kGallopRatio n, and over n / kGallopRatio of b's
// elements lie below the bound), which stops at the set's last element.
inline bool merge_whole_list(const u32* b, std::size_t nb, std::size_t n, u32 bound) {
  if (nb == 0 || b[nb - 1] < bound) return true;
  const std::size_t few = n / kGallopRatio;
  return nb <= kGallopRatio * n && few < nb && b[few] < bound;
}

inline bool contains(const u32* a, std::size_t n, u32 x) {
  const std::size_t i = lower_index(a, n, x);
  return i < n && a[i] == x;
}

// Galloping from the small array s into the large array l; emit(x) for each common element.
template <class Emit>
inline void gallop(const u32* s, std::size_t ns, const u32* l, std::size_t nl, Emit&& emit) {
  std::size_t base = 0;
  for (std::size_t i = 0; i < ns && base < nl; ++i) {
    const u32 x = s[i];
    std::size_t step = 1, hi = base;
    while (hi < nl && l[hi] < x) {
      base = hi + 1;
      hi += step;
      step <<= 1;
    }
    const std::size_t end = hi < nl ? hi + 1 : nl;
    base += lower_index(l + base, end - base, x);
    if (base < nl && l[base] == x) emit(x, i);
  }
}

inline std::size_t merge_intersect_scalar(const u32* a, std::size_t na, const u32* b, std::size_t nb, u32* out) {
  std::size_t i = 0, j = 0, k = 0;
  while (i < na && j < nb) {
    const u32 x = a[i], y = b[j];
    out[k] = x;
    k += (x == y);
    i += (x <= y);
    j += (y <= x);
  }
  return k;
}

inline std::size_t merge_count_scalar(const u32* a, std::size_t na, const u32* b, std::size_t nb) {
  std::size_t i = 0, j = 0, k = 0;
  while (i < na && j < nb) {
    const u32 x = a[i], y = b[j];
    k += (x == y);
    i += (x <= y);
    j += (y <= x);
  }
  return k;
}

#if GZ_X86
// Lane-compaction table: for each 8-bit mask, the indices of its set lanes, packed low.
struct CompactTable {
  alignas(32) u32 idx[256][8];
  constexpr CompactTable() : idx{} {
    for (int m = 0; m < 256; ++m) {
      int k = 0;
      for (int b = 0; b < 8; ++b)
        if ((m >> b) & 1) idx[m][k++] = static_cast<u32>(b);
      for (; k < 8; ++k) idx[m][k] = 0;
    }
  }
};
inline constexpr CompactTable kCompact{};

// Mask of lanes of va that occur anywhere in vb.
__attribute__((target("avx2"))) inline int block_match_mask(__m256i va, __m256i vb) {
  const __m256i rot = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
  __m256i m = _mm256_cmpeq_epi32(va, vb);
  for (int r = 1; r < 8; ++r) {
    vb = _mm256_permutevar8x32_epi32(vb, rot);
    m = _mm256_or_si256(m, _mm256_cmpeq_epi32(va, vb));
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(m));
}

__attribute__((target("avx2,popcnt"))) inline std::size_t merge_count_avx2(const u32* a, std::size_t na,
                                                                           const u32* b, std::size_t nb) {
  std::size_t i = 0, j = 0, k = 0;
  while (i + 8 <= na && j + 8 <= nb) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + j));
    k += static_cast<std::size_t>(__builtin_popcount(block_match_mask(va, vb)));
    const u32 amax = a[i + 7], bmax = b[j + 7];
    i += (amax <= bmax) ? 8 : 0;
    j += (bmax <= amax) ? 8 : 0;
  }
  return k + merge_count_scalar(a + i, na - i, b + j, nb - j);
}

__attribute__((target("avx2,popcnt"))) inline std::size_t merge_intersect_avx2(const u32* a, std::size_t na,
                                                                               const u32* b, std::size_t nb, u32* out) {
  std::size_t i = 0, j = 0, k = 0;
  while (i + 8 <= na && j + 8 <= nb) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + j));
    const int mask = block_match_mask(va, vb);
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(kCompact.idx[mask]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), _mm256_permutevar8x32_epi32(va, perm));
    k += static_cast<std::size_t>(__builtin_popcount(mask));
    const u32 amax = a[i + 7], bmax = b[j + 7];
    i += (amax <= bmax) ? 8 : 0;
    j += (bmax <= amax) ? 8 : 0;
  }
  return k + merge_intersect_scalar(a + i, na - i, b + j, nb - j, out + k);
}

inline bool have_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  return ok;
}

// AVX-512: 16x16 blocks. Mask of the lanes of a[0..16) that occur in b[0..16) (vb loaded from b),
// comparing a's lanes with each of b's values broadcast from memory (AVX-512F only: 16 independent
// compares, no shuffle chain).
__attribute__((target("avx512f"))) inline __mmask16 block_match_mask16(__m512i va, __m512i, const u32* b) {
  __mmask16 m0 = 0, m1 = 0;
  for (int r = 0; r < 16; r += 2) {
    m0 |= _mm512_cmpeq_epi32_mask(va, _mm512_set1_epi32(static_cast<int>(b[r])));
    m1 |= _mm512_cmpeq_epi32_mask(va, _mm512_set1_epi32(static_cast<int>(b[r + 1])));
  }
  return m0 | m1;
}

// The same mask from VP2INTERSECTD, where the CPU has it (one instruction for the 16x16 compare).
__attribute__((target("avx512f,avx512vp2intersect"))) inline __mmask16 block_match_mask16_vp2i(__m512i va, __m512i vb,
                                                                                               const u32*) {
  __mmask16 ka, kb;
  _mm512_2intersect_epi32(va, vb, &ka, &kb);
  return ka;
}

// Counting-only and writing merges over 16-element blocks (Match: one of the two masks above), the
// remainder by the 8-element AVX2 merge.
template <__mmask16 (*Match)(__m512i, __m512i, const u32*)>
__attribute__((target("avx512f,avx2,popcnt"))) inline std::size_t merge_count_avx512(const u32* a, std::size_t na,
                                                                                const u32* b, std::size_t nb) {
  std::size_t i = 0, j = 0, k = 0;
  while (i + 16 <= na && j + 16 <= nb) {
    const __m512i va = _mm512_loadu_si512(a + i), vb = _mm512_loadu_si512(b + j);
    k += static_cast<std::size_t>(__builtin_popcount(Match(va, vb, b + j)));
    const u32 amax = a[i + 15], bmax = b[j + 15];
    i += (amax <= bmax) ? 16 : 0;
    j += (bmax <= amax) ? 16 : 0;
  }
  return k + merge_count_avx2(a + i, na - i, b + j, nb - j);
}

template <__mmask16 (*Match)(__m512i, __m512i, const u32*)>
__attribute__((target("avx512f,avx2,popcnt"))) inline std::size_t merge_intersect_avx512(const u32* a, std::size_t na,
                                                                                    const u32* b, std::size_t nb,
                                                                                    u32* out) {
  std::size_t i = 0, j = 0, k = 0;
  while (i + 16 <= na && j + 16 <= nb) {
    const __m512i va = _mm512_loadu_si512(a + i), vb = _mm512_loadu_si512(b + j);
    const __mmask16 mask = Match(va, vb, b + j);
    _mm512_storeu_si512(out + k, _mm512_maskz_compress_epi32(mask, va));
    k += static_cast<std::size_t>(__builtin_popcount(mask));
    const u32 amax = a[i + 15], bmax = b[j + 15];
    i += (amax <= bmax) ? 16 : 0;
    j += (bmax <= amax) ? 16 : 0;
  }
  return k + merge_intersect_avx2(a + i, na - i, b + j, nb - j, out + k);
}

// The widest merge the CPU runs (chosen once): 0 scalar, 1 AVX2, 2 AVX-512F, 3 AVX-512 with VP2INTERSECT.
enum class SimdLevel : int { scalar = 0, avx2 = 1, avx512 = 2, vp2intersect = 3 };
inline SimdLevel simd_level() {
  static const SimdLevel level = [] {
    if (__builtin_cpu_supports("avx512f") && have_avx2())
      return __builtin_cpu_supports("avx512vp2intersect") ? SimdLevel::vp2intersect : SimdLevel::avx512;
    return have_avx2() ? SimdLevel::avx2 : SimdLevel::scalar;
  }();
  return level;
}
#endif

// |a ∩ b|
inline std::size_t intersect_count(const u32* a, std::size_t na, const u32* b, std::size_t nb) {
  if (na == 0 || nb == 0) return 0;
  if (na * kGallopRatio < nb || nb * kGallopRatio < na) {
    std::size_t k = 0;
    if (na < nb) gallop(a, na, b, nb, [&](u32, std::size_t) { ++k; });
    else gallop(b, nb, a, na, [&](u32, std::size_t) { ++k; });
    return k;
  }
#if GZ_X86
  switch (simd_level()) {
    case SimdLevel::vp2intersect: return merge_count_avx512<block_match_mask16_vp2i>(a, na, b, nb);
    case SimdLevel::avx512: return merge_count_avx512<block_match_mask16>(a, na, b, nb);
    case SimdLevel::avx2: return merge_count_avx2(a, na, b, nb);
    case SimdLevel::scalar: break;
  }
#endif
  return merge_count_scalar(a, na, b, nb);
}

// out = a ∩ b; returns its size.
inline std::size_t intersect(const u32* a, std::size_t na, const u32* b, std::size_t nb, u32* out) {
  if (na == 0 || nb == 0) return 0;
  if (na * kGallopRatio < nb || nb * kGallopRatio < na) {
    std::size_t k = 0;
    if (na < nb) gallop(a, na, b, nb, [&](u32 x, std::size_t) { out[k++] = x; });
    else gallop(b, nb, a, na, [&](u32 x, std::size_t) { out[k++] = x; });
    return k;
  }
#if GZ_X86
  switch (simd_level()) {
    case SimdLevel::vp2intersect: return merge_intersect_avx512<block_match_mask16_vp2i>(a, na, b, nb, out);
    case SimdLevel::avx512: return merge_intersect_avx512<block_match_mask16>(a, na, b, nb, out);
    case SimdLevel::avx2: return merge_intersect_avx2(a, na, b, nb, out);
    case SimdLevel::scalar: break;
  }
#endif
  return merge_intersect_scalar(a, na, b, nb, out);
}

// out = a \ b; returns its size.
inline std::size_t subtract(const u32* a, std::size_t na, const u32* b, std::size_t nb, u32* out) {
  std::size_t i = 0, j = 0, k = 0;
  if (na * kGallopRatio < nb) {
    for (; i < na; ++i)
      if (!contains(b, nb, a[i])) out[k++] = a[i];
    return k;
  }
  while (i < na && j < nb) {
    const u32 x = a[i], y = b[j];
    out[k] = x;
    k += (x < y);
    i += (x <= y);
    j += (y <= x);
  }
  while (i < na) out[k++] = a[i++];
  return k;
}

// |a \ b|
inline std::size_t subtract_count(const u32* a, std::size_t na, const u32* b, std::size_t nb) {
  return na - intersect_count(a, na, b, nb);
}

// Injective pairs (x, y), x in A \ da, y in B \ db, x != y, from ca = |A|, cb = |B|, cab = |A ∩ B|
// and membership tests in_a, in_b: |A'| |B'| - |A' ∩ B'| (inclusion-exclusion); da, db are the
// few vertices already matched that the pair must avoid.
template <class InA, class InB>
inline std::uint64_t pair_count_from(std::uint64_t ca, std::uint64_t cb, std::uint64_t cab, const u32* da, int nda,
                                     const u32* db, int ndb, InA&& in_a, InB&& in_b) {
  for (int i = 0; i < nda; ++i) {
    bool dup = false;
    for (int j = 0; j < i; ++j) dup = dup || da[j] == da[i];
    if (!dup && in_a(da[i])) {
      --ca;
      cab -= in_b(da[i]) ? 1 : 0;
    }
  }
  for (int i = 0; i < ndb; ++i) {
    bool dup = false;
    for (int j = 0; j < i; ++j) dup = dup || db[j] == db[i];
    if (dup || !in_b(db[i])) continue;
    --cb;
    bool in_da = false;
    for (int j = 0; j < nda; ++j) in_da = in_da || da[j] == db[i];
    if (!in_da) cab -= in_a(db[i]) ? 1 : 0;
  }
  return ca * cb - cab;
}

// GraphPi's inclusion-exclusion (Zhang et al., SC'20, sec. 4) for t pairwise non-adjacent last
// pattern vertices with candidate sets S_0..S_{t-1}: the number of injective tuples (x_0..x_{t-1}),
// x_i in S_i, from the sizes of the intersections alone. Over the set partitions of the t
// vertices, sum prod_B (-1)^(|B|-1) (|B|-1)! |∩_{i in B} S_i| (the Möbius function of the partition
// lattice), evaluated as the subset recursion f(R) = sum over blocks B of R holding R's lowest
// vertex of (-1)^(|B|-1) (|B|-1)! |∩_B S_i| f(R \ B), f({}) = 1: f(R) is itself the count of injective
// tuples of the vertices in R, so every partial sum is bounded by (t-1)! prod |S_i|.
constexpr int kMaxIep = 6;
using i128 = __int128;

// With label >= 0, copies the set (p, n) into out without the vertices of another label; when none
// would be removed (or label < 0) p is left pointing at the input.
inline std::size_t iep_label_filter(const u32*& p, std::size_t n, const std::int32_t* labels, int label, u32* out) {
  bool hit = false;
  for (std::size_t i = 0; i < n && !hit && label >= 0; ++i) hit = labels[p[i]] != label;
  if (!hit) return n;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (labels[p[i]] == label) out[k++] = p[i];
  p = out;
  return k;
}

// The inclusion-exclusion sum over the set partitions of the mask `full`, from the size of every group's
// intersection (iep_count), in the integer type T.
template <class T>
inline T partition_sum(int full, const std::uint64_t* size) {
  static constexpr std::int64_t kSign[kMaxIep + 1] = {0, 1, -1, 2, -6, 24, -120};  // (-1)^(b-1) (b-1)!
  T f[1 << kMaxIep];
  f[0] = 1;
  for (int r = 1; r <= full; ++r) {
    const int low = r & -r, others = r ^ low;
    T sum = 0;
    // Every block B = low + a subset of the others.
    for (int sub = others;; sub = (sub - 1) & others) {
      const int b = low | sub;
      if (size[b] != 0) sum += T(kSign[__builtin_popcount(b)]) * T(size[b]) * f[r ^ b];
      if (sub == 0) break;
    }
    f[r] = sum;
  }
  return f[full];
}

// Injective tuples over the t sets (p[i], n[i]) by inclusion-exclusion. scratch holds 2^t buffers
// of cap values (cap >= the largest set + kSlack). share[m] (when given) names, for each mask m of the
// sets, the smallest mask whose intersection is the same set (iep_shares: the same earlier neighbours and
// bounds); only the masks that are their own share are intersected. Removed values (the earlier levels'
// vertices) stay in the lists and are taken out of the sizes: value r < nr lies in the sets of member[r]'s
// bits and must not be counted in those of removed[r]'s, so each intersection over sets within member[r]
// that meets removed[r] holds one value fewer.
inline i128 iep_count(int t, const u32* const* p, const std::size_t* n, u32* scratch, std::size_t cap,
                      const std::uint8_t* share = nullptr, const std::uint32_t* member = nullptr,
                      const std::uint32_t* removed = nullptr, int nr = 0) {
  const int full = (1 << t) - 1;
  const u32* sp[1 << kMaxIep];
  std::uint64_t size[1 << kMaxIep];
  for (int m = 1; m <= full; ++m) {
    if ((m & (m - 1)) == 0) {
      const int i = __builtin_ctz(static_cast<unsigned>(m));
      sp[m] = p[i];
      size[m] = n[i];
      continue;
    }
    if (share && share[m] != m) {  // a smaller mask with the same set
      sp[m] = sp[share[m]];
      size[m] = size[share[m]];
      continue;
    }
    const int low = m & -m, rest = m ^ low;
    if (size[low] == 0 || size[rest] == 0) {
      sp[m] = nullptr;
      size[m] = 0;
    } else if (m == full) {  // no larger mask uses it: counted, not written
      sp[m] = nullptr;
      size[m] = intersect_count(sp[low], size[low], sp[rest], size[rest]);
    } else {
      u32* out = scratch + static_cast<std::size_t>(m) * cap;
      size[m] = intersect(sp[low], size[low], sp[rest], size[rest], out);
      sp[m] = out;
    }
  }
  for (int r = 0; r < nr; ++r)
    if (member[r] & removed[r])
      for (int m = 1; m <= full; ++m) size[m] -= (m & ~member[r]) == 0 && (m & removed[r]) ? 1 : 0;
  // Every partial sum is bounded by (t-1)! prod |S_i| (< 2^7 prod |S_i|): 64-bit arithmetic where that fits.
  int bits = 7;
  for (int i = 0; i < t; ++i) bits += 64 - __builtin_clzll(size[1 << i] | 1);
  return bits < 63 ? partition_sum<std::int64_t>(full, size) : partition_sum<i128>(full, size);
}

// count += tuples / redundancy (exact: the tuples of one prefix come in whole classes); false, and
// count unchanged, when the sum would pass 2^64 - 1.
inline bool add_iep_matches(std::uint64_t& count, i128 tuples, std::uint64_t redundancy) {
  std::uint64_t sum = 0;
  if (tuples >= 0 && tuples <= static_cast<i128>(~std::uint64_t{0})) {  // 64-bit division: the common case
    if (__builtin_add_overflow(count, static_cast<std::uint64_t>(tuples) / redundancy, &sum)) return false;
    count = sum;
    return true;
  }
  const i128 m = tuples / static_cast<i128>(redundancy);
  if (m > static_cast<i128>(~std::uint64_t{0}) || __builtin_add_overflow(count, static_cast<std::uint64_t>(m), &sum))
    return false;
  count = sum;
  return true;
}

// Wedge tables over the CSR graph (off, adj). wedge_fill_one adds 1 to common[x] for every
// neighbour x of w, so filling from every w of a set S gives common[x] = |S ∩ N(x)|;
// wedge_clear_one zeroes what it wrote. wedge_fill / wedge_clear do it for S = N(v).
inline void wedge_fill_one(const std::uint64_t* off, const u32* adj, u32 w, u32* common) {
  for (std::uint64_t f = off[w]; f < off[w + 1]; ++f) ++common[adj[f]];
}
inline void wedge_clear_one(const std::uint64_t* off, const u32* adj, u32 w, u32* common) {
  for (std::uint64_t f = off[w]; f < off[w + 1]; ++f) common[adj[f]] = 0;
}
inline void wedge_fill(const std::uint64_t* off, const u32* adj, u32 v, u32* common) {
  for (std::uint64_t e = off[v]; e < off[v + 1]; ++e) wedge_fill_one(off, adj, adj[e], common);
}
inline void wedge_clear(const std::uint64_t* off, const u32* adj, u32 v, u32* common) {
  for (std::uint64_t e = off[v]; e < off[v + 1]; ++e) wedge_clear_one(off, adj, adj[e], common);
}

}  // namespace gzk
