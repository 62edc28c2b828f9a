// The Cholesky factorisation and solves of the SDP solver's dense Schur complement
// (schur_complement.cpp): through an optimised LAPACK (OpenBLAS's blocked dpotrf / dpotrs, opened at run
// time when the build found it, TOOLKIT_OPENBLAS_PATH in libcore/certify/CMakeLists.txt) for orders >=
// the caller's lapack_min_order, else through Eigen's LLT. Both compute the same factor to rounding (the
// tests compare them), but not bit for bit, so the threshold is high (SdpOptions::lapack_min_order): on
// this project's shared 2-core machine OpenBLAS's dpotrf took 245-285 ms at order 2401 (SDPLIB's
// thetaG11) against Eigen's 540-660 ms, while on the 41 smaller SDPLIB problems it gained nothing
// measurable and its different rounding turned control6 (order 1326) from near_optimal into stalled
// (sdp7's notes). OpenBLAS runs on one thread: two busy-waiting workers on the shared machine made
// whole solves 3-5x slower in wall time; the solver's own threads share the Schur assembly.
#pragma once
#include <Eigen/Dense>

namespace core::certify::dense {

// Overwrites the lower triangle of the symmetric m (read from its lower triangle) with its Cholesky
// factor L (m = L L^T) through LAPACK when m has at least lapack_min_order rows (and the library could
// be opened), else through Eigen; the strict upper triangle is left as it was. False when m is not
// numerically positive definite (the lower triangle is then partly overwritten).
bool cholesky_lower(Eigen::MatrixXd& m, Eigen::Index lapack_min_order);

// Solves L L^T x = r in place of r, L the lower triangle of `factor` (from cholesky_lower with the same
// lapack_min_order).
void cholesky_solve(const Eigen::MatrixXd& factor, Eigen::VectorXd& r, Eigen::Index lapack_min_order);

// inverse = (L L^T)^-1 from the Cholesky factor of a positive definite block (the solver's Z^-1): through LAPACK's
// dpotri (inverse of L, then L^-T L^-1: 2/3 n^3 flops) when the block has at least lapack_min_order rows, else as
// Eigen's solve against the identity (two triangular solves with a full right-hand side, 2 n^3 flops; its result,
// as the solver always formed it, is symmetric only to rounding, dpotri's lower triangle is mirrored).
void cholesky_inverse(const Eigen::LLT<Eigen::MatrixXd>& factor, Eigen::MatrixXd& inverse, Eigen::Index lapack_min_order);

// Whether orders >= lapack_min_order would go through LAPACK in this process (the build found
// OpenBLAS and it could be opened).
bool lapack_available();

}  // namespace core::certify::dense
