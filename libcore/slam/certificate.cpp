// PSD test, lambda_min and escape direction of the relaxation's certificate (see certificate.hpp).
#include "slam/certificate.hpp"

#include <cmath>

#include "common/errors.hpp"
#include "slam/stiefel.hpp"

namespace core::slam {

Certifier::Certifier(const DataMatrix& Q, CertificateOptions options)
    : Q_(Q), options_(options), factor_(Q.cholesky()) {
  if (!(options_.eta_rel > 0.0)) throw UsageError("certificate.eta_rel must be > 0");
  tau_ = options_.eta_rel * Q.C().diagonal().sum() / Q.rotation_dim();
  factor_.analyze(Q.K());
}

RelaxationCertificate Certifier::certify(const Eigen::MatrixXd& X) {
  return certify_with_lambda(stiefel::sym_block_diag(Q_.multiply(X), X, Q_.d()));
}

RelaxationCertificate Certifier::certify_with_lambda(const Eigen::MatrixXd& Lambda) {
  const int d = Q_.d(), nr = Q_.rotation_dim(), nt = Q_.translation_dim();
  RelaxationCertificate c;
  c.dual_value = 0.0;
  for (int i = 0; i < Q_.num_poses(); ++i) c.dual_value += Lambda.middleCols(d * i, d).trace();
  c.tau = tau_;
  c.shift_bound = tau_ * nr;
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(d, d).replicate(1, Q_.num_poses());
  auto factorize_shifted = [&](double sigma) { return factor_.factorize(Q_.K_plus_rotation_blocks(sigma * I - Lambda)); };
  c.psd = factorize_shifted(tau_);
  double sigma = tau_;
  bool factored = c.psd;
  for (int k = 0; !factored && k < 200; ++k) {
    sigma *= 2.0;
    factored = factorize_shifted(sigma);
  }
  if (!factored) throw Error(ExitCode::internal, "certificate: S + sigma I did not factorise for any shift");
  certify::LanczosOptions lo = options_.lanczos;
  lo.compute_vector = !c.psd;
  const certify::LanczosResult r = certify::lanczos_smallest(
      [&](const Eigen::VectorXd& in, Eigen::VectorXd& out) {
        Eigen::VectorXd rhs = Eigen::VectorXd::Zero(nt + nr);
        rhs.tail(nr) = in;
        out = -factor_.solve(rhs).bottomRows(nr);
      },
      nr, lo);
  c.lambda_min = -1.0 / r.lambda_min - sigma;  // Ritz value of -(S + sigma I)^-1
  c.lambda_min_converged = r.converged;
  c.lanczos_steps = r.steps;
  if (!c.psd) c.direction = r.vector;
  return c;
}

}  // namespace core::slam
