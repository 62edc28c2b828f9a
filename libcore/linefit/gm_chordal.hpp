// Certificate of a Geman-McClure line with the free multipliers chosen in O(N) per iteration
// through the chordal structure of the Lagrangian (multiplier method "chordal"). Same family as
// gm_certificate.hpp: lambda = lambda_s + D mu, and H >= 0 iff H_r >= 0 (H without hub row k0).
// H_r's sparsity graph (hub entry, the graph's points) is chordal with cliques C = {hub, z_i for i in
// a clique of the constraint graph} (gm_graph.hpp; 7 indices for a chain), so by Agler's theorem
// H_r - t I >= 0 iff H_r - t I = sum_C E_C^T X_C E_C with every X_C >= 0. ADMM on  max t  s.t.
// X_C >= 0,  sum_C E_C^T X_C E_C = H_r(lambda_s + D mu) - t I: the PSD step is one small
// eigendecomposition per clique; the affine step eliminates the clique copies in closed form (each
// pattern entry is shared by a known number of cliques) and leaves a square system in (mu, t) that
// is banded (for band graphs) plus one dense row (t), factored once by sparse LDL^T. So each
// iteration is O(N) for bounded clique sizes. It stops when the iterate proves H_r > 0 (t larger than the
// Frobenius norm of the consensus residual, a bound on its spectral norm), when the residuals
// converge, or at the iteration limit. The decision stays certify_lagrangian's factorisation of
// H + eta diag(H) at the returned multipliers; the ADMM figures are information only.
#pragma once
#include "certify/certificate.hpp"
#include "linefit/gm_graph.hpp"
#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

struct ChordalOptions {
  int max_iterations = 5000;
  double rho = 1.0;        // ADMM penalty (H_r scaled to max entry 1)
  double weight = 1.0;     // weight of t in the objective
  double tolerance = 1e-7; // relative primal and dual residuals for convergence
  double settle_tolerance = 1e-5;  // stop when t < -residual has settled to this (relative, per 50 iterations)
  double relaxation = 1.6; // ADMM over-relaxation alpha in (0, 2)
};

struct GmChordalResult {
  double t = 0.0;            // t of the last iterate (Jacobi-scaled units, gm_free_family)
  double residual = 0.0;     // Frobenius norm of the consensus residual sum_i E_i^T (Y_i - X_i) E_i
  bool proven = false;       // t > residual: the iterate's H_r is positive definite
  bool converged = false;    // residuals below tolerance
  int iterations = 0;
  double seconds = 0.0;
  int cliques = 0;
};

struct GmChordalCertificate {
  certify::Certificate certificate;
  GmChordalResult admm;
};

GmChordalCertificate certify_gm_chordal(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                        const certify::CertificateOptions& options = {},
                                        const ChordalOptions& chordal = {});

}  // namespace core::linefit
