// ADMM on a planted N:M least-squares problem recovers the support; the dual update identity and its
// rescaling when rho grows; masked fine-tuning keeps pruned weights exactly zero under AdamW with weight
// decay (and does not without masked moments); the distillation gradient against finite differences.
#include <doctest/doctest.h>

#include <Eigen/Dense>
#include <cstring>
#include <random>
#include <vector>

#include "nxm/admm.hpp"
#include "nxm/classifier.hpp"
#include "nxm/packed.hpp"
#include "nxm/sparsity.hpp"

using namespace core::nxm;

TEST_CASE("ADMM recovers the support of a planted 2:4 least-squares solution") {
  std::mt19937 rng(4);
  std::normal_distribution<double> nd(0.0, 1.0);
  const int n = 32, m = 40;  // noisy equations: the unconstrained solution is dense
  const Setting s{2, 4, 32};
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd w_star = Eigen::VectorXd::Zero(n);
    for (int g = 0; g < n; g += 4) {
      std::vector<int> pos = {0, 1, 2, 3};
      std::shuffle(pos.begin(), pos.end(), rng);
      for (int k = 0; k < 2; ++k) w_star[g + pos[k]] = (nd(rng) > 0 ? 1.0 : -1.0) * (1.0 + std::abs(nd(rng)));
    }
    Eigen::MatrixXd A(m, n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) A(i, j) = nd(rng) / std::sqrt(double(m));
    Eigen::VectorXd b = A * w_star;
    for (int i = 0; i < m; ++i) b[i] += 0.05 * nd(rng);
    // The oracle: least squares restricted to the true support.
    std::vector<int> support;
    for (int j = 0; j < n; ++j)
      if (w_star[j] != 0.0) support.push_back(j);
    Eigen::MatrixXd As(m, support.size());
    for (std::size_t k = 0; k < support.size(); ++k) As.col(k) = A.col(support[k]);
    const Eigen::VectorXd oracle = As.colPivHouseholderQr().solve(b);
    // W-step in closed form: argmin 0.5 ||A w - b||^2 + rho/2 ||w - Z + U||^2.
    std::vector<float> w(n);
    const Eigen::VectorXd w0 = A.transpose() * b;  // a dense start
    for (int j = 0; j < n; ++j) w[j] = float(w0[j]);
    AdmmMatrix admm("w", 1, n, s, false);
    admm.init(w.data());
    double rho = 0.05;
    for (int it = 0; it < 300; ++it) {
      Eigen::VectorXd rhs = A.transpose() * b;
      for (int j = 0; j < n; ++j) rhs[j] += rho * (double(admm.z()[j]) - admm.u()[j]);
      const Eigen::MatrixXd H = A.transpose() * A + rho * Eigen::MatrixXd::Identity(n, n);
      const Eigen::VectorXd wn = H.ldlt().solve(rhs);
      for (int j = 0; j < n; ++j) w[j] = float(wn[j]);
      admm.update(w.data());
      const double next = std::min(rho * 1.03, 10.0);
      admm.rescale_dual(rho / next);
      rho = next;
    }
    for (int j = 0; j < n; ++j) CHECK((admm.z()[j] != 0.0f) == (w_star[j] != 0.0));
    for (std::size_t k = 0; k < support.size(); ++k)
      CHECK(admm.z()[support[k]] == doctest::Approx(oracle[k]).epsilon(1e-3));
  }
}

TEST_CASE("ADMM dual update: U_new = U + W - Pi(W + U); the proximal gradient rho (W - Z + U); rho U kept when rho grows") {
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int rows = 6, cols = 16;
  std::vector<float> w(rows * cols), grad(rows * cols, 0.0f);
  for (auto& x : w) x = nd(rng);
  for (const bool quantize : {false, true}) {
    AdmmMatrix a("w", rows, cols, Setting{2, 4, 4}, quantize);
    a.init(w.data());
    for (auto& x : w) x += 0.3f * nd(rng);
    a.update(w.data());  // makes U nonzero
    for (auto& x : w) x += 0.3f * nd(rng);
    const std::vector<float> u_old = a.u();
    std::vector<float> z_expected(rows * cols);
    for (int i = 0; i < rows * cols; ++i) z_expected[i] = w[i] + u_old[i];
    a.project(z_expected.data());
    a.update(w.data());
    for (int i = 0; i < rows * cols; ++i) {
      CHECK(a.z()[i] == z_expected[i]);
      CHECK(a.u()[i] == u_old[i] + (w[i] - z_expected[i]));
    }
    std::fill(grad.begin(), grad.end(), 1.0f);
    a.add_proximal_gradient(w.data(), 0.5, grad.data());
    for (int i = 0; i < rows * cols; ++i)
      CHECK(grad[i] == doctest::Approx(1.0f + 0.5f * (w[i] - a.z()[i] + a.u()[i])));
    // rho 0.5 -> 2: the unscaled dual rho U stays; the proximal gradient's dual part with it.
    const std::vector<float> u_before = a.u();
    a.rescale_dual(0.5 / 2.0);
    int changed = 0;
    for (int i = 0; i < rows * cols; ++i) {
      CHECK(2.0f * a.u()[i] == doctest::Approx(0.5f * u_before[i]));
      changed += a.u()[i] != u_before[i];
    }
    CHECK(changed > 0);
  }
}

