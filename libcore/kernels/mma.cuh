// Tensor-core building blocks in PTX (sm_80 and later) for the fused attention kernels: the bf16
// mma.sync m16n8k16 with fp32 accumulation, and ldmatrix.x4 with transposition. Fragment layouts
// (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"), lane = 4 g + q:
//   A 16x16, 4 regs of 2 bf16: a0 (row g, cols 2q, 2q+1), a1 (row g+8, same), a2 (row g, cols 2q+8,
//   2q+9), a3 (row g+8, same);  B 16x8, 2 regs: b0 (rows 2q, 2q+1, col g), b1 (rows 2q+8, 2q+9, col g);
//   C 16x8 fp32: c0, c1 (row g, cols 2q, 2q+1), c2, c3 (row g+8, same).
// Under TOOLKIT_SIMT_EMULATION they are the host emulator's (tests/support/simt/simt_mma.hpp).
#pragma once
#include <cstdint>

#include "kernels/device_utils.cuh"

namespace core::kernels::dev {

// d += a b for one warp's fragments.
__device__ inline void mma_bf16_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
#ifdef TOOLKIT_SIMT_EMULATION
  simt::mma_m16n8k16_bf16(d, a, b0, b1, d);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// ldmatrix.x4.trans: lanes 8j..8j+7 give the addresses (16-byte aligned, shared memory) of the 8 rows
// of 8 x 8 matrix j; r[j] gets this lane's two elements of its transpose (rows 2q, 2q+1 of column g).
__device__ inline void ldmatrix_x4_trans(std::uint32_t (&r)[4], const bf* row) {
#ifdef TOOLKIT_SIMT_EMULATION
  simt::ldmatrix_x4(r, row, true);
#else
  const auto addr = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

// Two bf16 elements at p (4-byte aligned) as one register, low half first.
__device__ inline std::uint32_t load_pair(const bf* p) { return *reinterpret_cast<const std::uint32_t*>(p); }

// (lo, hi) rounded to bf16 and packed into one register, low half first.
__device__ inline std::uint32_t pack_pair(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  std::uint32_t r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

}  // namespace core::kernels::dev
