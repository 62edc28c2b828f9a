// Large per-count arrays (triangle tables, per-root and per-edge counts, local-graph scratch, oriented
// degrees) in memory whose pages are mapped before use. In the virtual machines this runs on, the first
// access to a fresh 4 KiB page traps, ~15-40 us each even after MAP_POPULATE (2 MiB zeroed in 4 KiB
// pages: ~9 ms), while a 2 MiB transparent huge page costs ~0.4 ms (one trap and the zeroing). So:
//  - below 64 KiB: the default allocator;
//  - 64 KiB to 1 MiB: blocks (64 KiB multiples) of a process-wide pool carved from 2 MiB huge pages
//    and reused after release (never unmapped), so the tables of one small-graph count share one or two
//    huge pages instead of hundreds of 4 KiB ones;
//  - 1 MiB and more: a mapping of its own, 2 MiB-aligned and advised MADV_HUGEPAGE, unmapped on
//    release.
// Huge pages are advised (MADV_HUGEPAGE, honoured in THP's "madvise" and "always" modes) and populated
// by MADV_POPULATE_WRITE (Linux 5.14; older kernels fault on first touch, one fault per huge page).
// Only the cost differs: the contents are those of std::vector.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace core::graph {

namespace populated_detail {

constexpr std::size_t kPoolBytes = std::size_t{64} << 10;  // smallest request served here
constexpr std::size_t kOwnMapBytes = std::size_t{1} << 20;  // smallest request mapped alone

void* allocate(std::size_t bytes);              // bytes >= kPoolBytes; throws std::bad_alloc
void release(void* p, std::size_t bytes);       // as allocated
std::size_t pool_mapped_bytes();                // the pool's huge pages so far (tests)
void reserve_pool_page();                       // maps a huge page for the pool unless it has one with room

}  // namespace populated_detail

template <class T>
struct PopulatedAllocator {
  using value_type = T;

  PopulatedAllocator() = default;
  template <class U>
  PopulatedAllocator(const PopulatedAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < populated_detail::kPoolBytes) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(populated_detail::allocate(bytes));
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < populated_detail::kPoolBytes) ::operator delete(p);
    else populated_detail::release(p, bytes);
  }
  template <class U>
  bool operator==(const PopulatedAllocator<U>&) const { return true; }
};

template <class T>
using PopulatedVector = std::vector<T, PopulatedAllocator<T>>;

}  // namespace core::graph
