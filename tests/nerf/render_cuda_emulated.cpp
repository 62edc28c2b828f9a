// libcore/nerf/render_cuda.cu compiled by the host compiler for the SIMT emulator (tests/support/simt), so
// that test_nerf_cuda_emulated runs the device test's cases without a device.
#include "simt.hpp"
// (the emulator first)
#include "nerf/render_cuda.cu"
