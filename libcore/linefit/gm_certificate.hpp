// Certificate of a Geman-McClure line with the free multipliers chosen by an SDP (gm_qcqp.hpp for
// the QCQP, gm_graph.hpp for its constraint graph). At a lift x^ the stationary multipliers form an
// affine set lambda = lambda_s + D mu: lambda_s = gm_stationary_multipliers, and D spans the
// 3E - N + 1 directions with (sum_k d_k A_k) x^ = 0 (E edges): two per edge (u, v), each touching
// only mu_u, mu_v and the edge's three multipliers (one rotates them about l, one moves force
// between the point multipliers and the edge), the null space of the edge's local 8 x 5 stationarity
// block (hub, z_u, z_v rows); and one per edge outside the spanning tree: the offset force m
// circulating around the cycle it closes (gm_add_edge_flow along the cycle; the u force around a
// cycle is already a sum of the per-edge directions). O(E + cycle lengths).
//
// Since H(lambda) x^ = 0 for every such lambda and x^_k != 0 for k the larger of |a|, |b|,
// H = W^T H_r W with H_r = H without row and column k (W = [I, -x_r / x_k] after reordering), so
// H >= 0 iff H_r >= 0. The SDP  max t  s.t.  S H_r(lambda_s + D mu) S - t I >= 0  over (mu, t)
// (S the Jacobi scaling below; order 3N + 1) finds the multipliers; t > 0 means H_r > 0. Its optimum
// is positive exactly when a PSD certificate with H's null space span(x^) exists in the family, i.e.
// when the relaxation on the same graph is tight at x^ (with strict complementarity). A sparser
// graph gives a looser relaxation: where only a denser graph's relaxation is tight, this path on the
// sparse graph (rightly) does not certify. The decision stays certify_lagrangian's factorisation of
// H + eta diag(H).
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCore>

#include <string>
#include <vector>

#include "certify/certificate.hpp"
#include "certify/sdp_solver.hpp"
#include "linefit/gm_graph.hpp"
#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

// The free-multiplier family in reduced, Jacobi-scaled coordinates, shared by the multiplier
// searches: with H_r = H without hub row/column k0 (reduced index 0 = the other hub entry, 1 + 3i + r
// = entry r of z_i) and S = diag(H_r)^{-1/2} (constant: no free direction touches the diagonal),
//   S H_r(lambda_s + D alpha) S = C + sum_j alpha_j B_j,
// stored as upper-triangle entries (row <= col). S H_r S - t I >= 0 with t > 0 proves H_r > 0; the
// scaling puts the hub entry (O(1)) and the z_i blocks (O(1/N)) on one scale.
struct ReducedEntry {
  int row, col;
  double value;
};
struct GmFreeFamily {
  Eigen::VectorXd x;         // the lift
  Eigen::VectorXd lambda_s;  // stationary multipliers
  Eigen::SparseMatrix<double> D;
  int k0 = 0;
  int order = 0;             // 3N + 1
  std::vector<ReducedEntry> C;
  std::vector<std::vector<ReducedEntry>> B;  // one per column of D
};
GmFreeFamily gm_free_family(const Points& pts, const Line& line, double sigma, const GmGraph& graph);

// The basis D (gm_num_multipliers rows, 3E - N + 1 columns) of stationary-preserving multiplier
// directions at the lift x^: columns 2e, 2e + 1 for edge e, then one circulation per non-tree edge
// (each column of unit norm).
Eigen::SparseMatrix<double> gm_free_directions(const Eigen::VectorXd& x, const GmGraph& graph);

struct GmMultiplierSdp {
  certify::SdpStatus status = certify::SdpStatus::iteration_limit;
  double t = 0.0;        // lambda_min bound of H_r found by the SDP (> 0: H_r > 0)
  int iterations = 0;
  double seconds = 0.0;
  int free_directions = 0;
  int order = 0;         // order of the SDP matrix (3N + 1; sparse_sdp: sum of the clique blocks)
  int constraints = 0;   // of the SDP (the free directions and t; sparse_sdp: also the split variables)
  std::string graph;     // name of the constraint graph
};

struct GmCertificate {
  certify::Certificate certificate;
  GmMultiplierSdp sdp;
};

// Certificate of `line` with multipliers lambda_s + D mu from the SDP above (multiplier method
// "stationary_sdp"; when the SDP returns no finite y, lambda_s itself).
GmCertificate certify_gm_stationary_sdp(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                        const certify::CertificateOptions& options = {},
                                        const certify::SdpOptions& sdp_options = {});

// The same SDP after chordal conversion (multiplier method "sparse_sdp"; Fukuda, Kojima, Murota,
// Nakata 2000; Vandenberghe & Andersen 2015, Sec. 14): the pattern of H_r (hub entry plus the graph)
// is chordal with cliques {hub, z_i : i in a clique of the graph}, so H_r - t I >= 0 iff it is a sum
// of PSD clique blocks (Agler). Variables: alpha, t and one split variable per extra clique covering
// a pattern entry; one small block per clique. Each constraint touches at most two blocks except t
// (all), so the interior-point Schur complement is sparse (banded for band graphs, plus t's dense
// row) and one iteration costs O(N) with a sparse Cholesky, the iteration count staying that of an
// interior-point method (20-40) whether the optimum t* is positive (certificate) or not (rejection).
// The optimum is that of stationary_sdp; the decision stays certify_lagrangian's factorisation.
GmCertificate certify_gm_sparse_sdp(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                    const certify::CertificateOptions& options = {},
                                    const certify::SdpOptions& sdp_options = {});

}  // namespace core::linefit
