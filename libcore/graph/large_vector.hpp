// Vectors of gigabytes for graph building: the kernel is asked to back them with transparent huge pages
// (madvise MADV_HUGEPAGE before the first touch, which Linux honours when THP is in "madvise" mode), so
// filling one takes a page fault per 2 MiB instead of one per 4 KiB. Only a hint: the contents are the same.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace core::graph {

// n value-initialised elements.
template <class T>
std::vector<T> large_vector(std::size_t n) {
  std::vector<T> v;
  v.reserve(n);
  const long page_size = sysconf(_SC_PAGESIZE);
  const auto page = static_cast<std::uintptr_t>(page_size > 0 ? page_size : 4096);
  const auto begin = reinterpret_cast<std::uintptr_t>(v.data());
  const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + n * sizeof(T)) / page * page;
#ifdef MADV_HUGEPAGE
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
  v.resize(n);
  return v;
}

}  // namespace core::graph
