// Large per-count arrays (triangle tables, per-root and per-edge counts, local-graph scratch) whose
// pages are mapped when they are allocated. Touching fresh 4 KiB pages one by one costs a page fault
// each, ~14 us in the virtual machines this runs on (3 MB zeroed: 10.8 ms, more than the triangle
// pass that fills it), and even pages populated by MAP_POPULATE cost ~15 us each at their first write
// there (2 MiB: 9 ms). So:
//  - 1 MiB and more: a 2 MiB-aligned mapping advised MADV_HUGEPAGE (honoured when transparent huge
//    pages are in "madvise" or "always" mode) and populated by MADV_POPULATE_WRITE (Linux 5.14; on
//    older kernels the pages fault on first touch, one fault per 2 MiB): 2 MiB mapped and zeroed in
//    ~0.4 ms there;
//  - 64 KiB to 1 MiB: mmap with MAP_POPULATE (the huge page's 2 MiB would cost more than the pages);
//  - smaller: the default allocator.
// Only the cost differs: the contents are those of std::vector.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace core::graph {

namespace populated_detail {

constexpr std::size_t kMapBytes = std::size_t{64} << 10;
constexpr std::size_t kHugeBytes = std::size_t{1} << 20;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

inline std::size_t huge_length(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

// A kHugePage-aligned mapping of huge_length(bytes): mapped one huge page longer, the ends trimmed.
inline void* map_huge(std::size_t bytes) {
  const std::size_t len = huge_length(bytes);
  void* p = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > base) ::munmap(p, aligned - base);
  if (const std::uintptr_t tail = base + len + kHugePage - (aligned + len)) ::munmap(reinterpret_cast<void*>(aligned + len), tail);
  void* a = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  ::madvise(a, len, MADV_HUGEPAGE);
#endif
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; refused (EINVAL) by older kernels: pages fault lazily
#endif
  ::madvise(a, len, MADV_POPULATE_WRITE);
  return a;
}

}  // namespace populated_detail

template <class T>
struct PopulatedAllocator {
  using value_type = T;

  PopulatedAllocator() = default;
  template <class U>
  PopulatedAllocator(const PopulatedAllocator<U>&) {}

  T* allocate(std::size_t n) {
    using namespace populated_detail;
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kMapBytes) return static_cast<T*>(::operator new(bytes));
    if (bytes >= kHugeBytes) return static_cast<T*>(map_huge(bytes));
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    using namespace populated_detail;
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kMapBytes) ::operator delete(p);
    else ::munmap(p, bytes >= kHugeBytes ? huge_length(bytes) : bytes);
  }
  template <class U>
  bool operator==(const PopulatedAllocator<U>&) const { return true; }
};

template <class T>
using PopulatedVector = std::vector<T, PopulatedAllocator<T>>;

}  // namespace core::graph
