// Shor relaxation solve, rank-one extraction and tightness figures (see relaxation.hpp).
#include "certify/relaxation.hpp"

#include <Eigen/Eigenvalues>

#include <cmath>

#include "common/errors.hpp"

namespace core::certify {

void RelaxationOptions::validate() const {
  sdp.validate();
  auto unit = [](double v, const char* name) {
    if (!(v > 0.0 && v < 1.0)) throw UsageError(std::string("relaxation.") + name + " must be in (0, 1), got " + std::to_string(v));
  };
  unit(rank_tol, "rank_tol");
  unit(gap_tol, "gap_tol");
  unit(feasibility_tol, "feasibility_tol");
}

RelaxationResult solve_relaxation(const Qcqp& q, const RelaxationOptions& opts,
                                  std::optional<double> best_local_cost) {
  opts.validate();
  RelaxationResult r;
  r.sdp = solve_sdp(shor_relaxation(q), opts.sdp);
  r.sdp_value = r.sdp.primal_objective;
  const Eigen::MatrixXd& X = r.sdp.X[0];
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(0.5 * (X + X.transpose()));
  r.eigenvalues = es.eigenvalues().reverse();
  const double l1 = std::max(r.eigenvalues(0), 0.0);
  r.eigen_ratio = r.eigenvalues.size() > 1 && l1 > 0.0 ? std::max(r.eigenvalues(1), 0.0) / l1 : 0.0;
  r.numerical_rank = static_cast<int>((r.eigenvalues.array() > opts.rank_tol * l1).count());

  Eigen::VectorXd v = es.eigenvectors().col(es.eigenvectors().cols() - 1);
  const double a0 = q.A0.quad(v);
  r.x = a0 > 0.0 ? Eigen::VectorXd(v / std::sqrt(a0)) : Eigen::VectorXd(std::sqrt(l1) * v);
  const Eigen::VectorXd a0x = q.A0.apply(r.x);
  for (Eigen::Index i = 0; i < a0x.size(); ++i)
    if (std::abs(a0x(i)) > 1e-12 * a0x.cwiseAbs().maxCoeff()) {
      if (a0x(i) < 0.0) r.x = -r.x;
      break;
    }
  r.extracted_cost = q.cost(r.x);
  r.extracted_violation = q.constraint_violation(r.x);
  r.relative_gap = (r.extracted_cost - r.sdp_value) / (1.0 + std::abs(r.extracted_cost));
  if (best_local_cost) r.local_gap = *best_local_cost - r.sdp_value;
  r.tight = r.sdp.status == SdpStatus::optimal && r.eigen_ratio < opts.rank_tol &&
            r.extracted_violation < opts.feasibility_tol && std::abs(r.relative_gap) < opts.gap_tol;
  return r;
}

}  // namespace core::certify
