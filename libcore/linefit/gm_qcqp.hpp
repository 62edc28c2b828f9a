// The Geman-McClure line fit as a QCQP in a lifted vector, its Shor relaxation and the certificate
// of a candidate line ("A Fine Line", Sec. 4; lifting in the style of Yang & Carlone's certifiable
// robust estimation). With l = (a, b, c), q_i = (x_i, y_i, -1), A = diag(1, 1, 0), n = (a, b) and
// z_i = s_i l (the Black-Rangarajan weight s_i times the line):
//   x = [a; b; z_1; ...; z_N] in R^{3N+2},
//   f(x) = (1/N) sum_i (q_i^T z_i)^2 + sigma^2 (z_i^T A z_i - 2 z_{i,ab}^T n + n^T n)
//        = (1/N) sum_i s_i^2 e_i^2 + sigma^2 (s_i - 1)^2       when n^T n = 1,
//   s.t.  n^T n = 1 (A_0);  z_{i,a} b - z_{i,b} a = 0 (z_i's normal part parallel to n);
//         z_i z_{i+1}^T - z_{i+1} z_i^T = 0 (3 per consecutive pair: all z_i share one line);
//   and optionally the redundant all-pairs version z_i z_j^T - z_j z_i^T = 0 (i < j, j > i + 1),
//   which holds for every feasible x and tightens the relaxation (O(N^2) constraints).
// c lives only in the z_i, so no lifted entry is free of cost (an l_c entry would be, and would
// leave the SDP without a strictly feasible dual). Minimising over s gives back the GM cost.
// Certificate: multipliers by sparse least squares on the stationarity system (residual reported),
// then the PSD decision of certify::certify.
#pragma once
#include <Eigen/Dense>

#include <vector>

#include "certify/certificate.hpp"
#include "certify/qcqp.hpp"
#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

certify::Qcqp gm_qcqp(const Points& pts, double sigma, bool redundant);
// x^ = [a; b; s_1 l; ...] with the optimal s_i = sigma^2 / (sigma^2 + e_i^2).
Eigen::VectorXd gm_lift(const Points& pts, const Line& line, double sigma);
// The line of a lifted vector: n = (a, b), c from the z_i with the largest weight s_i = z_{i,ab} . n.
Line gm_line_from_lifted(const Eigen::VectorXd& x);

// Multipliers solving the stationarity system H(lambda) x^ = 0 in closed form, O(N), at an IRLS
// fixed point of `line` (redundant-constraint multipliers 0). Derivation: with u = (-b, a, 0),
// m = (c a, c b, -1) spanning l^perp, point i's cost gradient is g_i = (tau_i / N)(r_i u + m),
// tau_i = s_i e_i, r_i = position along the line. Its u part goes to the normal constraint,
// mu_i = -2 tau_i r_i / N; its m part (the offset force) cannot reach (a, b) and is carried along
// the chain: pair (i, i+1) carries F_i = (1/N) sum_{j<=i} s_j tau_j m (zero at the end by the
// offset stationarity), realised by omega_i = l x 2 F_i / (s_i s_{i+1} |l|^2), the antisymmetric
// multipliers being (nu_ab, nu_ac, nu_bc) = (-omega_c, omega_b, -omega_a); lambda_0 = sigma^2 (1 - mean s).
// This fixes the 2N - 2 free directions (the u flow along the chain and omega_i parallel to l) at
// zero, which is exact for stationarity but rarely gives H >= 0: the point blocks of H are
// multiplier-free (H_ii = Q_ii) and the chain blocks couple neighbours, so H is block tridiagonal
// plus an arrow, not block-arrowhead, and PSD needs a joint choice of those free directions.
Eigen::VectorXd gm_stationary_multipliers(const Points& pts, const Line& line, double sigma, bool redundant);
// Number of multipliers of the chain QCQP (no redundant constraints): lambda_0, N normal, 3(N-1) chain.
inline int gm_chain_multipliers(int N) { return 1 + N + 3 * (N - 1); }
// Appends weight * A_k (both triangles) of multiplier k of the chain QCQP with N points, O(1):
// k = 0: A_0; k = 1..N: point k-1's normal constraint; k = 1 + N + 3i + p: pair p of z_i || z_{i+1}.
void gm_append_constraint(int N, int k, double weight, std::vector<Eigen::Triplet<double>>& t);
// H(lambda) of the chain QCQP (no redundant constraints) assembled directly, O(N) (equal to
// gm_qcqp(pts, sigma, false).lagrangian(lambda), which costs O(N^2) through its per-constraint matrices).
certify::SparseMatrixd gm_lagrangian(const Points& pts, double sigma, const Eigen::VectorXd& lambda);
// The certificate with the closed-form multipliers and the directly assembled H: O(N) apart from
// the sparse Cholesky (block tridiagonal plus arrow, so also near-linear) and Lanczos.
certify::Certificate certify_gm_closed_form(const Points& pts, const Line& line, double sigma,
                                            const certify::CertificateOptions& options = {});

// The decision of certify::certify_lagrangian for chain-QCQP multipliers fit.lambda (residual
// recomputed here) with the directly assembled H.
certify::Certificate certify_gm_multipliers(const Points& pts, const Line& line, double sigma,
                                            certify::MultiplierFit fit, const certify::CertificateOptions& options = {});

// Builds the QCQP and certifies the line (multipliers by least squares).
certify::Certificate certify_gm(const Points& pts, const Line& line, double sigma, bool redundant,
                                const certify::CertificateOptions& options = {});

}  // namespace core::linefit
