// N:M projection against brute force over every keep-subset of a group, idempotence and ties; the
// quantizer's codes, error bound and zeros; compressed matrices' structure.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/errors.hpp"
#include "nxm/sparsity.hpp"

using namespace core::nxm;

namespace {
// The kept set of one group by brute force: the subset of `keep` indices with the largest sum of
// squares (the Euclidean projection), over all subsets in lexicographic order (first best wins).
std::vector<int> brute_force_kept(const float* x, int keep, int group) {
  std::vector<int> best;
  double best_sum = -1;
  for (unsigned m = 0; m < (1u << group); ++m) {
    if (__builtin_popcount(m) != keep) continue;
    double s = 0;
    for (int i = 0; i < group; ++i)
      if (m >> i & 1) s += double(x[i]) * x[i];
    if (s > best_sum) {
      best_sum = s;
      best.clear();
      for (int i = 0; i < group; ++i)
        if (m >> i & 1) best.push_back(i);
    }
  }
  return best;
}
}  // namespace

TEST_CASE("N:M projection equals brute force (2:4, 1:4, 4:8) and is idempotent") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const Setting s : {Setting{2, 4, 32}, Setting{1, 4, 32}, Setting{4, 8, 32}}) {
    const int rows = 50, cols = 8 * s.group;
    std::vector<float> w(rows * cols);
    for (auto& x : w) x = nd(rng);
    std::vector<float> p = w;
    nm_project(p.data(), rows, cols, s, "w");
    for (int r = 0; r < rows; ++r)
      for (int g = 0; g < cols; g += s.group) {
        const auto kept = brute_force_kept(&w[r * cols + g], s.keep, s.group);
        std::vector<int> got;
        for (int i = 0; i < s.group; ++i)
          if (p[r * cols + g + i] != 0.0f) got.push_back(i);
        REQUIRE(got == kept);
        for (int i : kept) CHECK(p[r * cols + g + i] == w[r * cols + g + i]);  // kept values unchanged
      }
    std::vector<float> pp = p;
    nm_project(pp.data(), rows, cols, s, "w");
    CHECK(pp == p);
  }
}

TEST_CASE("N:M ties go to the lower index; shapes not divisible by the group name the tensor") {
  std::vector<float> w = {1, -1, 1, 1, 0, 0, 0, 0};
  nm_project(w.data(), 1, 8, Setting{2, 4, 32}, "t");
  CHECK(w == std::vector<float>{1, -1, 0, 0, 0, 0, 0, 0});
  std::vector<float> bad(6, 1.0f);
  try {
    nm_project(bad.data(), 1, 6, Setting{2, 4, 32}, "h.0.attn.c_attn.weight");
    FAIL("no error");
  } catch (const core::DataError& e) {
    CHECK(std::string(e.what()).find("h.0.attn.c_attn.weight") != std::string::npos);
  }
}

TEST_CASE("quantizer: codes by hand, error <= s/2, zeros stay zero, int4 range") {
  // Row max 1.27 -> s = 0.01 for int8; 0.005 -> code round(0.5) = 1 (half away from zero).
  std::vector<float> w = {1.27f, -0.635f, 0.0f, 0.0049f, -1.27f};
  const auto q = quantize_rows(w.data(), 1, 5, 8);
  CHECK(q.scales[0] == doctest::Approx(0.01f));
  CHECK(q.codes == std::vector<std::int8_t>{127, -64, 0, 0, -127});
  CHECK(quantize_code(0.005f, 0.01f, 8) == 1);
  CHECK(quantize_code(-0.025f, 0.01f, 8) == -3);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int bits : {8, 4}) {
    const int rows = 20, cols = 64;
    std::vector<float> m(rows * cols);
    for (auto& x : m) x = nd(rng);
    for (int i = 0; i < cols; i += 5) m[i] = 0.0f;
    std::vector<float> fq = m;
    fake_quantize(fq.data(), rows, cols, bits);
    const auto qm = quantize_rows(m.data(), rows, cols, bits);
    for (int r = 0; r < rows; ++r) {
      float mx = 0;
      for (int j = 0; j < cols; ++j) mx = std::max(mx, std::fabs(m[r * cols + j]));
      CHECK(qm.scales[r] == doctest::Approx(mx / quant_max(bits)));
      for (int j = 0; j < cols; ++j) {
        const int i = r * cols + j;
        CHECK(std::abs(int(qm.codes[i])) <= quant_max(bits));
        CHECK(std::fabs(fq[i] - m[i]) <= qm.scales[r] / 2 * (1 + 1e-6f));
        CHECK(fq[i] == float(qm.codes[i]) * qm.scales[r]);
        if (m[i] == 0.0f) CHECK(fq[i] == 0.0f);
      }
    }
  }
}

