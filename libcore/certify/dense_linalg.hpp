// The Cholesky factorisation and solves of the SDP solver's dense Schur complement
// (schur_complement.cpp) through an optimised LAPACK (OpenBLAS's dpotrf / dpotrs, blocked and
// opened at run time when the build found it, TOOLKIT_OPENBLAS_PATH in
// libcore/certify/CMakeLists.txt) for orders >= kLapackMinOrder, else through Eigen's LLT. Both compute
// the same factor (the tests compare them to rounding). Measured on this project's 2-core machine:
// OpenBLAS's dpotrf is 2-4x Eigen's LLT from order 128 up (Eigen is faster below ~100); its dgemm is no
// faster than Eigen's -march=native products (DYNAMIC_ARCH picks its Haswell kernels), so the products
// stay Eigen's. OpenBLAS runs on one thread: with two on the shared 2-core machine (load 15-19) its
// busy-waiting workers made whole solves 3-5x slower in wall time (control6 8.7 -> 24-30 s, qap8 1.2
// -> 6 s); the solver's own threads share the Schur assembly.
#pragma once
#include <Eigen/Dense>

namespace core::certify::dense {

inline constexpr Eigen::Index kLapackMinOrder = 128;

// Overwrites the lower triangle of the symmetric m (read from its lower triangle) with its Cholesky
// factor L (m = L L^T); the strict upper triangle is left as it was. False when m is not numerically
// positive definite (the lower triangle is then partly overwritten).
bool cholesky_lower(Eigen::MatrixXd& m);

// Solves L L^T x = r in place of r, L the lower triangle of `factor` (from cholesky_lower).
void cholesky_solve(const Eigen::MatrixXd& factor, Eigen::VectorXd& r);

}  // namespace core::certify::dense
