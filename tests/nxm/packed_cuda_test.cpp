// The packed linears on a CUDA device (nxm/packed_cuda.hpp) against the CPU: on random packed matrices
// of 2:4, 1:4, 4:8, 3:8, 2:6 and dense settings in int8 and int4, with ragged shapes (row counts not a
// multiple of the block's 4 rows, widths not a multiple of 4 columns) and 1 to 19 tokens (several token
// tiles of 8), the device's int32 sums equal a brute-force integer product of the unpacked codes and the
// CPU kernel's sums exactly, and its output with a bias equals the CPU kernel's (1e-6 relative: the
// same s_x s_w acc + b, only the rounding of a fused multiply-add may differ); a float setting is
// refused; a packed BERT and a packed GPT with their 8/4-bit linears on the device give the CPU's logits.
// Exits 77 (skipped) where no CUDA device answers; test_nxm_cuda_emulated runs the same cases on the SIMT
// emulator (tests/support/simt).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "device_or_skip.hpp"
#include "common/errors.hpp"
#include "kernels/runtime.hpp"
#include "nxm/kernel.hpp"
#include "nxm/packed.hpp"
#include "nxm/packed_cuda.hpp"
#include "nxm/packed_model.hpp"
#include "train/params.hpp"

using namespace core::nxm;

namespace {

const bool kHaveDevice = core::test::device_or_skip("packed CUDA linear tests");

std::vector<float> random_values(std::size_t n, float stddev, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// acc[n, r] = sum over the kept values of row r of code * xq[n, column], from the format's own decoding.
std::vector<std::int32_t> brute_force(const PackedMatrix& m, const std::vector<std::int8_t>& xq, int N) {
  std::vector<std::int32_t> acc(std::size_t(N) * m.rows, 0);
  std::vector<float> vals;
  std::vector<std::int32_t> cols;
  for (std::int64_t r = 0; r < m.rows; ++r) {
    m.row(r, vals, cols);
    for (int n = 0; n < N; ++n)
      for (std::size_t k = 0; k < cols.size(); ++k)
        acc[n * m.rows + r] += m.code(r, std::int64_t(k)) * xq[n * m.cols + cols[k]];
  }
  return acc;
}

struct Case {
  Setting setting;
  std::int64_t rows, cols;
};

}  // namespace

TEST_CASE("CUDA packed linear: exact int32 sums and the CPU kernel's output, N:M and dense, int8 and int4") {
  const Case cases[] = {
      {{2, 4, 8}, 37, 76},  {{2, 4, 4}, 37, 76},  {{2, 4, 8}, 6, 1024}, {{1, 4, 8}, 9, 60},  {{1, 4, 4}, 9, 60},
      {{4, 8, 8}, 13, 72},  {{4, 8, 4}, 13, 72},  {{3, 8, 8}, 5, 40},   {{2, 6, 4}, 7, 42},  {{0, 0, 8}, 5, 38},
      {{0, 0, 4}, 5, 38},   {{2, 4, 8}, 1, 4},
  };
  unsigned seed = 1;
  for (const Case& c : cases) {
    const PackedMatrix m = pack_matrix("h.0.attn.c_attn.weight", random_values(std::size_t(c.rows * c.cols), 0.3f, seed++).data(),
                                       c.rows, c.cols, c.setting);
    const auto bias = random_values(std::size_t(c.rows), 0.1f, seed++);
    const PackedLinear cpu(m);
    const CudaPackedLinear gpu(m, bias);
    CHECK(gpu.rows() == c.rows);
    CHECK(gpu.device_bytes() == m.values.size() + m.indices.size() + 4 * m.scales.size() + 4 * bias.size());
    for (int N : {1, 3, 8, 19}) {
      CAPTURE(c.setting.to_string());
      CAPTURE(c.rows);
      CAPTURE(c.cols);
      CAPTURE(N);
      // Activations with outliers, so that the int8 codes span the whole range.
      auto x = random_values(std::size_t(N) * c.cols, 1.0f, seed++);
      for (std::size_t i = 0; i < x.size(); i += 7) x[i] *= 5.0f;
      std::vector<std::int8_t> xq(x.size());
      std::vector<float> sx(N);
      quantize_activations(x.data(), N, c.cols, xq.data(), sx.data());

      const auto expected = brute_force(m, xq, N);
      std::vector<std::int32_t> host(expected.size()), device(expected.size());
      cpu.accumulate(xq.data(), N, host.data());
      gpu.accumulate(xq.data(), N, device.data());
      REQUIRE(host == expected);
      CHECK(device == expected);

      std::vector<float> y_cpu(expected.size()), y_gpu(expected.size());
      cpu.forward(x.data(), N, y_cpu.data(), bias.data());
      gpu.forward(x.data(), N, y_gpu.data());
      double diff = 0, scale = 0;
      for (std::size_t i = 0; i < y_cpu.size(); ++i) {
        diff = std::max(diff, std::abs(double(y_gpu[i]) - double(y_cpu[i])));
        scale = std::max(scale, std::abs(double(y_cpu[i])));
      }
      CHECK(scale > 0);
      CHECK(diff <= 1e-6 * scale);
    }
  }
}

TEST_CASE("CUDA packed linear: a float setting and a wrong bias are refused") {
  const auto w = random_values(8 * 16, 0.3f, 3);
  CHECK_THROWS_AS(CudaPackedLinear(pack_matrix("w", w.data(), 8, 16, Setting{2, 4, 16}), {}), core::UsageError);
  const std::vector<float> short_bias(3, 0.0f);
  CHECK_THROWS_AS(CudaPackedLinear(pack_matrix("w", w.data(), 8, 16, Setting{2, 4, 8}), short_bias), core::UsageError);
}

#ifdef TOOLKIT_HAVE_CUDA  // PackedTransformer's device path exists in CUDA builds only
TEST_CASE("PackedTransformer on the device: the CPU's outputs (BERT logits, GPT LM logits); fp16 stays on the CPU") {
  for (const char* arch : {"bert", "gpt"}) {
    CAPTURE(arch);
    core::train::ModelConfig c;
    c.arch = arch;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 64;
    c.n_positions = 16;
    c.vocab_size = 257;
    const core::train::ParamLayout layout(c);
    core::train::FlatBuffers<float> w(layout);
    core::train::init_parameters(w, 5);
    for (int l = 0; l < c.n_layer; ++l)  // biases the device must add (the initialisation's are zero)
      for (auto t : {core::train::kQkvB, core::train::kAttnProjB, core::train::kFcB, core::train::kFcProjB}) {
        const auto b = random_values(std::size_t(layout.block(l, t).numel), 0.1f, unsigned(10 * l + t));
        std::copy(b.begin(), b.end(), w.block(l, t));
      }
    const PackedModel m =
        pack_model(w, parse_plan("qkv=2:4:8,ao=1:4:4,ffn1=dense:8,ffn2=2:4:16"), {{"tokenizer", "bytes"}});
    PackedTransformer cpu(m), gpu(m, LinearDevice::cuda);
    CHECK(cpu.device_linears() == 0);
    CHECK(gpu.device_linears() == 2 * 3);  // qkv, ao and ffn1 of both blocks
    const std::vector<std::int32_t> tokens = {256, 72, 101, 108, 108, 111, 33, 10, 3, 200, 17};
    const auto a = cpu.run(tokens), b = gpu.run(tokens);
    CHECK(a.size() == (c.arch == "gpt" ? tokens.size() * 257 : std::size_t(c.num_labels)));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-4));
  }
}
#endif
