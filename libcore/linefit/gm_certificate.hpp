// Certificate of a Geman-McClure line with the free multipliers of the chain QCQP chosen by a small
// SDP (gm_qcqp.hpp for the QCQP). At a lift x^ the stationary multipliers form an affine set
// lambda = lambda_s + D mu: lambda_s = gm_stationary_multipliers, and D spans the 2N - 2 directions
// with (sum_k d_k A_k) x^ = 0, two per chain pair (i, i+1), each touching only mu_i, mu_{i+1} and the
// pair's three multipliers (one rotates the pair's multipliers about l, one moves force between
// the point multipliers and the chain). They are the null space of that pair's local 8 x 5
// stationarity block (hub, z_i, z_{i+1} rows), computed per pair, O(N).
//
// Since H(lambda) x^ = 0 for every such lambda and x^_k != 0 for k the larger of |a|, |b|,
// H = W^T H_r W with H_r = H without row and column k (W = [I, -x_r / x_k] after reordering), so
// H >= 0 iff H_r >= 0. The SDP  max t  s.t.  H_r(lambda_s + D mu) - t I >= 0  over (mu, t) (order
// 3N + 1, 2N - 1 dual variables, our interior-point solver) finds the multipliers; t > 0 means
// H_r > 0. Its optimum is 0 < t exactly when a PSD chain certificate with H's null space span(x^)
// exists, i.e. when the chain relaxation (no redundant constraints) is tight at x^ (with strict
// complementarity). The all-pairs redundant constraints are not in this family: where only the
// redundant relaxation is tight, no chain multipliers certify and this path (rightly) does not.
// The decision stays certify_lagrangian's factorisation of H + eta I.
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include "certify/certificate.hpp"
#include "certify/sdp_solver.hpp"
#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

// The (4N - 2) x (2N - 2) basis D of stationary-preserving multiplier directions at x^ (columns
// 2i, 2i + 1 for pair i, each of unit norm).
Eigen::SparseMatrix<double> gm_free_directions(const Eigen::VectorXd& x);

struct GmMultiplierSdp {
  certify::SdpStatus status = certify::SdpStatus::iteration_limit;
  double t = 0.0;        // lambda_min bound of H_r found by the SDP (> 0: H_r > 0)
  int iterations = 0;
  double seconds = 0.0;
  int free_directions = 0;
  int order = 0;         // order of the SDP matrix (3N + 1)
};

struct GmCertificate {
  certify::Certificate certificate;
  GmMultiplierSdp sdp;
};

// Certificate of `line` with multipliers lambda_s + D mu from the SDP above (multiplier method
// "stationary_sdp"; when the SDP returns no finite y, lambda_s itself).
GmCertificate certify_gm_stationary_sdp(const Points& pts, const Line& line, double sigma,
                                        const certify::CertificateOptions& options = {},
                                        const certify::SdpOptions& sdp_options = {});

}  // namespace core::linefit
