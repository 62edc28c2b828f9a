// Packed format and kernels: pack -> unpack is bit-exact against compress_matrix; the kernels'
// integer accumulators equal a brute-force integer product of the unpacked codes (AVX2 and portable
// paths), their float output the dense product of the unpacked weights; a whole model round-trips
// through the file; corrupted files are refused naming the tensor.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

#include "common/errors.hpp"
#include "nxm/kernel.hpp"
#include "nxm/packed.hpp"
#include "nxm/sparsity.hpp"
#include "test_support.hpp"

using namespace core::nxm;

namespace {
std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.3f);
  std::vector<float> w(rows * cols);
  for (auto& x : w) x = nd(rng);
  return w;
}
const Setting kSettings[] = {{2, 4, 8}, {2, 4, 4}, {1, 4, 8}, {4, 8, 4}, {0, 0, 8}, {0, 0, 4},
                             {0, 0, 16}, {2, 4, 32}, {2, 4, 16}, {1, 4, 4}};

core::train::ModelConfig packing_bert() {
  core::train::ModelConfig c;
  c.arch = "bert";
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 64;
  c.n_positions = 16;
  c.vocab_size = 257;
  return c;
}
}  // namespace

TEST_CASE("pack -> unpack gives exactly the compressed weights, for every setting") {
  for (const Setting& s : kSettings) {
    CAPTURE(s.to_string());
    const std::int64_t rows = 12, cols = 128;
    const auto w = random_matrix(rows, cols, 5);
    std::vector<float> c = w;
    compress_matrix(c.data(), rows, cols, s, "w");
    const PackedMatrix p = pack_matrix("w", w.data(), rows, cols, s);
    p.validate();
    const auto u = p.unpack();
    CHECK(std::memcmp(u.data(), c.data(), c.size() * sizeof(float)) == 0);
    CHECK(std::int64_t(p.values.size()) == rows * p.value_row_bytes());
    if (s.sparse() && s.group == 4) CHECK(p.index_row_bytes() == cols / 4 * s.keep * 2 / 8);  // 2 bits per kept value
  }
}

namespace {
// The kernel of `limit` (or the best below it on this CPU) against brute force: int32 accumulators
// equal the integer product of the unpacked codes and the quantized activations; the float output is
// the dense product of the unpacked weights (1e-5 relative).
void check_kernel(const PackedMatrix& p, KernelPath limit, const std::vector<int>& token_counts) {
  const std::int64_t rows = p.rows, cols = p.cols;
  const Setting s = p.setting;
  const PackedLinear lin(p, limit);
  CHECK(lin.path() == best_kernel_path(s, cols, limit));
  const auto u = p.unpack();
  for (int N : token_counts) {
    CAPTURE(N);
    const auto x = random_matrix(N, cols, 100 + N);
    std::vector<float> bias(rows);
    for (std::int64_t r = 0; r < rows; ++r) bias[r] = 0.01f * float(r);
    std::vector<float> y(N * rows);
    lin.forward(x.data(), N, y.data(), bias.data());
    std::vector<float> xd = x;  // the activations the kernel multiplies
    if (s.quantized()) {
      std::vector<std::int8_t> xq(N * cols);
      std::vector<float> sx(N);
      quantize_activations(x.data(), N, cols, xq.data(), sx.data());
      std::vector<std::int32_t> acc(N * rows);
      lin.accumulate(xq.data(), N, acc.data());
      int wrong = 0;
      for (int n = 0; n < N; ++n)
        for (std::int64_t r = 0; r < rows; ++r) {
          std::int64_t ref = 0;
          for (std::int64_t j = 0; j < cols; ++j)
            ref += std::lround(u[r * cols + j] / (p.scales[r] > 0 ? p.scales[r] : 1.0f)) * xq[n * cols + j];
          wrong += acc[n * rows + r] != ref;
        }
      CHECK(wrong == 0);
      for (int n = 0; n < N; ++n)
        for (std::int64_t j = 0; j < cols; ++j) xd[n * cols + j] = float(xq[n * cols + j]) * sx[n];
    }
    int wrong = 0;
    for (int n = 0; n < N; ++n)
      for (std::int64_t r = 0; r < rows; ++r) {
        double ref = bias[r], mag = std::fabs(bias[r]);
        for (std::int64_t j = 0; j < cols; ++j) {
          ref += double(u[r * cols + j]) * xd[n * cols + j];
          mag += std::fabs(double(u[r * cols + j]) * xd[n * cols + j]);
        }
        wrong += !(std::fabs(y[n * rows + r] - ref) <= 1e-5 * mag + 1e-7);
      }
    CHECK(wrong == 0);
  }
}
}  // namespace

TEST_CASE("kernels: exact integer accumulation and the dense product of the unpacked weights, every path") {
  const bool vnni = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  for (const Setting& s : kSettings) {
    for (const std::int64_t cols : {std::int64_t(128), std::int64_t(40)}) {
      if (s.sparse() && cols % s.group) continue;
      CAPTURE(s.to_string());
      CAPTURE(cols);
      const std::int64_t rows = 25;  // odd: the vnni path's single-row remainder
      const auto w = random_matrix(rows, cols, 9);
      const PackedMatrix p = pack_matrix("w", w.data(), rows, cols, s);
      const bool fast = cols == 128 && s.quantized() && (!s.sparse() || (s.keep == 2 && s.group == 4));
      if (fast && vnni) CHECK(best_kernel_path(s, cols) == KernelPath::vnni);
      if (fast && __builtin_cpu_supports("avx2")) CHECK(best_kernel_path(s, cols, KernelPath::avx2) == KernelPath::avx2);
      if (!fast) CHECK(best_kernel_path(s, cols) == KernelPath::portable);
      for (KernelPath limit : {KernelPath::portable, KernelPath::avx2, KernelPath::vnni}) {
        CAPTURE(to_string(limit));
        if (limit != KernelPath::portable && best_kernel_path(s, cols, limit) == best_kernel_path(s, cols, KernelPath(int(limit) - 1)))
          continue;  // the same kernel as the limit below
        check_kernel(p, limit, {1, 3, 7, 20});
      }
    }
  }
}

