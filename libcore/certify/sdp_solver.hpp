// Primal-dual interior-point solver for the block-diagonal standard-form SDP of sdp_problem.hpp.
//
// Infeasible-start path-following method with the HKM search direction (Helmberg, Rendl,
// Vanderbei, Wolkowicz 1996; Kojima, Shindoh, Hara 1997; Monteiro 1997) and Mehrotra's
// predictor-corrector (as in SDPT3 and CSDP): the Schur complement M_ij = <A_i, X A_j Z^-1> is
// formed from the sparse constraint entries and factored by dense or sparse Cholesky (SchurMode;
// shifted by a tiny multiple of its largest diagonal entry when rounding makes it indefinite on degenerate problems), and every
// direction gets iterative refinement so that A(dX) = r_p holds to rounding (without it primal
// feasibility is lost near the optimum, where Z^-1 is huge); the step to the boundary of the PSD
// cone is a full step when a Cholesky of X + dX / f succeeds (f the step fraction), else found from the
// smallest eigenvalue of L^-1 dX L^-T (Lanczos for blocks of order >= 64, lanczos.hpp; X = L L^T, the
// factors computed once a step). Before solving, C and every A_i (with its b_i)
// are scaled to unit Frobenius norm; the result is reported for the original data. The starting point
// (StartPoint) is SDPT3's, from the scaled or the original data, or both in turn (automatic).
//
// Robustness (as CSDP and SDPT3 do): a step whose new X or Z fails its Cholesky factorisation (rounding
// at a near-singular iterate) is shortened by kBacktrack until it succeeds instead of aborting, and the
// best iterate seen (by the merit max(relative primal residual, relative dual residual, relative gap))
// is kept: when the solver stops without meeting `tol` (a Schur complement it cannot factor, no progress
// for `stall_iterations`, 5 once within near_tol or once <X, Z> is below 1% of the duality gap (the gap is
// then primal residual times a diverging y, which further steps cannot close: problems without a
// strictly feasible X, SDPLIB's qap family), a merit 100 times worse than a best one already within
// `near_tol`, or the iteration limit) it returns that best iterate.
//
// Status: optimal when the relative primal and dual residuals and the relative duality gap are
// below `tol`; near_optimal when the solver stopped early and its best iterate is within `near_tol`
// (achieved_accuracy says how close); primal_infeasible when the dual iterate is (to `infeasibility_tol`) a ray
// b^T y > 0, C - Z - A^T y ~ 0 direction of unbounded dual improvement; dual_infeasible (primal
// unbounded) when <C,X> < 0 with A(X) ~ 0 relative to it; stalled when the best iterate is not within
// near_tol and steps shrink to nothing, progress stops or the Schur complement cannot be factored;
// above_target / below_target (only with options.target) as soon as a feasible iterate shows on which side of the target the optimum lies; iteration_limit
// otherwise.
#pragma once
#include <Eigen/Dense>

#include <cstdint>
#include <optional>
#include <string>

#include "certify/sdp_problem.hpp"
#include "common/errors.hpp"

