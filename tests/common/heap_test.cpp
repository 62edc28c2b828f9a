// retain_freed_memory (common/heap.hpp): afterwards a 1 MiB block, above glibc's default mmap threshold of
// 128 KiB, comes from the heap instead of a fresh mapping (mallinfo2().hblks counts the mapped blocks).
#include <doctest/doctest.h>

#include <cstdlib>

#include "common/heap.hpp"
#if defined(__GLIBC__)
#include <malloc.h>
#endif

TEST_CASE("heap: retain_freed_memory serves a 1 MiB block from the heap, not from a fresh mapping") {
#if defined(__GLIBC__)
  core::retain_freed_memory();
  const auto mapped_before = mallinfo2().hblks;
  void* block = std::malloc(1 << 20);
  REQUIRE(block != nullptr);
  const auto mapped_during = mallinfo2().hblks;
  std::free(block);
  CHECK(mapped_during == mapped_before);
#endif
}