namespace {
core::train::ModelConfig one_layer_bert() {
  core::train::ModelConfig c;
  c.arch = "bert";
  c.n_layer = 1;
  c.n_head = 2;
  c.n_embd = 32;
  c.n_positions = 16;
  c.vocab_size = 40;
  c.vocab_pad_to = 8;
  return c;
}

// Pruned-entry count that became nonzero after 100 AdamW steps (weight decay 0.1) on random gradients,
// the masks applied to the gradients; with `mask_moments` also to the moments at pruning.
int zeros_lost(bool mask_moments) {
  const core::train::ParamLayout layout(one_layer_bert());
  core::train::FlatBuffers<float> p(layout), g(layout);
  core::train::init_parameters(p, 1);
  core::train::AdamWHyper h;
  h.weight_decay = 0.1;
  core::train::AdamW<float> opt(layout, h);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto random_grads = [&] {
    for (int gi = 0; gi < g.num_groups(); ++gi)
      for (std::size_t i = 0; i < g.group_size(gi); ++i) g.group(gi)[i] = nd(rng);
  };
  for (int s = 0; s < 5; ++s) {  // moments that are nonzero everywhere
    random_grads();
    opt.step(p, g, 1e-3, 1.0);
  }
  MaskSet masks;
  const auto comps = component_matrices(layout);
  for (const auto& c : comps) {
    std::vector<std::uint8_t> m(c.rows * c.cols);
    nm_mask(p.tensor(c.group, c.tensor), c.rows, c.cols, Setting{2, 4, 8}, m.data(), c.name);
    masks.add(c.group, c.tensor, std::move(m));
  }
  masks.apply(p);
  if (mask_moments) masks.apply_to_optimizer(opt);
  const std::vector<float> before(p.group(1), p.group(1) + p.group_size(1));
  for (int s = 0; s < 100; ++s) {
    random_grads();
    masks.apply(g);
    opt.step(p, g, 1e-3, 1.0);
  }
  int lost = 0, kept_moved = 0;
  for (const auto& e : masks.entries())
    for (std::size_t i = 0; i < e.mask.size(); ++i) {
      const float x = p.tensor(e.group, e.tensor)[i];
      std::uint32_t bits;
      std::memcpy(&bits, &x, 4);
      if (!e.mask[i]) lost += bits != 0u;  // exactly +0.0
    }
  for (std::size_t i = 0; i < before.size(); ++i) kept_moved += before[i] != p.group(1)[i];
  CHECK(kept_moved > 0);
  return lost;
}
}  // namespace

TEST_CASE("masked fine-tuning: pruned weights stay exactly zero over 100 AdamW steps with weight decay") {
  CHECK(zeros_lost(true) == 0);
  CHECK(zeros_lost(false) > 0);  // the moments from before pruning would move them
}

TEST_CASE("distillation: the gradient of (1 - a) CE + a T^2 KL against finite differences") {
  const auto cfg = one_layer_bert();
  Classifier clf(cfg, 3);
  core::train::init_parameters(clf.model().params(), 7);
  float* cls_b = clf.model().params().embed(core::train::kClsB);
  float* cls_w = clf.model().params().embed(core::train::kClsW);
  for (int i = 0; i < 2 * 32; ++i) cls_w[i] *= 20.0f;  // logits far from uniform
  EncodedSet set;
  set.T = 5;
  for (int i = 0; i < 3 * 5; ++i) set.tokens.push_back((i * 7) % 40);
  set.mask.assign(15, 1);
  set.labels = {0, 1, 1};
  set.lengths = {5, 5, 5};
  const std::vector<float> teacher = {2.0f, -1.0f, 0.5f, 0.3f, -2.0f, 1.0f};
  const DistillOptions kd{0.7, 3.0};
  const std::vector<int> idx = {0, 1, 2};
  clf.model().grads().zero();
  clf.step(set, idx, teacher.data(), kd);
  const float* g = clf.model().grads().embed(core::train::kClsB);
  const float analytic[2] = {g[0], g[1]};
  for (int c = 0; c < 2; ++c) {
    const float eps = 1e-2f, saved = cls_b[c];
    cls_b[c] = saved + eps;
    const double lp = clf.step(set, idx, teacher.data(), kd);
    cls_b[c] = saved - eps;
    const double lm = clf.step(set, idx, teacher.data(), kd);
    cls_b[c] = saved;
    CHECK(analytic[c] == doctest::Approx((lp - lm) / (2 * eps)).epsilon(2e-3));
  }
}