namespace core::certify {

enum class SdpStatus { optimal, near_optimal, primal_infeasible, dual_infeasible, stalled, iteration_limit, above_target, below_target };
// How the Schur complement is stored and factored (schur_complement.hpp): dense Cholesky, or sparse
// Cholesky (block order, else AMD; analysed once) for problems whose constraints each touch few
// blocks of many small ones (then M_ij = 0 unless constraints i and j share a block; e.g. a chordal
// conversion, where one iteration costs O(number of blocks) when each block meets a bounded number
// of constraints). automatic: sparse when M has at least 1000 rows and at most 25% nonzeros by the
// block count.
enum class SchurMode { automatic, dense, sparse };
const char* to_string(SdpStatus status);
// The starting point X = xi_k I, Z = eta_k I per block (SDPT3's formulas, sdp_solver.cpp) evaluated on the
// original data (unscaled) or on the data scaled to unit norms (scaled); automatic: unscaled, then, when
// that attempt stalls or hits the iteration limit, a second attempt from the scaled start, the better
// of the two returned (the unscaled start needs fewer iterations on most problems; some degenerate ones,
// SDPLIB's qap6-8, converge only from the scaled one). Without options.scale the two coincide.
enum class StartPoint { automatic, unscaled, scaled };
const char* to_string(StartPoint start);

struct SdpOptions {
  double tol = 1e-8;                // relative residuals and relative gap for "optimal"
  double near_tol = 1e-6;           // the same for "near_optimal" (a best iterate when the solver stops early)
  int stall_iterations = 20;        // stalled when the best merit improved by less than 10% in this many
  double infeasibility_tol = 1e-8;  // ray quality for the infeasibility statuses
  int max_iterations = 100;
  // Fraction of the step to the cone boundary: step_fraction + (1 - step_fraction) 0.9 s, s the shorter
  // predictor step (SDPT3's 0.9 + 0.09 s at the default).
  double step_fraction = 0.9;
  bool scale = true;                // normalise C and each (A_i, b_i) before solving
  // scaled by default (also `tls-fit sdp`'s start=scaled): on SDPLIB automatic saves a third of the
  // control problems' iterations but turns gpp124-1 from optimal to near_optimal and doubles the work
  // on qap6/7 and the hinf family (sdp7's notes).
  StartPoint start = StartPoint::scaled;
  SchurMode schur = SchurMode::automatic;
  // A dense Schur complement of at least this order is factored by OpenBLAS's dpotrf when the build found
  // it (dense_linalg.hpp), by Eigen's LLT below: about twice as fast from order ~2000 on this project's
  // machine, no gain and different rounding on smaller ones.
  int lapack_min_order = 2000;
  // Products X A^T(y) of the Newton direction formed from the constraint entries in blocks that hold few of
  // them (max-cut's diagonal, theta's edges: one dense product per direction instead of two); false forms
  // every one densely (the same direction up to rounding).
  bool sparse_products = true;
  // Threads assembling a dense Schur complement (the columns of a block with enough work are shared;
  // the result is bitwise the serial one). Callers pass core::thread_count() (the `threads` rule).
  int threads = 1;
  // Stop as soon as the optimum is known to lie above or below `target` (when only its sign relative
  // to a threshold matters): a dual iterate with relative residual <= tol and b^T y > target
  // (status above_target: the optimum is at least b^T y, up to the residual), or a primal iterate
  // with relative residual <= tol and <C, X> < target (below_target: the optimum is at most <C, X>).
  std::optional<double> target;
  // Refuse (SdpTooLarge) before allocating the Schur complement when the solver's estimated working
  // memory exceeds this many bytes; 0: no limit.
  std::uint64_t memory_limit_bytes = 0;
  // Throws UsageError naming the bad field: tol, infeasibility_tol in (0, 1), near_tol in [tol, 1),
  // max_iterations >= 1, stall_iterations >= 2, threads >= 1, lapack_min_order >= 1, step_fraction in (0, 1).
  void validate() const;
};

// The problem would need more memory than SdpOptions::memory_limit_bytes (a usage error, exit 2:
// the caller asked for more than the machine has). estimated_bytes is the solver's estimate.
class SdpTooLarge : public UsageError {
 public:
  SdpTooLarge(const std::string& what, std::uint64_t estimated_bytes) : UsageError(what), estimated_bytes_(estimated_bytes) {}
  std::uint64_t estimated_bytes() const { return estimated_bytes_; }

 private:
  std::uint64_t estimated_bytes_;
};

struct SdpResult {
  SdpStatus status = SdpStatus::iteration_limit;
  BlockValues X;      // primal solution
  Eigen::VectorXd y;  // dual multipliers
  BlockValues Z;      // dual slack C - sum y_i A_i
  double primal_objective = 0.0;  // <C, X>
  double dual_objective = 0.0;    // b^T y
  double primal_residual = 0.0;   // ||b - A(X)|| / (1 + ||b||)
  double dual_residual = 0.0;     // ||C - Z - A^T y||_F / (1 + ||C||_F)
  double relative_gap = 0.0;      // |pobj - dobj| / (1 + |pobj| + |dobj|)
  double achieved_accuracy = 0.0; // max(primal_residual, dual_residual, relative_gap) of the returned iterate
  int iterations = 0;             // iterations run
  int best_iteration = 0;         // the iteration whose iterate is returned
  double seconds = 0.0;
  std::string schur;  // how the Schur complement was factored: dense | sparse, block order | sparse, AMD order
  std::string start;  // the start of the returned iterate's attempt: unscaled | scaled
};

// Validates the options (UsageError) and the problem (DataError), then solves. Takes the problem by
// value: pass an rvalue (std::move) to let the solver reuse its storage instead of copying it.
SdpResult solve_sdp(SdpProblem problem, const SdpOptions& options = {});

}  // namespace core::certify
