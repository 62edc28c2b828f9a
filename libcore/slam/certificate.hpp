// The certificate of global optimality (SE-Sync, Rosen et al., IJRR 2019, Theorem 7 and Sec. 4.2;
// Holmes & Barfoot, RA-L 2023, Sec. V): at a point X of the rank-r relaxation with
// Lambda = SymBlockDiag(Q X X^T) and S = Q - Lambda, S >= 0 proves that F(X) = tr(Lambda) is the
// optimum of the semidefinite relaxation, a lower bound on the cost of every configuration:
// for R in SO(d)^n, f(R) = tr(R S R^T) + tr(Lambda) >= tr(Lambda) - tau dn when S + tau I >= 0.
// The PSD test is a sparse Cholesky factorisation of K - diag(0, Lambda - tau I) (a Schur
// complement argument: its rotation block's complement is S + tau I), with tau = eta_rel tr(C)/(dn)
// relative to the data. lambda_min(S) (information, and the escape direction of the staircase when
// negative) comes from Lanczos on -(S + sigma I)^-1 (certify::lanczos_smallest) through the same
// factorisation, sigma = tau when S + tau I >= 0, else the smallest tau 2^k that factorises.
#pragma once
#include <Eigen/Dense>

#include "certify/lanczos.hpp"
#include "slam/data_matrix.hpp"

namespace core::slam {

struct CertificateOptions {
  double eta_rel = 1e-10;  // PSD shift relative to the mean diagonal of C
  double gap_tol = 1e-6;   // relative duality gap (f - tr Lambda) / (1 + |f|)
  certify::LanczosOptions lanczos{.max_steps = 300, .tol = 1e-8};
};

struct RelaxationCertificate {
  bool psd = false;            // S + tau I is positive definite
  double tau = 0.0;            // the absolute shift
  double lambda_min = 0.0;     // smallest eigenvalue of S (Lanczos)
  bool lambda_min_converged = false;
  int lanczos_steps = 0;
  double dual_value = 0.0;     // tr(Lambda) (= F(X))
  double shift_bound = 0.0;    // tau dn: what the shift takes off the lower bound
  Eigen::VectorXd direction;   // unit eigenvector of lambda_min when !psd
};

class Certifier {
 public:
  Certifier(const DataMatrix& Q, CertificateOptions options);
  RelaxationCertificate certify(const Eigen::MatrixXd& X);
  // The same with Lambda = SymBlockDiag(Q X X^T) already at hand (the relaxation caches it).
  RelaxationCertificate certify_with_lambda(const Eigen::MatrixXd& Lambda);
  const CertificateOptions& options() const { return options_; }

 private:
  const DataMatrix& Q_;
  CertificateOptions options_;
  SparseCholesky factor_;
  double tau_ = 0.0;
};

}  // namespace core::slam
