// See heap.hpp.
#include "common/heap.hpp"

#include <cstdlib>  // defines __GLIBC__ (through <features.h>) before the test below; without a libc header it is undefined

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace core {

void retain_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace core
