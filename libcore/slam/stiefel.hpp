// The product of Stiefel manifolds St(d, r)^n of the rank-r relaxation (SE-Sync, Rosen et al., IJRR
// 2019, Sec. 4.1; Absil, Mahony & Sepulchre, Optimization Algorithms on Matrix Manifolds, ch. 3-4),
// stored as X (dn x r) whose i-th d x r block X_i has orthonormal rows (X_i X_i^T = I_d), i.e. the
// transpose of SE-Sync's Y. Block-diagonal d x d matrices are stored side by side, D = [D_0 .. D_{n-1}]
// (d x dn).
#pragma once
#include <Eigen/Dense>

#include <cstdint>

namespace core::slam::stiefel {

// [sym(A_0 B_0^T) .. sym(A_{n-1} B_{n-1}^T)]
Eigen::MatrixXd sym_block_diag(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, int d);
// (D V)_i = D_i V_i
Eigen::MatrixXd block_multiply(const Eigen::MatrixXd& D, const Eigen::MatrixXd& V);
// Orthogonal projection onto the tangent space at X: Z_i - sym(Z_i X_i^T) X_i.
Eigen::MatrixXd project(const Eigen::MatrixXd& X, const Eigen::MatrixXd& Z, int d);
// Polar retraction: each block of X + V replaced by its nearest matrix with orthonormal rows,
// (A A^T)^-1/2 A (a second-order retraction).
Eigen::MatrixXd retract(const Eigen::MatrixXd& X, const Eigen::MatrixXd& V, int d);
// A seeded random point.
Eigen::MatrixXd random_point(int n, int d, int r, std::uint64_t seed);

}  // namespace core::slam::stiefel
