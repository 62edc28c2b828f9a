// OpenBLAS or Eigen behind the dense Cholesky of dense_linalg.hpp (the caller's lapack_min_order chooses).
// OpenBLAS is opened with dlopen on the first factorisation that needs it (TOOLKIT_OPENBLAS_PATH, the library the build found), not linked: a
// process that loads it pays ~10 ms of CPU at start (relocations, its thread pool), more than the
// whole solve of a small SDP. Its LAPACK is called through the Fortran interface (Debian's OpenBLAS has
// no LAPACKE), with gfortran's hidden string lengths. When the library cannot be opened, Eigen is used.
#include "certify/dense_linalg.hpp"

#include <cstddef>

#include "common/log.hpp"

#ifdef TOOLKIT_OPENBLAS_PATH
#include <dlfcn.h>
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

#ifdef TOOLKIT_OPENBLAS_PATH
struct Lapack {
  void (*potrf)(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t uplo_len);
  void (*potrs)(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b,
                const int* ldb, int* info, std::size_t uplo_len);
  void (*potri)(const char* uplo, const int* n, double* a, const int* lda, int* info, std::size_t uplo_len);
  void (*set_num_threads)(int threads);
};

// OpenBLAS's entry points, opened once; nullptr when the library or a symbol is missing.
const Lapack* lapack() {
  static const Lapack* const loaded = []() -> const Lapack* {
    void* handle = dlopen(TOOLKIT_OPENBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      core::log::debug("sdp: cannot open {} ({}): Eigen's Cholesky", TOOLKIT_OPENBLAS_PATH, dlerror());
      return nullptr;
    }
    static Lapack lib{};
    lib.potrf = reinterpret_cast<decltype(lib.potrf)>(dlsym(handle, "dpotrf_"));
    lib.potrs = reinterpret_cast<decltype(lib.potrs)>(dlsym(handle, "dpotrs_"));
    lib.potri = reinterpret_cast<decltype(lib.potri)>(dlsym(handle, "dpotri_"));
    lib.set_num_threads = reinterpret_cast<decltype(lib.set_num_threads)>(dlsym(handle, "openblas_set_num_threads"));
    if (!lib.potrf || !lib.potrs || !lib.potri || !lib.set_num_threads) return nullptr;
    lib.set_num_threads(1);  // see dense_linalg.hpp: its workers busy-wait, ruinous on a shared machine
    return &lib;
  }();
  return loaded;
}
#else
struct Lapack;
const Lapack* lapack() { return nullptr; }
#endif

}  // namespace

bool lapack_available() { return lapack() != nullptr; }

bool cholesky_lower(Eigen::MatrixXd& m, Eigen::Index lapack_min_order) {
#ifdef TOOLKIT_OPENBLAS_PATH
  if (const Lapack* lib = m.rows() >= lapack_min_order ? lapack() : nullptr) {
    const int n = static_cast<int>(m.rows());
    int info = 0;
    lib->potrf("L", &n, m.data(), &n, &info, 1);
    return info == 0;
  }
#else
  (void)lapack_min_order;
#endif
  return eigen_cholesky_lower(m);
}

void cholesky_solve(const Eigen::MatrixXd& factor, Eigen::VectorXd& r, Eigen::Index lapack_min_order) {
#ifdef TOOLKIT_OPENBLAS_PATH
  if (const Lapack* lib = factor.rows() >= lapack_min_order ? lapack() : nullptr) {
    const int n = static_cast<int>(factor.rows()), columns = 1;
    int info = 0;
    lib->potrs("L", &n, &columns, factor.data(), &n, r.data(), &n, &info, 1);
    return;
  }
#else
  (void)lapack_min_order;
#endif
  eigen_cholesky_solve(factor, r);
}

void cholesky_inverse(const Eigen::LLT<Eigen::MatrixXd>& factor, Eigen::MatrixXd& inverse, Eigen::Index lapack_min_order) {
  const Eigen::Index order = factor.matrixLLT().rows();
#ifdef TOOLKIT_OPENBLAS_PATH
  if (const Lapack* lib = order >= lapack_min_order ? lapack() : nullptr) {
    inverse = factor.matrixLLT();  // L in the lower triangle
    const int n = static_cast<int>(order);
    int info = 0;
    lib->potri("L", &n, inverse.data(), &n, &info, 1);
    if (info == 0) {
      inverse.triangularView<Eigen::StrictlyUpper>() = inverse.transpose();
      return;
    }
  }
#else
  (void)lapack_min_order;
#endif
  inverse = factor.solve(Eigen::MatrixXd::Identity(order, order));
}

}  // namespace core::certify::dense
