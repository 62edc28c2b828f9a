// libcore/kernels/token_routing.cu compiled by the host compiler for the SIMT emulator (tests/support/simt),
// so that test_ltd_kernels_emulated runs the device test's cases without a device.
#include "simt.hpp"
// (the emulator first)
#include "kernels/token_routing.cu"
