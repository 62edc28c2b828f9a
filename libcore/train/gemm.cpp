// Eigen-backed GEMM over row-major raw buffers with arbitrary row strides (see gemm.hpp).
#include "train/gemm.hpp"

#include <Eigen/Core>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace core::train {

namespace {

template <class T>
using CMat = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0,
                        Eigen::OuterStride<>>;
template <class T>
using MMat = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;

template <class T, class OA, class OB>
void run(const OA& a, const OB& b, T alpha, T beta, MMat<T>& c) {
  if (beta == T(0)) {
    c.noalias() = alpha * (a * b);
  } else {
    if (beta != T(1)) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda, const T* B, int ldb,
          T beta, T* C, int ldc) {
  MMat<T> c(C, M, N, Eigen::OuterStride<>(ldc));
  if (K == 0) {
    if (beta == T(0)) c.setZero();
    else c *= beta;
    return;
  }
  // op(A) is M x K: stored K x M when transposed.
  const CMat<T> a(A, trans_a ? K : M, trans_a ? M : K, Eigen::OuterStride<>(lda));
  const CMat<T> b(B, trans_b ? N : K, trans_b ? K : N, Eigen::OuterStride<>(ldb));
  if (!trans_a && !trans_b) run(a, b, alpha, beta, c);
  else if (!trans_a && trans_b) run(a, b.transpose(), alpha, beta, c);
  else if (trans_a && !trans_b) run(a.transpose(), b, alpha, beta, c);
  else run(a.transpose(), b.transpose(), alpha, beta, c);
}

template void gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*,
                          int);
template void gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*, int, double,
                           double*, int);

void set_num_threads(int n) {
#ifdef _OPENMP
  if (n > 0) omp_set_num_threads(n);
#endif
  if (n > 0) Eigen::setNbThreads(n);
}

int num_threads() { return Eigen::nbThreads(); }

}  // namespace core::train
