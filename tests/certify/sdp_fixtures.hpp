// SDPs with known optima shared by the certify tests: Lovasz theta of small graphs and random
// feasible SDPs built from a complementary primal/dual pair.
#pragma once
#include <utility>
#include <vector>

#include "certify/sdp_problem.hpp"
#include "common/rng.hpp"

namespace certify_test {

using Edge = std::pair<int, int>;

// theta(G) = max <J, X> s.t. tr X = 1, X_ij = 0 for ij in E, X >= 0; our min form has C = -J, so
// the optimal value is -theta(G).
inline core::certify::SdpProblem lovasz_theta(int n, const std::vector<Edge>& edges) {
  core::certify::SdpProblem p;
  p.blocks = {{n, false}};
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j) p.C.add(0, i, j, -1.0);
  core::certify::SdpMatrix trace;
  for (int i = 0; i < n; ++i) trace.add(0, i, i, 1.0);
  p.A.push_back(trace);
  for (const auto& [i, j] : edges) {
    core::certify::SdpMatrix e;
    e.add(0, i, j, 1.0);
    p.A.push_back(e);
  }
  p.b = Eigen::VectorXd::Zero(static_cast<int>(p.A.size()));
  p.b(0) = 1.0;
  return p;
}

// The max-cut relaxation max <L / 4, X> s.t. X_ii = 1, X >= 0 (L the graph's Laplacian; SDPLIB's mcp and
// maxG form): min <-L / 4, X>, every constraint a single diagonal entry.
inline core::certify::SdpProblem max_cut(int n, const std::vector<Edge>& edges) {
  core::certify::SdpProblem p;
  p.blocks = {{n, false}};
  for (const auto& [i, j] : edges) {
    p.C.add(0, i, i, -0.25);
    p.C.add(0, j, j, -0.25);
    p.C.add(0, i, j, 0.25);
  }
  for (int i = 0; i < n; ++i) {
    core::certify::SdpMatrix e;
    e.add(0, i, i, 1.0);
    p.A.push_back(e);
  }
  p.b = Eigen::VectorXd::Ones(n);
  return p;
}

inline std::vector<Edge> cycle(int n) {
  std::vector<Edge> e;
  for (int i = 0; i < n; ++i) e.push_back({i, (i + 1) % n});
  return e;
}
inline std::vector<Edge> complete(int n) {
  std::vector<Edge> e;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) e.push_back({i, j});
  return e;
}
inline std::vector<Edge> petersen() {
  std::vector<Edge> e;
  for (int i = 0; i < 5; ++i) {
    e.push_back({i, (i + 1) % 5});          // outer cycle
    e.push_back({5 + i, 5 + (i + 2) % 5});  // inner pentagram
    e.push_back({i, 5 + i});                // spokes
  }
  return e;
}

// A random SDP with one dense block of size n and one diagonal block of size d whose optimum is
// known: X0 = U diag(s, 0) U^T (rank r) and Z0 = U diag(0, t) U^T are complementary, so with
// b = A(X0), C = A^T(y0) + Z0 the pair (X0; y0, Z0) is optimal with value <C, X0> = b^T y0.
struct KnownSdp {
  core::certify::SdpProblem problem;
  core::certify::BlockValues X0;
  double optimum = 0.0;
};

