// Random-LTD's gather and scatter of a batch's rows (Yao et al. 2022), the CPU reference of
// core::kernels::gather_rows / scatter_rows: for B sequences of Tn rows of C values and `kept` positions per
// sequence (positions [B*kept], each sequence's own, in [0, Tn)),
//   gather:  dst[b*kept + i] = src[b*Tn + positions[b*kept + i]]
//   scatter: dst[b*Tn + positions[b*kept + i]] = src[b*kept + i]   (other rows of dst untouched)
#pragma once
#include <cstdint>
#include <cstring>

namespace core::train {

template <class T>
void gather_token_rows(T* dst, const T* src, const std::int32_t* positions, int B, int Tn, int kept, int C) {
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < kept; ++i)
      std::memcpy(dst + (std::size_t(b) * kept + i) * C,
                  src + (std::size_t(b) * Tn + positions[std::size_t(b) * kept + i]) * C, std::size_t(C) * sizeof(T));
}

template <class T>
void scatter_token_rows(T* dst, const T* src, const std::int32_t* positions, int B, int Tn, int kept, int C) {
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < kept; ++i)
      std::memcpy(dst + (std::size_t(b) * Tn + positions[std::size_t(b) * kept + i]) * C,
                  src + (std::size_t(b) * kept + i) * C, std::size_t(C) * sizeof(T));
}

}  // namespace core::train
