// CHOLMOD supernodal and Eigen simplicial sparse Cholesky behind one interface (see sparse_cholesky.hpp).
#include "slam/sparse_cholesky.hpp"

#include <Eigen/SparseCholesky>
#ifdef TOOLKIT_HAVE_CHOLMOD
#include <Eigen/CholmodSupport>
#endif

#include "common/errors.hpp"

namespace core::slam {

struct SparseCholesky::Impl {
  virtual ~Impl() = default;
  virtual void analyze(const SparseMatrixd& A) = 0;
  virtual bool factorize(const SparseMatrixd& A) = 0;
  virtual Eigen::MatrixXd solve(const Eigen::MatrixXd& B) const = 0;
};

namespace {

template <class Solver>
struct EigenImpl : SparseCholesky::Impl {
  Solver solver;
  void analyze(const SparseMatrixd& A) override { solver.analyzePattern(A); }
  bool factorize(const SparseMatrixd& A) override {
    solver.factorize(A);
    return solver.info() == Eigen::Success;
  }
  Eigen::MatrixXd solve(const Eigen::MatrixXd& B) const override { return solver.solve(B); }
};

using Simplicial = EigenImpl<Eigen::SimplicialLLT<SparseMatrixd, Eigen::Lower, Eigen::AMDOrdering<int>>>;

#ifdef TOOLKIT_HAVE_CHOLMOD
struct Cholmod : EigenImpl<Eigen::CholmodDecomposition<SparseMatrixd, Eigen::Lower>> {
  Cholmod() {
    solver.setMode(Eigen::CholmodSupernodalLLt);
    solver.cholmod().print = 0;  // "not positive definite" is an answer here, not a warning
  }
};
#endif

}  // namespace

std::vector<std::string> cholesky_backends() {
#ifdef TOOLKIT_HAVE_CHOLMOD
  return {"cholmod", "simplicial"};
#else
  return {"simplicial"};
#endif
}

std::string resolve_cholesky_backend(const std::string& backend, int d, bool has_landmarks, int unknowns) {
  if (backend != "auto") return backend;
  const bool small = unknowns < 200, pose_graph_simplicial = !has_landmarks && (d == 2 || unknowns < 4000);
  return small || pose_graph_simplicial ? "simplicial" : cholesky_backends().front();
}

SparseCholesky::SparseCholesky(const std::string& backend)
    : backend_(backend == "auto" ? cholesky_backends().front() : backend) {
  if (backend_ == "simplicial") impl_ = std::make_unique<Simplicial>();
#ifdef TOOLKIT_HAVE_CHOLMOD
  else if (backend_ == "cholmod") impl_ = std::make_unique<Cholmod>();
#endif
  else throw UsageError("cholesky back-end '" + backend + "' is not available in this build (have: simplicial" +
                        (cholesky_backends().size() > 1 ? ", cholmod)" : ")"));
}

SparseCholesky::~SparseCholesky() = default;
SparseCholesky::SparseCholesky(SparseCholesky&&) noexcept = default;
SparseCholesky& SparseCholesky::operator=(SparseCholesky&&) noexcept = default;

void SparseCholesky::analyze(const SparseMatrixd& A) { impl_->analyze(A); }
bool SparseCholesky::factorize(const SparseMatrixd& A) { return impl_->factorize(A); }
Eigen::MatrixXd SparseCholesky::solve(const Eigen::MatrixXd& B) const { return impl_->solve(B); }

}  // namespace core::slam
