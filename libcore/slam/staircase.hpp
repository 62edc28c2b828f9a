// The Riemannian staircase (SE-Sync, Rosen et al., IJRR 2019, Algorithm 1-2; Boumal et al. 2016):
// minimise the rank-r relaxation by trust region from a chordal initialisation, test the certificate,
// and when S has a negative eigenvalue (after converging tighter, so that the eigenvalue is not an
// artefact of the loose default tolerances) climb to rank r + 1 along its eigenvector (a second-order
// descent direction from the critical point [X 0]); then round the relaxation's solution to SO(d)^n
// (SE-Sync's Algorithm 3: the top-d right singular vectors, the sign with the most positive
// determinants, each block projected to SO(d)), recover translations and landmarks, and report
// cost, duality gap and the suboptimality bound. certify_candidate() runs the same certificate at a
// given configuration (the rank-d point of its rotations).
#pragma once
#include <Eigen/Dense>

#include <cstdint>
#include <string>
#include <vector>

#include "slam/certificate.hpp"
#include "slam/data_matrix.hpp"
#include "slam/trust_region.hpp"

namespace core::slam {

struct StaircaseOptions {
  int rank_min = 0;  // 0: d + 1
  int rank_max = 10;
  std::string init = "chordal";  // chordal | random
  std::uint64_t seed = 0;        // random initialisation
  double max_condition = 1e6;    // preconditioner regularisation
  double refine_factor = 1e-4;   // not PSD: refine with grad_tol * this before escaping (0: never)
  TrustRegionOptions trust_region;
  CertificateOptions certificate;
};

struct StaircaseLevel {
  int rank = 0;
  TrustRegionResult trust_region;
  double relaxation_cost = 0.0;
  double lambda_min = 0.0;
  bool psd = false;
  bool refined = false;  // the trust region was run again with tighter tolerances before the verdict
};

struct SolveResult {
  Estimate estimate;              // rounded, pose 0 at the identity
  double cost = 0.0;              // f(estimate)
  double relaxation_cost = 0.0;   // F(X) at the last level
  double dual_value = 0.0;        // tr(Lambda)
  double lower_bound = 0.0;       // tr(Lambda) - tau dn when psd, else NaN (no bound)
  double duality_gap = 0.0;       // cost - tr(Lambda)
  double suboptimality_bound = 0.0;  // cost - lower_bound (NaN when not psd)
  double lambda_min = 0.0;
  bool psd = false, certified = false;
  int rank = 0;
  std::string reason;             // why not certified
  std::vector<StaircaseLevel> levels;
  double solve_seconds = 0.0, certify_seconds = 0.0;
  // Parts of solve_seconds: the chordal initialisation, the preconditioner's factorisation and the
  // trust-region iterations (all levels), for profiles and for per-iteration costs.
  double chordal_seconds = 0.0, preconditioner_seconds = 0.0, trust_region_seconds = 0.0;
};

// Chordal initialisation: the cost minimised with the rotations' orthogonality dropped and R_0 = I
// (one sparse solve with K), each block then projected to SO(d). Returns R (d x dn).
Eigen::MatrixXd chordal_initialization(const DataMatrix& Q);
// Rounds X (dn x r) to R in SO(d)^n (d x dn).
Eigen::MatrixXd round_solution(const Eigen::MatrixXd& X, int d);

SolveResult solve(const DataMatrix& Q, const StaircaseOptions& options);
// Certifies a configuration: its rotations as the rank-d point, its own cost (translations and
// landmarks as given) against the lower bound.
SolveResult certify_candidate(const DataMatrix& Q, const Problem& problem, const Estimate& candidate,
                              const CertificateOptions& options);

}  // namespace core::slam
