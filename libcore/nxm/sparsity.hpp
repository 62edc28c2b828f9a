// The two projections of N:M compression on row-major weight matrices W [rows (out), cols (in)]:
//  - N:M sparsity along the input (reduction) dimension (NxMTransformer, section 3): every run of
//    `group` consecutive weights of a row keeps its `keep` largest |w| (ties to the lower index) and
//    the others become 0. This is the Euclidean projection Pi onto the N:M set that ADMM's Z-step uses.
//  - symmetric per-output-row quantization to b bits (NxMiFormer): s = max_j |w_j| / (2^(b-1) - 1),
//    code = round(w / s) in [-(2^(b-1)-1), 2^(b-1)-1] (half away from zero), value = float(code) * s,
//    so zeros stay zero and |w - value| <= s / 2. Quantization-aware training uses the
//    straight-through estimator: the gradient at the quantized weights is applied to the latent ones.
// Requirements (checked): cols % group == 0 (DataError naming the tensor), 1 <= keep < group.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nxm/plan.hpp"

namespace core::nxm {

// mask[i] = 1 for the kept weights of W (N:M of `s`; all 1 for a dense setting).
void nm_mask(const float* w, std::int64_t rows, std::int64_t cols, const Setting& s, std::uint8_t* mask,
             const std::string& tensor);
// W <- Pi(W): the weights outside the N:M mask become 0.
void nm_project(float* w, std::int64_t rows, std::int64_t cols, const Setting& s, const std::string& tensor);
// Checks the shape against the setting: DataError naming the tensor when cols % group != 0.
void check_nm_shape(std::int64_t cols, const Setting& s, const std::string& tensor);

int quant_max(int bits);  // 2^(b-1) - 1: 127 for int8, 7 for int4
// Scale of one row: max |w| / quant_max(bits) (0 for an all-zero row).
float row_scale(const float* row, std::int64_t cols, int bits);
std::int32_t quantize_code(float w, float scale, int bits);  // round half away from zero, clamped

// Codes and per-row scales of a matrix (bits 8 or 4), and the matrix of their values.
struct QuantizedMatrix {
  std::vector<float> scales;        // [rows]
  std::vector<std::int8_t> codes;   // [rows * cols]
};
QuantizedMatrix quantize_rows(const float* w, std::int64_t rows, std::int64_t cols, int bits);
// W <- dequantize(quantize(W)) in place (float(code) * scale); no-op for bits 32. bits 16 rounds
// through fp16.
void fake_quantize(float* w, std::int64_t rows, std::int64_t cols, int bits);

// The compressed weights of a setting: W <- Q(Pi(W)) in place (projection, then quantization).
void compress_matrix(float* w, std::int64_t rows, std::int64_t cols, const Setting& s, const std::string& tensor);

}  // namespace core::nxm
