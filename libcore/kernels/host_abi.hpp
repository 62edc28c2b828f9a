// What nvcc's host pass makes of the settings that every CUDA translation unit must share with the C++
// ones. Eigen sizes its alignment, and so picks its allocator, from the CPU flags (EIGEN_MAX_ALIGN_BYTES:
// 64 with AVX-512, else 16): a matrix resized in a .cu file and freed in a .cpp file corrupts the heap
// when the two disagree, which only shows on a device (the emulator builds .cu files as C++).
// CMakeLists.txt passes the C++ units' -march to nvcc's host compiler; test_kernels_host compares.
#pragma once

namespace core::kernels {

// EIGEN_MAX_ALIGN_BYTES as the CUDA translation units see it (defined only where CUDA is built).
int cuda_units_eigen_max_align_bytes();

}  // namespace core::kernels
