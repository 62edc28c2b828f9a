// Element-wise bf16 <-> float conversion of host vectors (round to nearest even, see bf16.hpp).
#include "kernels/bf16.hpp"

namespace core::kernels {

std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_bf16(v[i]);
  return out;
}

std::vector<float> to_float(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

}  // namespace core::kernels
