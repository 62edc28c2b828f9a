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

// "auto" for a problem whose data matrix K has `unknowns` rows (translations and rotation entries):
// Eigen's simplicial factorisation for 2D pose graphs, for 3D pose graphs below 4,000 unknowns
// (~1,000 poses) and for any problem below 200 unknowns; CHOLMOD's supernodal one for larger 3D pose
// graphs and larger problems with landmarks (where the co-visibility blocks make supernodes pay).
// Measured (total seconds, same runs): CHOLMOD's start-up, analysis and supernode bookkeeping cost
// more than they save on tinyGrid3D (35 unknowns, 2.1 vs 1.1 ms), smallGrid3D (499, ~3x) and a
// 15-pose landmark world (59, 2.2 vs 1.4 ms), break even near 1,700 3D poses (parking-garage) and 50
// landmark-world poses, and win on sphere_bignoise, torus3D and Starry Night windows (2x at 300
// steps); scripts/bench/slam_certify_posegraphs.sh times both on every benchmark. Other names pass
// through.
std::string resolve_cholesky_backend(const std::string& backend, int d, bool has_landmarks, int unknowns);

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