TEST_CASE("kernels: BERT-like widths split over threads give the same exact accumulators") {
  // rows x kept x tokens above the threading threshold; 1024 inputs = 16 chunks of 64, 98 rows: the table
  // kernel's 4-row blocks leave a remainder on each of two threads.
  for (const Setting& s : {Setting{2, 4, 8}, Setting{2, 4, 4}, Setting{0, 0, 8}}) {
    CAPTURE(s.to_string());
    const auto w = random_matrix(98, 1024, 13);
    const PackedMatrix p = pack_matrix("w", w.data(), 98, 1024, s);
    check_kernel(p, KernelPath::vnni, {1, 9, 16, 40});  // 2:4 from 16 tokens: the table kernel, tiles of 32
  }
}

TEST_CASE("a packed model round-trips through its file; corrupted files name the tensor") {
  core::test::TempDir tmp("nxm_packed");
  const core::train::ParamLayout layout(packing_bert());
  core::train::FlatBuffers<float> w(layout);
  core::train::init_parameters(w, 3);
  const Plan plan = parse_plan("qkv=2:4:8,ao=2:4:4,ffn1=dense:8,ffn2=1:4:16");
  const PackedModel m = pack_model(w, plan, {{"tokenizer", "bytes"}});
  const auto path = tmp / "model.nxm.safetensors";
  write_packed(path, m);
  CHECK(is_packed_file(path));
  const PackedModel back = read_packed(path);
  CHECK(back.plan == plan);
  CHECK(back.info["tokenizer"] == "bytes");
  core::train::FlatBuffers<float> a(layout), b(layout);
  m.unpack_into(a);
  back.unpack_into(b);
  for (int g = 0; g < layout.num_groups(); ++g)
    CHECK(std::memcmp(a.group(g), b.group(g), layout.groups()[g].size * sizeof(float)) == 0);
  // Unpacked component matrices equal compress_matrix of the originals; other tensors unchanged.
  for (const auto& c : component_matrices(layout)) {
    std::vector<float> ref(w.tensor(c.group, c.tensor), w.tensor(c.group, c.tensor) + c.rows * c.cols);
    compress_matrix(ref.data(), c.rows, c.cols, plan[c.component], c.name);
    CHECK(std::memcmp(ref.data(), b.tensor(c.group, c.tensor), ref.size() * 4) == 0);
  }
  CHECK(std::memcmp(w.embed(core::train::kWte), b.embed(core::train::kWte), 257 * 64 * 4) == 0);

  // Corruptions: an index nibble that repeats a position (1, 1), an int4 code -8, a truncated file.
  std::string bytes = core::test::read_text(path);
  const auto corrupt = [&](const std::string& tensor, std::size_t offset, char value) {
    const core::io::SafetensorsFile f(path);
    const auto t = f.get(tensor);
    const std::size_t at = static_cast<std::size_t>(reinterpret_cast<const char*>(t.bytes.data()) -
                                                    reinterpret_cast<const char*>(f.get(f.names().front()).bytes.data()));
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    // Offsets of the first tensor are 0 (contiguous data): the data starts after 8 + header bytes.
    std::string changed = bytes;
    changed[8 + header + at + offset] = value;
    const auto bad = tmp / ("bad_" + tensor + ".safetensors");
    core::test::write_text(bad, changed);
    return bad;
  };
  for (const auto& [tensor, value] : {std::pair<std::string, char>{"h.0.attn.c_attn.weight.indices", 0x55},
                                      {"h.1.attn.c_proj.weight.values", char(0x88)}}) {
    const auto bad = corrupt(tensor, 0, value);
    try {
      read_packed(bad);
      FAIL("corruption not detected in " << tensor);
    } catch (const core::DataError& e) {
      const std::string msg = e.what();
      CHECK(msg.find(tensor.substr(0, tensor.rfind('.'))) != std::string::npos);
    }
  }
  core::test::write_text(tmp / "trunc.safetensors", bytes.substr(0, bytes.size() - 100));
  CHECK_THROWS_AS(read_packed(tmp / "trunc.safetensors"), core::DataError);
}

TEST_CASE("activation quantization: codes round(x / s) with s = max|x| / 127, AVX2 and tail alike") {
  for (const std::int64_t cols : {std::int64_t(64), std::int64_t(45)}) {
    const auto x = random_matrix(3, cols, 21);
    std::vector<std::int8_t> q(3 * cols);
    std::vector<float> s(3);
    quantize_activations(x.data(), 3, cols, q.data(), s.data());
    for (int n = 0; n < 3; ++n) {
      float mx = 0;
      for (std::int64_t j = 0; j < cols; ++j) mx = std::max(mx, std::fabs(x[n * cols + j]));
      CHECK(s[n] == mx / 127.0f);
      for (std::int64_t j = 0; j < cols; ++j) {
        CHECK(int(q[n * cols + j]) == int(std::nearbyint(x[n * cols + j] * (1.0f / s[n]))));
        CHECK(std::abs(int(q[n * cols + j])) <= 127);
      }
    }
  }
}
