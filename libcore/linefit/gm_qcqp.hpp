// The Geman-McClure line fit as a QCQP in a lifted vector, its Shor relaxation and the certificate
// of a candidate line ("A Fine Line", Sec. 4; lifting in the style of Yang & Carlone's certifiable
// robust estimation). With l = (a, b, c), q_i = (x_i, y_i, -1), A = diag(1, 1, 0), n = (a, b) and
// z_i = s_i l (the Black-Rangarajan weight s_i times the line):
//   x = [a; b; z_1; ...; z_N] in R^{3N+2},
//   f(x) = (1/N) sum_i (q_i^T z_i)^2 + sigma^2 (z_i^T A z_i - 2 z_{i,ab}^T n + n^T n)
//        = (1/N) sum_i s_i^2 e_i^2 + sigma^2 (s_i - 1)^2       when n^T n = 1,
//   s.t.  n^T n = 1 (A_0);  z_{i,a} b - z_{i,b} a = 0 (z_i's normal part parallel to n);
//         z_u z_v^T - z_v z_u^T = 0 (3 per edge (u, v) of a connected graph, gm_graph.hpp: all z_i
//         share one line). The chain (i, i+1) is the sparsest; more edges (a band, or all pairs, the
//         redundant constraints of Yang & Carlone, O(N^2)) hold for every lift and tighten the relaxation.
// c lives only in the z_i, so no lifted entry is free of cost (an l_c entry would be, and would
// leave the SDP without a strictly feasible dual). Minimising over s gives back the GM cost.
// Multipliers: lambda_0 (A_0), then N normal constraints, then 3 per edge in graph order
// (pairs (a, b), (a, c), (b, c)). Certificate: multipliers by sparse least squares on the
// stationarity system (residual reported), or the structured choices below, then the PSD decision of
// certify::certify_lagrangian.
#pragma once
#include <Eigen/Dense>

#include <vector>

#include "certify/certificate.hpp"
#include "certify/qcqp.hpp"
#include "linefit/gm_graph.hpp"
#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

certify::Qcqp gm_qcqp(const Points& pts, double sigma, const GmGraph& graph);
// x^ = [a; b; s_1 l; ...] with the optimal s_i = sigma^2 / (sigma^2 + e_i^2).
Eigen::VectorXd gm_lift(const Points& pts, const Line& line, double sigma);
// The line of a lifted vector: n = (a, b), c from the z_i with the largest weight s_i = z_{i,ab} . n.
Line gm_line_from_lifted(const Eigen::VectorXd& x);

// Multipliers solving the stationarity system H(lambda) x^ = 0 in closed form, O(N + edges), at an
// IRLS fixed point of `line` (forces routed along the graph's spanning tree, other edges 0). Derivation: with u = (-b, a, 0),
// m = (c a, c b, -1) spanning l^perp, point i's cost gradient is g_i = (tau_i / N)(r_i u + m),
// tau_i = s_i e_i, r_i = position along the line. Its u part goes to the normal constraint,
// mu_i = -2 tau_i r_i / N; its m part (the offset force) cannot reach (a, b) and is carried along
// the tree: edge (u, v) carries F = (1/N) sum of s_j tau_j m over u's side (the two sides' sums
// cancel by the offset stationarity), realised by omega = l x 2 F / (s_u s_v |l|^2), the antisymmetric
// multipliers being (nu_ab, nu_ac, nu_bc) = (-omega_c, omega_b, -omega_a); lambda_0 = sigma^2 (1 - mean s).
// This fixes the free directions (gm_free_directions: the u flow, omega parallel to l, circulations
// around cycles) at zero, which is exact for stationarity but rarely gives H >= 0: the point blocks
// of H are multiplier-free (H_ii = Q_ii) and the edge blocks couple neighbours, so PSD needs a joint
// choice of those free directions.
Eigen::VectorXd gm_stationary_multipliers(const Points& pts, const Line& line, double sigma, const GmGraph& graph);
// Adds to lambda the multipliers of edge e = (u, v) that carry the offset force F m from z_u to z_v
// (omega above), at the lift of `line` with weights s_u, s_v: stationary except at z_u and z_v,
// where they add -F m and +F m to the forces.
void gm_add_edge_flow(const GmGraph& g, int e, double F, const Line& line, double s_u, double s_v, Eigen::VectorXd& lambda);
// Number of multipliers: lambda_0, N normal, 3 per edge.
inline int gm_num_multipliers(const GmGraph& g) { return 1 + g.n + 3 * static_cast<int>(g.edges.size()); }
// Appends weight * A_k (both triangles) of multiplier k, O(1): k = 0: A_0; k = 1..N: point k-1's
// normal constraint; k = 1 + N + 3e + p: pair p of edge e.
void gm_append_constraint(const GmGraph& g, int k, double weight, std::vector<Eigen::Triplet<double>>& t);
// H(lambda) assembled directly, O(N + edges) (equal to gm_qcqp(pts, sigma, graph).lagrangian(lambda),
// which costs O(N (N + edges)) through its per-constraint matrices).
certify::SparseMatrixd gm_lagrangian(const Points& pts, double sigma, const GmGraph& graph, const Eigen::VectorXd& lambda);
// The certificate with the closed-form multipliers and the directly assembled H: O(N + edges) apart
// from the sparse Cholesky and Lanczos.
certify::Certificate certify_gm_closed_form(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                            const certify::CertificateOptions& options = {});

// The decision of certify::certify_lagrangian for multipliers fit.lambda (residual recomputed here)
// with the directly assembled H.
certify::Certificate certify_gm_multipliers(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                            certify::MultiplierFit fit, const certify::CertificateOptions& options = {});

// Builds the QCQP and certifies the line (multipliers by least squares).
certify::Certificate certify_gm(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                const certify::CertificateOptions& options = {});

}  // namespace core::linefit
