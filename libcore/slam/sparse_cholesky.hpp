// One sparse Cholesky interface over two back-ends, chosen by the `cholesky` option: CHOLMOD's
// supernodal LL^T (SuiteSparse, through Eigen's CholmodSupport) and Eigen's SimplicialLLT (AMD
// ordering). The symbolic analysis is done once per sparsity pattern and reused by every numeric
// factorisation (the certificate factorises matrices of one pattern several times). factorize()
// returns false when the matrix is not positive definite, which is the certificate's PSD test.
// scripts/bench/slam_certify_posegraphs.sh times both back-ends on the pose-graph benchmarks.
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include <memory>
#include <string>
#include <vector>

namespace core::slam {

using SparseMatrixd = Eigen::SparseMatrix<double>;

// "cholmod" (when the build found CHOLMOD) and "simplicial", the first being what "auto" picks.
std::vector<std::string> cholesky_backends();

// "auto" for a problem: Eigen's simplicial factorisation for 2D pose graphs, CHOLMOD's supernodal one
// for 3D problems and problems with landmarks (where the co-visibility blocks make supernodes pay);
// scripts/bench/slam_certify_posegraphs.sh times both on every benchmark. Other names pass through.
std::string resolve_cholesky_backend(const std::string& backend, int d, bool has_landmarks);

class SparseCholesky {
 public:
  explicit SparseCholesky(const std::string& backend);  // "auto" or a name; UsageError for an absent one
  ~SparseCholesky();
  SparseCholesky(SparseCholesky&&) noexcept;
  SparseCholesky& operator=(SparseCholesky&&) noexcept;

  // Reads the lower triangle of A (a symmetric matrix stored whole or lower).
  void analyze(const SparseMatrixd& A);
  bool factorize(const SparseMatrixd& A);  // analyze() first with A's pattern; false: not positive definite
  Eigen::MatrixXd solve(const Eigen::MatrixXd& B) const;
  const std::string& backend() const { return backend_; }

  struct Impl;

 private:
  std::string backend_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace core::slam
