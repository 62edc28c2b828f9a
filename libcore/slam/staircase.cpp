// The Riemannian staircase, rounding and candidate certification (see staircase.hpp).
#include "slam/staircase.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/timer.hpp"
#include "slam/stiefel.hpp"

namespace core::slam {

Eigen::MatrixXd chordal_initialization(const DataMatrix& Q) {
  const int d = Q.d(), n = Q.num_poses(), nt = Q.translation_dim();
  const SparseMatrixd& K = Q.K();
  // Unknowns: K's indices without R_0's d columns [nt, nt + d).
  auto free_index = [&](int k) { return k < nt ? k : k - d; };
  std::vector<Eigen::Triplet<double>> Kff;
  Eigen::MatrixXd rhs = Eigen::MatrixXd::Zero(K.rows() - d, d);
  const double ridge = 1e-12 * K.diagonal().cwiseAbs().maxCoeff();
  for (int col = 0; col < K.outerSize(); ++col)
    for (SparseMatrixd::InnerIterator it(K, col); it; ++it) {
      const int row = static_cast<int>(it.row());
      const bool row_fixed = row >= nt && row < nt + d, col_fixed = col >= nt && col < nt + d;
      if (row_fixed) continue;
      if (col_fixed) rhs(free_index(row), col - nt) -= it.value();  // K_f0 R_0^T with R_0 = I
      else Kff.emplace_back(free_index(row), free_index(col), it.value());
    }
  for (int k = 0; k < K.rows() - d; ++k) Kff.emplace_back(k, k, ridge);
  SparseMatrixd A(K.rows() - d, K.rows() - d);
  A.setFromTriplets(Kff.begin(), Kff.end());
  SparseCholesky chol(Q.cholesky());
  chol.analyze(A);
  if (!chol.factorize(A)) throw DataError("chordal initialisation: the linear relaxation is not positive definite");
  const Eigen::MatrixXd Z = chol.solve(rhs);  // [t_1..t_{n-1}; R_1^T..R_{n-1}^T]
  Eigen::MatrixXd R(d, d * n);
  R.leftCols(d).setIdentity();
  for (int i = 1; i < n; ++i) R.middleCols(d * i, d) = project_to_rotation(Z.middleRows(nt + d * (i - 1), d).transpose());
  return R;
}

Eigen::MatrixXd round_solution(const Eigen::MatrixXd& X, int d) {
  const int n = static_cast<int>(X.rows()) / d;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(X.transpose() * X);
  const Eigen::MatrixXd W = es.eigenvectors().rightCols(d).rowwise().reverse();  // top d, largest first
  Eigen::MatrixXd R = (X * W).transpose();                                         // d x dn
  int positive = 0;
  for (int i = 0; i < n; ++i) positive += R.middleCols(d * i, d).determinant() > 0;
  if (2 * positive < n) R.row(d - 1) *= -1.0;
  for (int i = 0; i < n; ++i) R.middleCols(d * i, d) = project_to_rotation(R.middleCols(d * i, d));
  return R;
}

namespace {

void finish(SolveResult& s, const RelaxationCertificate& c, const CertificateOptions& o) {
  s.psd = c.psd;
  s.lambda_min = c.lambda_min;
  s.dual_value = c.dual_value;
  s.duality_gap = s.cost - c.dual_value;
  s.lower_bound = c.psd ? c.dual_value - c.shift_bound : std::nan("");
  s.suboptimality_bound = s.cost - s.lower_bound;
  const double relative_gap = s.duality_gap / (1.0 + std::abs(s.cost));
  if (!c.psd) s.reason = "S = Q - Lambda is not positive semidefinite (lambda_min " + std::to_string(c.lambda_min) + ")";
  else if (relative_gap > o.gap_tol) s.reason = "duality gap above tolerance (relative " + std::to_string(relative_gap) + ")";
  s.certified = s.reason.empty();
}

}  // namespace

SolveResult solve(const DataMatrix& Q, const StaircaseOptions& o) {
  const int d = Q.d(), n = Q.num_poses();
  const int r0 = o.rank_min > 0 ? o.rank_min : d + 1;
  if (r0 < d || o.rank_max < r0) throw UsageError("need d <= rank_min <= rank_max");
  SolveResult s;
  Timer timer;
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(d * n, r0);
  if (o.init == "chordal") X.leftCols(d) = chordal_initialization(Q).transpose();
  else X = stiefel::random_point(n, d, r0, o.seed);
  s.chordal_seconds = timer.seconds();
  Relaxation f(Q, o.max_condition);
  s.preconditioner_seconds = timer.seconds() - s.chordal_seconds;
  Certifier certifier(Q, o.certificate);
  RelaxationCertificate cert;
  for (int r = r0;; ++r) {
    Timer tr;
    f.set_point(X);
    StaircaseLevel level;
    level.rank = r;
    level.trust_region = minimise(f, o.trust_region);
    s.trust_region_seconds += tr.seconds();
    Timer ct;
    cert = certifier.certify_with_lambda(f.lambda());
    s.certify_seconds += ct.seconds();
    if (!cert.psd && o.refine_factor > 0) {
      // Not PSD at a loosely converged point: converge further before trusting the negative
      // eigenvalue (a near-critical point can show one of the size of its gradient).
      TrustRegionOptions tight = o.trust_region;
      tight.grad_tol *= o.refine_factor;
      tight.rel_decrease_tol = 0.0;
      Timer tr2;
      const TrustRegionResult more = minimise(f, tight);
      s.trust_region_seconds += tr2.seconds();
      level.trust_region.iterations += more.iterations;
      level.trust_region.tcg_iterations += more.tcg_iterations;
      level.trust_region.grad_norm = more.grad_norm;
      level.trust_region.stop = more.stop;
      level.refined = true;
      Timer ct2;
      cert = certifier.certify_with_lambda(f.lambda());
      s.certify_seconds += ct2.seconds();
    }
    X = f.point();
    level.relaxation_cost = f.cost();
    level.lambda_min = cert.lambda_min;
    level.psd = cert.psd;
    s.levels.push_back(level);
    s.rank = r;
    log::debug("staircase rank {}: F = {:.10g} after {} iterations ({} tCG, stop {}), lambda_min {:.3g}, {}", r,
               f.cost(), level.trust_region.iterations, level.trust_region.tcg_iterations, level.trust_region.stop,
               cert.lambda_min, cert.psd ? "PSD" : "not PSD");
    if (cert.psd || r >= o.rank_max || cert.direction.size() == 0) break;
    // Escape the saddle [X 0] along [0 v]: halve the step until the cost decreases.
    Eigen::MatrixXd X_up = Eigen::MatrixXd::Zero(d * n, r + 1), V = X_up;
    X_up.leftCols(r) = X;
    V.col(r) = cert.direction;
    const double F0 = f.cost();
    Eigen::MatrixXd X_next = X_up;
    for (double alpha = std::max(1.0, std::sqrt(static_cast<double>(n))); alpha > 1e-12; alpha *= 0.5) {
      const Eigen::MatrixXd trial = stiefel::retract(X_up, alpha * V, d);
      if (Q.cost(trial) < F0) {
        X_next = trial;
        break;
      }
    }
    X = X_next;
  }
  s.relaxation_cost = f.cost();
  const Eigen::MatrixXd R = round_solution(X, d);
  s.estimate = anchor_first_pose(Q.recover(R));
  s.estimate = Q.recover(s.estimate.R);
  s.cost = Q.cost(s.estimate.R.transpose());
  finish(s, cert, o.certificate);
  s.solve_seconds = timer.seconds() - s.certify_seconds;
  return s;
}

SolveResult certify_candidate(const DataMatrix& Q, const Problem& problem, const Estimate& candidate,
                              const CertificateOptions& o) {
  SolveResult s;
  Timer timer;
  const int d = Q.d();
  for (int i = 0; i < Q.num_poses(); ++i) {
    const Eigen::MatrixXd Ri = candidate.R.middleCols(d * i, d);
    if ((Ri.transpose() * Ri - Eigen::MatrixXd::Identity(d, d)).norm() > 1e-6 || Ri.determinant() <= 0)
      throw DataError("candidate pose " + std::to_string(problem.pose_ids[i]) + " has no rotation matrix");
  }
  s.estimate = candidate;
  s.cost = evaluate_cost(problem, candidate);
  s.rank = d;
  Certifier certifier(Q, o);
  const RelaxationCertificate c = certifier.certify(candidate.R.transpose());
  s.relaxation_cost = Q.cost(candidate.R.transpose());
  finish(s, c, o);
  s.certify_seconds = timer.seconds();
  return s;
}

}  // namespace core::slam
