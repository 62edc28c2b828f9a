// The CUDA units of core::kernels see Eigen's alignment as this C++ unit does (kernels/host_abi.hpp):
// without the same -march in nvcc's host pass, nice-slam-run's device path freed a matrix allocated by
// the other allocator and crashed on the H200. Runs without a device.
#include <doctest/doctest.h>

#include <Eigen/Core>

#ifdef TOOLKIT_HAVE_CUDA
#include "kernels/host_abi.hpp"

TEST_CASE("CUDA and C++ translation units agree on Eigen's alignment") {
  CHECK(core::kernels::cuda_units_eigen_max_align_bytes() == EIGEN_MAX_ALIGN_BYTES);
}
#endif
