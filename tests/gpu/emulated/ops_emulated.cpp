// libcore/kernels/ops.cu compiled by the host compiler for the SIMT emulator (tests/support/simt), so
// that test_kernels_emulated runs the same kernels as the device test, without a device.
#include "simt.hpp"
// (the emulator first)
#include "kernels/ops.cu"
