// The data matrix of the rotation-only problem (Holmes & Barfoot, RA-L 2023, Sec. III-IV; SE-Sync,
// Rosen et al., IJRR 2019, Problem 4 and eq. 20). With X = [t_0..t_{n-1} | R_0..R_{n-1}] (d x (n + dn))
// every measurement is a residual X a, so the cost is tr(X M X^T) for a sparse PSD M.
//  - Landmarks are eliminated one at a time: landmark j seen from poses i_k with weights w_k and
//    points y_k contributes sum_kl G_kl b_k b_l^T, b_k = e(t_ik) + sum_c y_kc e(R_ik column c), with
//    G = W^1/2 (I - s s^T / s^T s) W^1/2, s = sqrt(w) (the weighted projector; the MATLAB code of
//    the paper assumes equal weights), accumulated in (1 + d)^2 blocks per co-visible pose pair. Cost
//    O(sum_j k_j^2): linear in the number of landmarks.
//  - Translations are eliminated implicitly: with t_0 fixed at 0 (the gauge), K = [L B; B^T C] over
//    [t_1..t_{n-1} | R] and Q = C - B^T L^-1 B, applied through a sparse Cholesky factor of L, never
//    formed. Q X costs one sparse product and one solve with d..r right-hand sides.
// K itself is kept (with full d x d rotation blocks on its diagonal) for the preconditioner and the
// certificate: K - diag(0, Lambda) is PSD exactly when Q - Lambda is (Schur complement, L > 0).
#pragma once
#include <Eigen/Dense>

#include <string>
#include <vector>

#include "slam/problem.hpp"
#include "slam/sparse_cholesky.hpp"

namespace core::slam {

class DataMatrix {
 public:
  DataMatrix(const Problem& problem, const std::string& cholesky);

  int d() const { return d_; }
  int num_poses() const { return n_; }
  int rotation_dim() const { return d_ * n_; }  // size of Q
  int translation_dim() const { return n_ - 1; }
  const std::string& cholesky() const { return L_factor_.backend(); }

  // Q X for X with dn rows.
  Eigen::MatrixXd multiply(const Eigen::MatrixXd& X) const;
  // tr(X^T Q X): the cost of rotations R = X^T (X = R^T, dn x d) with the best translations and landmarks.
  double cost(const Eigen::MatrixXd& X) const { return (X.transpose() * multiply(X)).trace(); }

  // K over [t_1..t_{n-1} | R], both triangles stored.
  const SparseMatrixd& K() const { return K_; }
  // K + diag(0, blockdiag(D_0..D_{n-1})) for D = [D_0 .. D_{n-1}] (d x dn); K's pattern.
  SparseMatrixd K_plus_rotation_blocks(const Eigen::MatrixXd& D) const;
  // The rotation block C and the coupling B of K (sparse), and Q itself (dense; tests and small problems).
  const SparseMatrixd& C() const { return C_; }
  const SparseMatrixd& B() const { return B_; }
  Eigen::MatrixXd dense_Q() const;

  // Translations (t_0 = 0) and landmarks that minimise the cost for rotations R (d x dn).
  Estimate recover(const Eigen::MatrixXd& R) const;

 private:
  int d_ = 0, n_ = 0;
  SparseMatrixd K_, L_, B_, C_;
  SparseCholesky L_factor_;
  std::vector<int> block_entries_;  // K_.valuePtr() index of each rotation diagonal-block entry (n d^2)
  std::vector<LandmarkEdge> observations_;  // landmark edges sorted by landmark
  std::vector<int> landmark_start_;         // observations_ of landmark j: [start_j, start_{j+1})
};

}  // namespace core::slam
