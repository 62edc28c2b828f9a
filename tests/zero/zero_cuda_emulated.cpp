// The CUDA sources of issue 14's GPU side (zero's quantizers, comm's shared-GPU backend) compiled by the host
// compiler for the SIMT emulator (tests/support/simt), so that test_zero_cuda_emulated runs the device test's
// cases without a device.
#include "simt.hpp"
// (the emulator first)
#include "zero/quantize_cuda.cu"
#include "comm/shared_gpu_comm.cu"
