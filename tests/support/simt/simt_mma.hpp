// The PTX tensor-core instructions the attention kernels use (kernels/mma.cuh), on the host emulator
// (simt.hpp), as warp collectives with the PTX ISA's fragment layouts ("Matrix Fragments for
// mma.m16n8k16 with floating point type"; "ldmatrix"), lane = 4 g + q:
//   A 16x16 (4 regs of 2 bf16, low half first): element i at row g + 8 ((i / 2) % 2), col 2q + i % 2 + 8 (i / 4)
//   B 16x8  (2 regs): element i at row 2q + i % 2 + 8 (i / 2), col g
//   C 16x8  (4 fp32): element i at row g + 8 (i / 2), col 2q + i % 2
//   ldmatrix .m8n8 .x4: lanes 8j..8j+7 give the row addresses of matrix j (16-byte aligned, in shared
//   memory); register j of lane (g, q) gets row g, cols 2q, 2q+1 of matrix j, or with .trans rows 2q,
//   2q+1 of column g.
#pragma once
#include <cstdint>

namespace simt {

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d, a, {b0, b1}, c (fp32 sums in k order).
void mma_m16n8k16_bf16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1,
                       const float (&c)[4]);
// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 r, [row_address].
void ldmatrix_x4(std::uint32_t (&r)[4], const void* row_address, bool transpose);

}  // namespace simt
