// Sorted-set kernels for pattern matching: intersection, intersection size and difference of
// ascending, duplicate-free uint32 arrays. Skewed sizes use galloping (exponential + binary
// search from the small side); similar sizes use a branch-free merge, or an 8x8 all-pairs AVX2
// block compare (Schlegel et al. / Lemire et al. style) selected at run time when the CPU has it.
// Outputs need 8 slack slots past the largest possible result and must not alias an input.
// This header is self-contained (standard library and <immintrin.h> only): the compiled
// back-end embeds its text into the generated code.
#pragma once
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#define GZ_X86 1
#endif

namespace gzk {

using u32 = std::uint32_t;
constexpr std::size_t kGallopRatio = 24;

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
  if (have_avx2()) return merge_count_avx2(a, na, b, nb);
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
  if (have_avx2()) return merge_intersect_avx2(a, na, b, nb, out);
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

// pair_count_from for materialised sorted sets a and b.
inline std::uint64_t pair_count(const u32* a, std::size_t na, const u32* b, std::size_t nb, const u32* da,
                                int nda, const u32* db, int ndb) {
  return pair_count_from(
      na, nb, intersect_count(a, na, b, nb), da, nda, db, ndb, [&](u32 x) { return contains(a, na, x); },
      [&](u32 x) { return contains(b, nb, x); });
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