inline KnownSdp random_known_sdp(int n, int r, int d, int m, std::uint64_t seed) {
  core::Rng rng(seed);
  KnownSdp k;
  auto& p = k.problem;
  p.blocks = {{n, false}, {d, true}};
  Eigen::MatrixXd G(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) G(i, j) = rng.normal();
  const Eigen::MatrixXd U = Eigen::HouseholderQR<Eigen::MatrixXd>(G).householderQ();
  Eigen::VectorXd s = Eigen::VectorXd::Zero(n), t = Eigen::VectorXd::Zero(n);
  for (int i = 0; i < n; ++i) (i < r ? s(i) : t(i)) = rng.uniform(0.5, 2.0);
  const Eigen::MatrixXd X0 = U * s.asDiagonal() * U.transpose();
  const Eigen::MatrixXd Z0 = U * t.asDiagonal() * U.transpose();
  Eigen::VectorXd x0(d), z0(d);  // LP block: complementary by halves
  for (int i = 0; i < d; ++i) {
    x0(i) = i < d / 2 ? rng.uniform(0.5, 2.0) : 0.0;
    z0(i) = i < d / 2 ? 0.0 : rng.uniform(0.5, 2.0);
  }
  k.X0 = {X0, x0};
  Eigen::VectorXd y0(m);
  p.b.resize(m);
  core::certify::BlockValues Cv = {Z0, z0};
  for (int c = 0; c < m; ++c) {
    core::certify::SdpMatrix A;
    for (int i = 0; i < n; ++i)
      for (int j = i; j < n; ++j)
        if (rng.uniform() < 0.5) A.add(0, i, j, rng.normal());
    for (int i = 0; i < d; ++i)
      if (rng.uniform() < 0.5) A.add(1, i, i, rng.normal());
    y0(c) = rng.normal();
    p.A.push_back(A);
    p.b(c) = p.inner(A, k.X0);
    p.accumulate(A, y0(c), Cv);
  }
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j) p.C.add(0, i, j, Cv[0](i, j));
  for (int i = 0; i < d; ++i) p.C.add(1, i, i, Cv[1](i, 0));
  k.optimum = p.b.dot(y0);
  return k;
}

// Many small blocks coupled like a rows x cols grid (the Schur pattern of a 2-D mesh, which no banded
// order factors without fill): one 3 x 3 block per grid node with a complementary pair X0 = s u u^T,
// Z0 = V diag(t) V^T (V the orthogonal complement of u), two constraints inside each block and one
// per grid edge touching both ends; b = A(X0), C = A^T(y0) + Z0, so the optimum is b^T y0.
inline KnownSdp random_grid_sdp(int rows, int cols, std::uint64_t seed) {
  core::Rng rng(seed);
  KnownSdp out;
  auto& p = out.problem;
  const int nb = rows * cols;
  p.blocks.assign(static_cast<std::size_t>(nb), {3, false});
  core::certify::BlockValues Z0(static_cast<std::size_t>(nb));
  out.X0.resize(static_cast<std::size_t>(nb));
  for (int b = 0; b < nb; ++b) {
    Eigen::Matrix3d G;
    for (int i = 0; i < 9; ++i) G(i) = rng.normal();
    const Eigen::Matrix3d U = Eigen::HouseholderQR<Eigen::Matrix3d>(G).householderQ();
    out.X0[static_cast<std::size_t>(b)] = rng.uniform(0.5, 2.0) * U.col(0) * U.col(0).transpose();
    Z0[static_cast<std::size_t>(b)] = U.rightCols(2) * Eigen::Vector2d(rng.uniform(0.5, 2.0), rng.uniform(0.5, 2.0)).asDiagonal() *
                                      U.rightCols(2).transpose();
  }
  auto random_block = [&](core::certify::SdpMatrix& A, int b) {
    for (int i = 0; i < 3; ++i)
      for (int j = i; j < 3; ++j) A.add(b, i, j, rng.normal());
  };
  for (int b = 0; b < nb; ++b)
    for (int c = 0; c < 2; ++c) {
      core::certify::SdpMatrix A;
      random_block(A, b);
      p.A.push_back(A);
    }
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      for (const int nbr : {c + 1 < cols ? r * cols + c + 1 : -1, r + 1 < rows ? (r + 1) * cols + c : -1}) {
        if (nbr < 0) continue;
        core::certify::SdpMatrix A;
        random_block(A, r * cols + c);
        random_block(A, nbr);
        p.A.push_back(A);
      }
  const int m = static_cast<int>(p.A.size());
  p.b.resize(m);
  Eigen::VectorXd y0(m);
  core::certify::BlockValues Cv = Z0;
  for (int c = 0; c < m; ++c) {
    y0(c) = rng.normal();
    p.b(c) = p.inner(p.A[static_cast<std::size_t>(c)], out.X0);
    p.accumulate(p.A[static_cast<std::size_t>(c)], y0(c), Cv);
  }
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = i; j < 3; ++j) p.C.add(b, i, j, Cv[static_cast<std::size_t>(b)](i, j));
  out.optimum = p.b.dot(y0);
  return out;
}

}  // namespace certify_test
