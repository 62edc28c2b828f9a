// The first thing a device test does: without a CUDA device it exits 77, which ctest reports as skipped
// (SKIP_RETURN_CODE); on the SIMT emulator the emulated runtime always answers.
#pragma once
#include <cstdio>
#include <cstdlib>

#include "kernels/runtime.hpp"

namespace core::test {

// Exits 77 naming `what` when no device answers; returns true otherwise (for a namespace-scope initializer).
inline bool device_or_skip(const char* what) {
  if (core::kernels::cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device answers: %s skipped\n", what);
    std::exit(77);
  }
  return true;
}

}  // namespace core::test
