// CPU kernels that run a packed matrix W [rows, cols] without decoding it: Y[N, rows] = X[N, cols] W^T + b.
// Integer settings (8 and 4 bits) quantize each input row symmetrically to int8 (s_x = max|x| / 127),
// accumulate code_w * code_x exactly in int32 and scale once: y = s_x s_w acc + b. The N:M structure is
// used directly: for 2:4 the packed 2-bit indices select the two kept inputs of every group of four.
// Paths, the fastest the CPU supports chosen at run time (__builtin_cpu_supports), for cols % 64 == 0
// and 8/4-bit values that are dense or 2:4 (every other setting, fp16/fp32 values included, runs a
// portable loop over the kept values):
// - vnni (AVX-512 VBMI + VNNI on 256-bit vectors): activations offset to unsigned bytes (x + 128) once
//   per call; per 32 kept weights the 64 index bits are expanded to byte selectors with one
//   vpmultishiftqb, one vpermi2b gathers the kept activations and one vpdpbusd multiplies and adds
//   them (exact int32); 128 sum(w) per row, computed at load time, removes the offset; int4 codes are
//   widened in registers. Blocks of 2 rows x up to 8 tokens share every weight load and selector; the
//   tokens are the outer loop so their activations stay in L1 while the weights stream; rows are split
//   over the threads (OpenMP) from 2^18 multiply-adds.
//   2:4 with 16 tokens or more: no gather per token. Per tile of 32 tokens a table holds, for every 8
//   inputs (4 kept weights of a row, one of 36 index patterns) and pattern, the 4 kept activations of
//   each token as a dword; per 4 kept weights a row broadcasts its codes and runs two 512-bit vpdpbusd
//   on the entry its pattern selects. The matrix is re-laid for it when loaded (codes as int8 and
//   entry offsets, blocks of 32 kept values per row: 1.5 bytes per kept value).
// - avx2: byte shuffles driven by the index nibbles (a 16-entry table per group; one token at a time),
//   tables of int16 activation pairs per (group, pattern) and vpmaddwd (4+ tokens); int4 rows widened
//   to int8 per row.
#pragma once
#include <cstdint>
#include <vector>

#include "nxm/packed.hpp"

namespace core::nxm {

enum class KernelPath { portable, avx2, vnni };
const char* to_string(KernelPath p);
// The fastest path of this CPU for a setting and width, at most `limit` (tests force the slower ones).
KernelPath best_kernel_path(const Setting& s, std::int64_t cols, KernelPath limit = KernelPath::vnni);

class PackedLinear {
 public:
  explicit PackedLinear(const PackedMatrix& m, KernelPath limit = KernelPath::vnni);
  std::int64_t rows() const { return m_.rows; }
  std::int64_t cols() const { return m_.cols; }
  const Setting& setting() const { return m_.setting; }

  // y[N, rows] = x[N, cols] W^T + bias (bias may be null).
  void forward(const float* x, int N, float* y, const float* bias) const;
  // Integer settings: acc[N, rows] = sum_k code_w[r, k] xq[n, col(r, k)] (exact int32).
  void accumulate(const std::int8_t* xq, int N, std::int32_t* acc) const;
  KernelPath path() const { return path_; }

 private:
  bool uses_table(int N) const;  // the vnni 2:4 table kernel runs N tokens
  void accumulate_portable(const std::int8_t* xq, int N, std::int32_t* acc) const;
  void forward_float(const float* x, int N, float* y) const;  // fp16/fp32 values
  PackedMatrix m_;
  std::vector<std::int32_t> cols_;  // portable path: the input column of every kept value [rows * kept]
  std::vector<float> vals_;         // portable float path: the kept values [rows * kept]
  std::vector<std::int8_t> codes_;  // portable integer path: the kept codes [rows * kept]
  std::vector<std::int32_t> offset_;  // vnni path: 128 * (sum of the kept codes) per row
  std::vector<std::uint8_t> blocked_;  // vnni path, 2:4: the matrix re-laid for the many-token table kernel
  KernelPath path_ = KernelPath::portable;
};

// Symmetric per-row int8 quantization of activations: xq[n, :] = round(x / s_n) (ties to even),
// s_n = max|x[n, :]| / 127.
void quantize_activations(const float* x, int N, std::int64_t cols, std::int8_t* xq, float* scales);

}  // namespace core::nxm
