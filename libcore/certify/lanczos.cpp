// Lanczos iteration for the smallest eigenvalue of a symmetric operator (see lanczos.hpp).
#include "certify/lanczos.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SparseCholesky>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "common/errors.hpp"
#include "common/rng.hpp"

namespace core::certify {

void LanczosOptions::validate() const {
  if (max_steps < 1) throw UsageError("lanczos.max_steps must be >= 1, got " + std::to_string(max_steps));
  if (!(tol > 0.0 && tol < 1.0)) throw UsageError("lanczos.tol must be in (0, 1), got " + std::to_string(tol));
}

namespace {

// Whether the smallest Ritz value (with residual bound r and largest |Ritz value| scale) is accurate enough.
using Accept = std::function<bool(double ritz_min, double r, double scale)>;

LanczosResult lanczos_run(const LinearOperator& apply, int n, const LanczosOptions& opts, const Accept& accept) {
  opts.validate();
  if (n <= 0) throw DataError("Lanczos: operator of size " + std::to_string(n));
  const int kmax = std::min(opts.max_steps, n);
  Rng rng(opts.seed);
  Eigen::VectorXd q(n);
  for (int i = 0; i < n; ++i) q(i) = rng.normal();
  q.normalize();

  std::vector<double> alpha, beta;  // T_k diagonal and off-diagonal
  Eigen::MatrixXd V;
  if (opts.full_reorthogonalization) V.resize(n, kmax);
  Eigen::VectorXd q_prev = Eigen::VectorXd::Zero(n), w(n);
  LanczosResult res;
  for (int k = 0; k < kmax; ++k) {
    if (opts.full_reorthogonalization) V.col(k) = q;
    apply(q, w);
    const double a = q.dot(w);
    w -= a * q;
    if (k > 0) w -= beta.back() * q_prev;
    if (opts.full_reorthogonalization)  // twice is enough (Kahan-Parlett)
      for (int pass = 0; pass < 2; ++pass) w -= V.leftCols(k + 1) * (V.leftCols(k + 1).transpose() * w);
    alpha.push_back(a);
    const double b = w.norm();
    res.steps = k + 1;

    const bool last = k + 1 == kmax;
    const bool check = last || (k + 1) % 5 == 0 || b == 0.0;
    if (check) {
      const int m = k + 1;
      Eigen::VectorXd d = Eigen::Map<Eigen::VectorXd>(alpha.data(), m);
      Eigen::VectorXd e = m > 1 ? Eigen::VectorXd(Eigen::Map<Eigen::VectorXd>(beta.data(), m - 1))
                                : Eigen::VectorXd();
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es;
      es.computeFromTridiagonal(d, e, Eigen::ComputeEigenvectors);
      res.lambda_min = es.eigenvalues()(0);
      res.residual = std::abs(b * es.eigenvectors()(m - 1, 0));
      const double scale = std::max(std::abs(es.eigenvalues()(0)), std::abs(es.eigenvalues()(m - 1)));
      const bool done = accept(res.lambda_min, res.residual, scale) || b == 0.0;
      if (opts.compute_vector && opts.full_reorthogonalization && (done || last))
        res.vector = (V.leftCols(m) * es.eigenvectors().col(0)).normalized();
      if (done) {
        res.converged = true;
        break;
      }
    }
    beta.push_back(b);
    q_prev = q;
    q = w / b;
  }
  // An exhausted full-dimension Krylov space (k = n with reorthogonalisation) is exact.
  if (!res.converged && opts.full_reorthogonalization && res.steps == n) res.converged = true;
  return res;
}

}  // namespace

LanczosResult lanczos_smallest(const LinearOperator& apply, int n, const LanczosOptions& opts) {
  return lanczos_run(apply, n, opts, [&opts](double, double r, double scale) {
    return r <= opts.tol * std::max(scale, 1e-300);
  });
}

LanczosResult lanczos_smallest(const Eigen::SparseMatrix<double>& A, const LanczosOptions& options) {
  if (A.rows() != A.cols()) throw DataError("Lanczos: matrix is not square");
  return lanczos_smallest([&A](const Eigen::VectorXd& in, Eigen::VectorXd& out) { out = A * in; },
                          static_cast<int>(A.rows()), options);
}

double max_abs_row_sum(const Eigen::SparseMatrix<double>& A) {
  double norm = 0.0;  // outer vectors are columns: column sums = row sums when A is symmetric
  for (int k = 0; k < A.outerSize(); ++k) {
    double sum = 0.0;
    for (Eigen::SparseMatrix<double>::InnerIterator it(A, k); it; ++it) sum += std::abs(it.value());
    norm = std::max(norm, sum);
  }
  return norm;
}

LanczosResult smallest_eigenvalue(const Eigen::SparseMatrix<double>& A, const LanczosOptions& options) {
  if (A.rows() != A.cols()) throw DataError("Lanczos: matrix is not square");
  const double norm_inf = max_abs_row_sum(A);
  if (norm_inf == 0.0) return lanczos_smallest(A, options);
  const double tau = 1e-8 * norm_inf;
  Eigen::SparseMatrix<double> identity(A.rows(), A.cols());
  identity.setIdentity();
  const Eigen::SparseMatrix<double> shifted = A + tau * identity;  // no insertion where a diagonal is absent
  const Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> llt(shifted);
  if (llt.info() != Eigen::Success) return lanczos_smallest(A, options);
  // Ritz values mu of -(A + tau I)^-1: theta = -mu > 0, lambda = 1 / theta - tau; a residual r puts an
  // eigenvalue theta_i within r of theta, so |1 / theta - 1 / theta_i| <= r / (theta (theta - r)).
  const auto lambda_error = [](double mu, double r) {
    const double theta = -mu;
    return theta > r ? r / (theta * (theta - r)) : INFINITY;
  };
  LanczosResult res = lanczos_run(
      [&llt](const Eigen::VectorXd& in, Eigen::VectorXd& out) { out = -llt.solve(in); },
      static_cast<int>(A.rows()), options,
      [&](double mu, double r, double) { return lambda_error(mu, r) <= options.tol * norm_inf; });
  res.residual = lambda_error(res.lambda_min, res.residual);
  res.lambda_min = 1.0 / -res.lambda_min - tau;
  res.shift_invert = true;
  return res;
}

int lanczos_step_limit(Eigen::Index order) {
  return order >= kLongLanczosMinOrder ? std::max(60, static_cast<int>(order / 8)) : 60;
}

double scaled_lambda_min(const Eigen::LLT<Eigen::MatrixXd>& L, const Eigen::MatrixXd& D) {
  const Eigen::Index n = D.rows();
  if (n >= kLanczosMinOrder) {
    LanczosOptions options;
    options.max_steps = lanczos_step_limit(n);
    options.tol = 1e-8;
    Eigen::VectorXd t(n);
    const LanczosResult res = lanczos_smallest(
        [&](const Eigen::VectorXd& in, Eigen::VectorXd& out) {
          t.noalias() = L.matrixU().solve(in);
          out.noalias() = D * t;
          L.matrixL().solveInPlace(out);
        },
        static_cast<int>(n), options);
    if (res.converged) return res.lambda_min - res.residual;
  }
  Eigen::MatrixXd T = L.matrixL().solve(D);
  T = L.matrixL().solve(T.transpose().eval());
  T = 0.5 * (T + T.transpose()).eval();
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(T, Eigen::EigenvaluesOnly).eigenvalues()(0);
}

}  // namespace core::certify
