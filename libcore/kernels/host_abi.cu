// The CUDA units' view of the settings they must share with the C++ units (host_abi.hpp).
#include <Eigen/Core>

#include "kernels/host_abi.hpp"

namespace core::kernels {

int cuda_units_eigen_max_align_bytes() { return EIGEN_MAX_ALIGN_BYTES; }

}  // namespace core::kernels
