// Sorting one vertex list of a graph being built (relabelling, R-MAT buckets): short lists by std::sort, longer
// ones by an LSD radix sort with 8-bit digits (one counting pass for all digits, then one stable scatter per
// digit, only as many digits as the ids' bound needs, none where all entries share the digit), linear where std::sort takes log2(d) comparisons per
// entry, most of them mispredicted. The result is the same ascending list either way.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace core::graph {

// Sorts [first, last), every id below 2^bits (bits <= 32), ascending; `scratch` is resized to the list's
// length where it is shorter (keep one per thread).
inline void sort_ids(std::uint32_t* first, std::uint32_t* last, int bits, std::vector<std::uint32_t>& scratch) {
  // Below this many entries std::sort is as fast: 256 bins per digit to clear and sum.
  constexpr std::ptrdiff_t kRadixFrom = 64;
  const std::ptrdiff_t d = last - first;
  if (d < kRadixFrom) {
    std::sort(first, last);
    return;
  }
  const int digits = std::max(1, (bits + 7) / 8);
  if (scratch.size() < static_cast<std::size_t>(d)) scratch.resize(static_cast<std::size_t>(d));
  std::uint32_t count[4][256] = {};
  for (const std::uint32_t* x = first; x != last; ++x)
    for (int k = 0; k < digits; ++k) ++count[k][(*x >> (8 * k)) & 0xff];
  std::uint32_t* from = first;
  std::uint32_t* to = scratch.data();
  for (int k = 0; k < digits; ++k) {
    if (count[k][(*first >> (8 * k)) & 0xff] == static_cast<std::uint32_t>(d)) continue;  // one value: in order
    std::uint32_t at = 0;
    for (std::uint32_t& c : count[k]) at += std::exchange(c, at);
    const int shift = 8 * k;
    for (const std::uint32_t* x = from; x != from + d; ++x) to[count[k][(*x >> shift) & 0xff]++] = *x;
    std::swap(from, to);
  }
  if (from != first) std::copy(from, from + d, first);
}

// The bits that ids below `bound` need (at least 1).
inline int id_bits(std::uint64_t bound) { return std::max(1, static_cast<int>(std::bit_width(bound > 0 ? bound - 1 : 0))); }

}  // namespace core::graph
