// Product-of-Stiefel operations (see stiefel.hpp). The per-pose kernels are instantiated for d = 2 and
// d = 3 so that the d x d blocks (Gram matrices, their eigen-decompositions, Lambda_i) live on the
// stack: with dynamic sizes every pose cost a few heap allocations per operation, which dominated the
// trust region's inner loop on 1,000-pose graphs.
#include "slam/stiefel.hpp"

#include <Eigen/Eigenvalues>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::slam::stiefel {

namespace {

// Calls f(std::integral_constant<int, d>) for the supported dimensions.
template <class F>
decltype(auto) with_dimension(int d, F&& f) {
  if (d == 2) return f(std::integral_constant<int, 2>{});
  if (d == 3) return f(std::integral_constant<int, 3>{});
  throw Error(ExitCode::internal, "stiefel: dimension " + std::to_string(d) + " (need 2 or 3)");
}

template <int D>
using Block = Eigen::Matrix<double, D, D>;

}  // namespace

Eigen::MatrixXd sym_block_diag(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, int d) {
  return with_dimension(d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int n = static_cast<int>(A.rows()) / D;
    Eigen::MatrixXd out(D, D * n);
    for (int i = 0; i < n; ++i) {
      const Block<D> P = A.template middleRows<D>(D * i).lazyProduct(B.template middleRows<D>(D * i).transpose());
      out.template middleCols<D>(D * i) = 0.5 * (P + P.transpose());
    }
    return out;
  });
}

Eigen::MatrixXd block_multiply(const Eigen::MatrixXd& Dm, const Eigen::MatrixXd& V) {
  return with_dimension(static_cast<int>(Dm.rows()), [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int n = static_cast<int>(Dm.cols()) / D;
    Eigen::MatrixXd out(V.rows(), V.cols());
    for (int i = 0; i < n; ++i)
      out.template middleRows<D>(D * i).noalias() =
          Block<D>(Dm.template middleCols<D>(D * i)).lazyProduct(V.template middleRows<D>(D * i));
    return out;
  });
}

Eigen::MatrixXd project(const Eigen::MatrixXd& X, const Eigen::MatrixXd& Z, int d) {
  return with_dimension(d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int n = static_cast<int>(X.rows()) / D;
    Eigen::MatrixXd out(Z.rows(), Z.cols());
    for (int i = 0; i < n; ++i) {
      const auto Xi = X.template middleRows<D>(D * i);
      const auto Zi = Z.template middleRows<D>(D * i);
      const Block<D> P = Zi.lazyProduct(Xi.transpose());
      const Block<D> S = 0.5 * (P + P.transpose());
      out.template middleRows<D>(D * i) = Zi - S.lazyProduct(Xi);
    }
    return out;
  });
}

Eigen::MatrixXd retract(const Eigen::MatrixXd& X, const Eigen::MatrixXd& V, int d) {
  return with_dimension(d, [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    const int n = static_cast<int>(X.rows()) / D;
    Eigen::MatrixXd out = X + V;
    Eigen::SelfAdjointEigenSolver<Block<D>> es;
    for (int i = 0; i < n; ++i) {
      auto Ai = out.template middleRows<D>(D * i);
      es.compute(Ai.lazyProduct(Ai.transpose()));
      const Block<D> inv_sqrt =
          es.eigenvectors() * es.eigenvalues().cwiseSqrt().cwiseInverse().asDiagonal() * es.eigenvectors().transpose();
      for (int c = 0; c < Ai.cols(); ++c) {
        const Eigen::Matrix<double, D, 1> column = Ai.col(c);
        Ai.col(c) = inv_sqrt * column;
      }
    }
    return out;
  });
}

Eigen::MatrixXd random_point(int n, int d, int r, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd Z(d * n, r);
  for (int k = 0; k < Z.size(); ++k) Z.data()[k] = rng.normal();
  return retract(Eigen::MatrixXd::Zero(d * n, r), Z, d);
}

}  // namespace core::slam::stiefel