TEST_CASE("compressed matrices: <= keep nonzeros per group, only integer multiples of the row scale") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 0.5f);
  for (const Setting s : {Setting{2, 4, 8}, Setting{2, 4, 4}, Setting{1, 4, 8}, Setting{4, 8, 4}}) {
    const int rows = 16, cols = 64;
    std::vector<float> w(rows * cols);
    for (auto& x : w) x = nd(rng);
    const std::vector<float> orig = w;
    compress_matrix(w.data(), rows, cols, s, "w");
    for (int r = 0; r < rows; ++r) {
      std::vector<float> pruned(orig.begin() + r * cols, orig.begin() + (r + 1) * cols);
      nm_project(pruned.data(), 1, cols, s, "w");
      const float sc = row_scale(pruned.data(), cols, s.bits);
      for (int g = 0; g < cols; g += s.group) {
        int nz = 0;
        for (int i = 0; i < s.group; ++i) nz += w[r * cols + g + i] != 0.0f;
        CHECK(nz <= s.keep);
      }
      for (int j = 0; j < cols; ++j) {
        const float k = w[r * cols + j] / sc;
        CHECK(std::fabs(k - std::round(k)) < 1e-4f);
        CHECK(std::fabs(std::round(k)) <= quant_max(s.bits));
      }
    }
  }
}

TEST_CASE("straight-through estimator: the gradient at Q(W) drives the latent weights through the quantizer") {
  // L(V) = 0.5 ||x V^T - y||^2 for a 4 x 16 layer; QAT evaluates it at V = Q(W) (int4 rows) and applies
  // dL/dV there to the latent W (what compress does with qat = joint / finetune).
  std::mt19937 rng(13);
  std::normal_distribution<double> nd(0.0, 1.0);
  const int rows = 4, cols = 16, n = 8;
  std::vector<float> w(rows * cols), x(n * cols), y(n * rows);
  for (auto& v : w) v = float(0.5 * nd(rng));
  for (auto& v : x) v = float(nd(rng));
  for (auto& v : y) v = float(nd(rng));
  const auto loss = [&](const std::vector<float>& v) {
    double l = 0;
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < rows; ++r) {
        double z = -y[i * rows + r];
        for (int j = 0; j < cols; ++j) z += double(x[i * cols + j]) * v[r * cols + j];
        l += 0.5 * z * z;
      }
    return l;
  };
  const auto quantized = [&](std::vector<float> v) {
    fake_quantize(v.data(), rows, cols, 4);
    return v;
  };
  const auto ste_gradient = [&](const std::vector<float>& latent) {
    const auto q = quantized(latent);
    std::vector<double> g(rows * cols, 0.0);
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < rows; ++r) {
        double z = -y[i * rows + r];
        for (int j = 0; j < cols; ++j) z += double(x[i * cols + j]) * q[r * cols + j];
        for (int j = 0; j < cols; ++j) g[r * cols + j] += z * x[i * cols + j];
      }
    return g;
  };
  const auto q = quantized(w);
  const auto g = ste_gradient(w);
  // It is the gradient with respect to the quantized weights (central differences there) ...
  for (int k : {0, 5, 17, 40, 63}) {
    auto vp = q, vm = q;
    vp[k] += 1e-2f;
    vm[k] -= 1e-2f;
    CHECK(g[k] == doctest::Approx((loss(vp) - loss(vm)) / 2e-2).epsilon(1e-3));
  }
  // ... while the loss of Q(W) is flat in W almost everywhere: a small move of a weight that is not its
  // row's largest leaves Q(W), and the loss, unchanged, so the true gradient is 0.
  int flat = 0;
  for (int k = 0; k < rows * cols; ++k) {
    auto wp = w;
    wp[k] += 1e-5f;
    flat += loss(quantized(wp)) == loss(q);
  }
  CHECK(flat >= rows * cols - rows - 2);
  // Descending along it through the quantizer lowers the quantized loss.
  std::vector<float> latent = w;
  const double before = loss(quantized(latent));
  for (int step = 0; step < 100; ++step) {
    const auto gs = ste_gradient(latent);
    for (int k = 0; k < rows * cols; ++k) latent[k] -= float(0.01 * gs[k]);
  }
  CHECK(loss(quantized(latent)) < 0.5 * before);
}
