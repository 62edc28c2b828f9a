// Data matrix by landmark-by-landmark elimination, translations through a sparse Cholesky factor
// (see data_matrix.hpp).
#include "slam/data_matrix.hpp"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "common/errors.hpp"

namespace core::slam {

namespace {

using Triplets = std::vector<Eigen::Triplet<double>>;
// A residual direction a in K's coordinates [t_1..t_{n-1} | R] as (index, coefficient) pairs (t_0: -1).
using SparseVector = std::vector<std::pair<int, double>>;

}  // namespace

DataMatrix::DataMatrix(const Problem& p, const std::string& cholesky)
    : d_(p.d), n_(p.num_poses()), L_factor_(resolve_cholesky_backend(cholesky, p.d, p.num_landmarks() > 0, p.num_poses() - 1 + p.d * p.num_poses())) {
  const int d = d_, n = n_;
  // Triplets straight into K's coordinates [t_1..t_{n-1} | R]: the anchored t_0 (index -1) is dropped
  // as the entries are made, so that one list (and no copies of it) is all the assembly allocates.
  auto t_index = [](int i) { return i - 1; };
  auto r_index = [n, d](int i, int c) { return n - 1 + d * i + c; };
  Triplets M;
  M.reserve(p.pose_edges.size() * ((d + 2) * (d + 2) + d * (d + 1) * (d + 1)));
  auto add_outer = [&M](const SparseVector& a, const SparseVector& b, double weight) {
    for (const auto& [i, ai] : a)
      for (const auto& [j, bj] : b)
        if (i >= 0 && j >= 0) M.emplace_back(i, j, weight * ai * bj);
  };
  for (const PoseEdge& e : p.pose_edges) {
    // tau || t_j - t_i - R_i t~ ||^2
    SparseVector a{{t_index(e.j), 1.0}, {t_index(e.i), -1.0}};
    for (int c = 0; c < d; ++c) a.emplace_back(r_index(e.i, c), -e.t(c));
    add_outer(a, a, e.tau);
    // kappa || R_j - R_i R~ ||_F^2, column by column
    for (int c = 0; c < d; ++c) {
      SparseVector b{{r_index(e.j, c), 1.0}};
      for (int k = 0; k < d; ++k) b.emplace_back(r_index(e.i, k), -e.R(k, c));
      add_outer(b, b, e.kappa);
    }
  }
  // Landmarks one at a time: sum_k w_k ||m - z_k||^2 minimised over m is z G z^T with
  // G = diag(w) - w w^T / sum(w), z_k = t_ik + R_ik y_k = X b_k.
  observations_ = p.landmark_edges;
  std::stable_sort(observations_.begin(), observations_.end(),
                   [](const LandmarkEdge& a, const LandmarkEdge& b) { return a.landmark < b.landmark; });
  landmark_start_.assign(p.num_landmarks() + 1, 0);
  for (const LandmarkEdge& e : observations_) ++landmark_start_[e.landmark + 1];
  for (int j = 0; j < p.num_landmarks(); ++j) landmark_start_[j + 1] += landmark_start_[j];
  // Pairs of poses seeing one landmark couple their (1 + d) x (1 + d) blocks [t_i, R_i columns]; the
  // blocks are accumulated per pose pair first, so that the triplet list grows with the number of
  // co-visible pose pairs, not with sum_j k_j^2 (1 + d)^2.
  const int w = d + 1;
  std::unordered_map<std::uint64_t, std::size_t> block_of;  // (pose a, pose b) -> offset in blocks
  std::vector<double> blocks;
  std::vector<double> b;  // b_q = [1, y_q] (w entries each): z_q = t_i + R_i y_q = X b_q
  for (int j = 0; j < p.num_landmarks(); ++j) {
    const int begin = landmark_start_[j], k = landmark_start_[j + 1] - begin;
    double total = 0.0;
    b.resize(static_cast<std::size_t>(k) * w);
    for (int q = 0; q < k; ++q) {
      const LandmarkEdge& e = observations_[begin + q];
      total += e.tau;
      b[q * w] = 1.0;
      for (int c = 0; c < d; ++c) b[q * w + 1 + c] = e.y(c);
    }
    for (int q = 0; q < k; ++q)
      for (int s = 0; s < k; ++s) {
        const LandmarkEdge &eq = observations_[begin + q], &es = observations_[begin + s];
        const double G = (q == s ? eq.tau : 0.0) - eq.tau * es.tau / total;
        const std::uint64_t key = static_cast<std::uint64_t>(eq.pose) * static_cast<std::uint64_t>(n) + es.pose;
        const auto [it, fresh] = block_of.emplace(key, blocks.size());
        if (fresh) blocks.resize(blocks.size() + w * w, 0.0);
        // blocks += G b_q b_s^T (column-major w x w; plain loops: w <= 4, no temporaries)
        double* block = blocks.data() + it->second;
        const double *bq = b.data() + q * w, *bs = b.data() + s * w;
        for (int col = 0; col < w; ++col)
          for (int row = 0; row < w; ++row) block[col * w + row] += G * bq[row] * bs[col];
      }
  }
  M.reserve(M.size() + block_of.size() * w * w + static_cast<std::size_t>(n) * d * d);
  for (const auto& [key, offset] : block_of) {
    const int a = static_cast<int>(key / n), c = static_cast<int>(key % n);
    auto global = [&](int pose, int local) { return local == 0 ? t_index(pose) : r_index(pose, local - 1); };
    for (int col = 0; col < w; ++col)
      for (int row = 0; row < w; ++row) {
        const int kr = global(a, row), kc = global(c, col);
        if (kr >= 0 && kc >= 0) M.emplace_back(kr, kc, blocks[offset + col * w + row]);
      }
  }
  // Full d x d diagonal rotation blocks (explicit zeros) so that K - diag(0, Lambda) keeps K's pattern.
  for (int i = 0; i < n; ++i)
    for (int r = 0; r < d; ++r)
      for (int c = 0; c < d; ++c) M.emplace_back(r_index(i, r), r_index(i, c), 0.0);

  // Split K = [L B; B^T C] (column blocks of a column-major matrix: cheap copies).
  const int nt = n - 1, nr = d * n;
  K_.resize(nt + nr, nt + nr);
  K_.setFromTriplets(M.begin(), M.end());
  Triplets().swap(M);
  L_ = K_.topLeftCorner(nt, nt);
  B_ = K_.topRightCorner(nt, nr);
  C_ = K_.bottomRightCorner(nr, nr);

  block_entries_.assign(static_cast<std::size_t>(n) * d * d, -1);
  for (int col = nt; col < nt + nr; ++col) {
    const int i = (col - nt) / d, c = (col - nt) % d;
    for (int k = K_.outerIndexPtr()[col]; k < K_.outerIndexPtr()[col + 1]; ++k) {
      const int row = K_.innerIndexPtr()[k] - nt;
      if (row >= d * i && row < d * i + d) block_entries_[(static_cast<std::size_t>(i) * d + c) * d + (row - d * i)] = k;
    }
  }
  if (nt > 0) {
    L_factor_.analyze(L_);
    if (!L_factor_.factorize(L_))
      throw DataError("the translation block of the data matrix is singular: the measurements do not fix every "
                      "translation relative to the first pose");
  }
}

Eigen::MatrixXd DataMatrix::multiply(const Eigen::MatrixXd& X) const {
  Eigen::MatrixXd out = C_ * X;
  if (n_ > 1) out.noalias() -= B_.transpose() * L_factor_.solve(B_ * X);
  return out;
}

SparseMatrixd DataMatrix::K_plus_rotation_blocks(const Eigen::MatrixXd& D) const {
  SparseMatrixd S = K_;
  double* values = S.valuePtr();
  for (int i = 0; i < n_; ++i)
    for (int c = 0; c < d_; ++c)
      for (int r = 0; r < d_; ++r) values[block_entries_[(static_cast<std::size_t>(i) * d_ + c) * d_ + r]] += D(r, d_ * i + c);
  return S;
}

Eigen::MatrixXd DataMatrix::dense_Q() const {
  Eigen::MatrixXd Q = Eigen::MatrixXd(C_);
  if (n_ > 1) Q -= Eigen::MatrixXd(B_.transpose()) * L_factor_.solve(Eigen::MatrixXd(B_));
  return Q;
}

Estimate DataMatrix::recover(const Eigen::MatrixXd& R) const {
  Estimate x;
  x.R = R;
  x.t = Eigen::MatrixXd::Zero(d_, n_);
  if (n_ > 1) x.t.rightCols(n_ - 1) = -L_factor_.solve(B_ * R.transpose()).transpose();
  const int L = static_cast<int>(landmark_start_.size()) - 1;
  x.m = Eigen::MatrixXd::Zero(d_, L);
  for (int j = 0; j < L; ++j) {
    double total = 0.0;
    for (int k = landmark_start_[j]; k < landmark_start_[j + 1]; ++k) {
      const LandmarkEdge& e = observations_[k];
      x.m.col(j) += e.tau * (x.t.col(e.pose) + R.middleCols(d_ * e.pose, d_) * e.y);
      total += e.tau;
    }
    if (total > 0) x.m.col(j) /= total;
  }
  return x;
}

}  // namespace core::slam
