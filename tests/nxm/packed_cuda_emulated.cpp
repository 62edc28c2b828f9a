// libcore/nxm/packed_cuda.cu compiled by the host compiler for the SIMT emulator (tests/support/simt), so
// that test_nxm_cuda_emulated runs the device test's cases without a device.
#include "simt.hpp"
// (the emulator first)
#include "nxm/packed_cuda.cu"
