// OpenBLAS or Eigen behind the dense Cholesky of dense_linalg.hpp. OpenBLAS's LAPACK is called through its
// Fortran interface (Debian's OpenBLAS has no LAPACKE), with gfortran's hidden string lengths.
#include "certify/dense_linalg.hpp"

#include <cstddef>

#ifdef TOOLKIT_HAVE_OPENBLAS
extern "C" {
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t uplo_len);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b,
             const int* ldb, int* info, std::size_t uplo_len);
void openblas_set_num_threads(int threads);
}
#endif

namespace core::certify::dense {
namespace {

bool eigen_cholesky_lower(Eigen::MatrixXd& m) {
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>, Eigen::Lower> llt(m);  // in place: writes the lower triangle only
  return llt.info() == Eigen::Success;
}

void eigen_cholesky_solve(const Eigen::MatrixXd& factor, Eigen::VectorXd& r) {
  const auto L = factor.triangularView<Eigen::Lower>();
  L.solveInPlace(r);
  L.transpose().solveInPlace(r);
}

}  // namespace

#ifdef TOOLKIT_HAVE_OPENBLAS
bool optimised() { return true; }

void set_threads(int threads) { openblas_set_num_threads(threads); }

bool cholesky_lower(Eigen::MatrixXd& m) {
  if (m.rows() < kLapackMinOrder) return eigen_cholesky_lower(m);
  const int n = static_cast<int>(m.rows());
  int info = 0;
  dpotrf_("L", &n, m.data(), &n, &info, 1);
  return info == 0;
}

void cholesky_solve(const Eigen::MatrixXd& factor, Eigen::VectorXd& r) {
  if (factor.rows() < kLapackMinOrder) return eigen_cholesky_solve(factor, r);
  const int n = static_cast<int>(factor.rows()), columns = 1;
  int info = 0;
  dpotrs_("L", &n, &columns, factor.data(), &n, r.data(), &n, &info, 1);
}
#else
bool optimised() { return false; }

void set_threads(int) {}

bool cholesky_lower(Eigen::MatrixXd& m) { return eigen_cholesky_lower(m); }

void cholesky_solve(const Eigen::MatrixXd& factor, Eigen::VectorXd& r) { eigen_cholesky_solve(factor, r); }
#endif

}  // namespace core::certify::dense
