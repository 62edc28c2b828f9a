// Primal-dual interior-point SDP solver: HKM direction with Mehrotra predictor-corrector
// (Helmberg-Rendl-Vanderbei-Wolkowicz 1996; Todd, "Semidefinite optimization", Acta Numerica
// 2001, sections 5-6). Newton system for A(X) = b, A^T(y) + Z = C, XZ = sigma mu I:
//   M dy = r_p - A(K),  K = sym(R_c Z^-1 - X R_d Z^-1),  dZ = R_d - A^T(dy),
//   dX = sym((R_c - X dZ) Z^-1),  M_ij = <A_i, X A_j Z^-1>,
// with R_c = sigma mu I - XZ (minus dX_a dZ_a in the corrector). Inputs: a validated problem.
#include "certify/sdp_solver.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "certify/dense_linalg.hpp"
#include "certify/lanczos.hpp"
#include "certify/schur_complement.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/timer.hpp"

namespace core::certify {

const char* to_string(SdpStatus status) {
  switch (status) {
    case SdpStatus::optimal: return "optimal";
    case SdpStatus::near_optimal: return "near_optimal";
    case SdpStatus::primal_infeasible: return "primal_infeasible";
    case SdpStatus::dual_infeasible: return "dual_infeasible";
    case SdpStatus::stalled: return "stalled";
    case SdpStatus::iteration_limit: return "iteration_limit";
    case SdpStatus::above_target: return "above_target";
    case SdpStatus::below_target: return "below_target";
  }
  return "unknown";
}

const char* to_string(StartPoint start) {
  switch (start) {
    case StartPoint::automatic: return "auto";
    case StartPoint::unscaled: return "unscaled";
    case StartPoint::scaled: return "scaled";
  }
  return "unknown";
}

void SdpOptions::validate() const {
  auto open_unit = [](double v) { return v > 0.0 && v < 1.0; };
  if (!open_unit(tol)) throw UsageError("sdp.tol must be in (0, 1), got " + std::to_string(tol));
  if (!open_unit(infeasibility_tol))
    throw UsageError("sdp.infeasibility_tol must be in (0, 1), got " + std::to_string(infeasibility_tol));
  if (!(near_tol >= tol && near_tol < 1.0))
    throw UsageError("sdp.near_tol must be in [tol, 1), got " + std::to_string(near_tol));
  if (stall_iterations < 2)
    throw UsageError("sdp.stall_iterations must be >= 2, got " + std::to_string(stall_iterations));
  if (threads < 1) throw UsageError("sdp.threads must be >= 1, got " + std::to_string(threads));
  if (max_iterations < 1)
    throw UsageError("sdp.max_iterations must be >= 1, got " + std::to_string(max_iterations));
  if (lapack_min_order < 1)
    throw UsageError("sdp.lapack_min_order must be >= 1, got " + std::to_string(lapack_min_order));
  if (!open_unit(step_fraction))
    throw UsageError("sdp.step_fraction must be in (0, 1), got " + std::to_string(step_fraction));
}

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// ---- block-value arithmetic ----------------------------------------------------------------

double dot(const BlockValues& a, const BlockValues& b) {
  double s = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) s += a[k].cwiseProduct(b[k]).sum();
  return s;
}
double norm(const BlockValues& a) { return std::sqrt(dot(a, a)); }
void axpy(double alpha, const BlockValues& x, BlockValues& y) {
  for (std::size_t k = 0; k < x.size(); ++k) y[k] += alpha * x[k];
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes >= 1000000000000) return fmt::format("{:.3g} TB", bytes / 1e12);
  return bytes >= 1000000000 ? fmt::format("{:.1f} GB", bytes / 1e9) : fmt::format("{:.0f} MB", bytes / 1e6);
}

// <X + a dX, Z + b dZ> without forming either sum.
double dot_after_step(const BlockValues& X, double a, const BlockValues& dX, const BlockValues& Z, double b,
                      const BlockValues& dZ) {
  return dot(X, Z) + a * dot(dX, Z) + b * dot(X, dZ) + a * b * dot(dX, dZ);
}

// The Cholesky factor of each dense block of a positive definite X (diagonal blocks: unused).
using BlockFactors = std::vector<Eigen::LLT<MatrixXd>>;

// A step X + alpha dX known to stay positive definite: its value and the Cholesky factors of its dense
// blocks (the next iteration's factors of X or Z).
struct SafeStep {
  double alpha = 0.0;
  BlockValues value;
  BlockFactors factors;
};

// alpha, shortened by kBacktrack until every block of X + alpha dX is positive definite (a dense block
// passes its Cholesky factorisation: rounding can put the eigenvalue-based step of a near-singular X just
// outside the cone); alpha 0 (and no value) when kMaxBacktracks do not suffice.
constexpr double kBacktrack = 0.8;
constexpr int kMaxBacktracks = 30;
SafeStep safe_step(const SdpProblem& p, const BlockValues& X, const BlockValues& dX, double alpha) {
  SafeStep out;
  out.value.resize(X.size());
  out.factors.resize(X.size());
  for (int t = 0; t < kMaxBacktracks; ++t, alpha *= kBacktrack) {
    bool inside = true;
    for (std::size_t k = 0; k < X.size() && inside; ++k) {
      out.value[k] = X[k] + alpha * dX[k];
      inside = p.blocks[k].diagonal ? (out.value[k].array() > 0.0).all()
                                    : out.factors[k].compute(out.value[k]).info() == Eigen::Success;
    }
    if (inside) {
      out.alpha = alpha;
      return out;
    }
  }
  return {};
}

// min(limit, largest alpha with X + alpha dX still PSD), for X positive definite with factors LX. A
// dense block first tries a Cholesky of X + limit dX: when it succeeds the whole segment is in the
// cone (convexity) and no eigenvalues are needed; otherwise the step is -1 / lambda_min of
// L^-1 dX L^-T (scaled_lambda_min, lanczos.hpp: Lanczos for large blocks). Callers take a fraction
// f < 1 of the result, so a success at limit that rounding allowed on the boundary still leaves
// X + f limit dX >= (1 - f) X; safe_step checks the step taken.
double max_step(const SdpProblem& p, const BlockValues& X, const BlockFactors& LX, const BlockValues& dX,
                double limit) {
  double alpha = limit;
  for (std::size_t k = 0; k < X.size(); ++k) {
    if (p.blocks[k].diagonal) {
      for (Eigen::Index i = 0; i < X[k].rows(); ++i)
        if (dX[k](i, 0) < 0.0) alpha = std::min(alpha, -X[k](i, 0) / dX[k](i, 0));
      continue;
    }
    if (Eigen::LLT<MatrixXd>(X[k] + alpha * dX[k]).info() == Eigen::Success) continue;
    const double lmin = scaled_lambda_min(LX[k], dX[k]);
    if (lmin < 0.0) alpha = std::min(alpha, -1.0 / lmin);
  }
  return alpha;
}

// ---- the solver ------------------------------------------------------------------------------

class Solver {
 public:
  // Takes the problem apart: its constraints are kept only grouped per block (terms_), C as dense
  // blocks (Cv_), both scaled.
  Solver(SdpProblem problem, const SdpOptions& opts) : opts_(opts) {
    const int m = problem.num_constraints();
    b_norm_ = problem.b.norm();
    c_norm_ = problem.C.frobenius_norm();
    c_scale_ = 1.0;
    a_scale_ = VectorXd::Ones(m);
    if (opts_.scale) {
      c_scale_ = c_norm_ > 0.0 ? c_norm_ : 1.0;
      for (auto& e : problem.C.entries) e.value /= c_scale_;
      for (int i = 0; i < m; ++i) {
        const double an = problem.A[i].frobenius_norm();
        if (an > 0.0) a_scale_(i) = an;
        for (auto& e : problem.A[i].entries) e.value /= a_scale_(i);
        problem.b(i) /= a_scale_(i);
      }
    }
    b_ = problem.b;
    for (int i = 0; i < m && empty_infeasible_ < 0; ++i)
      if (problem.A[i].frobenius_norm() == 0.0 && problem.b(i) != 0.0) empty_infeasible_ = i;
    shape_.blocks = problem.blocks;
    n_ = shape_.total_size();
    check_memory(block_values_bytes());  // before the first block value is allocated
    Cv_ = shape_.zeros();
    LX_.resize(shape_.blocks.size());
    LZ_.resize(shape_.blocks.size());
    shape_.accumulate(problem.C, 1.0, Cv_);
    c_scaled_norm_ = norm(Cv_);
    group_by_block(std::move(problem.A));
    for (std::size_t k = 0; k < terms_.size(); ++k) {
      const double nk = shape_.blocks[k].size;
      sparse_products_.push_back(opts_.sparse_products &&
                                 kSparseProductRatio * static_cast<double>(terms_[k].entries.size()) <= nk * nk);
    }
    const bool sparse = use_sparse_schur();
    check_memory(schur_bytes(sparse) + block_values_bytes());
    if (sparse) schur_.emplace(m, terms_);
    else schur_.emplace(opts_.lapack_min_order);
  }

  SdpResult run() {
    if (empty_infeasible_ >= 0) return empty_constraint_ray();
    // The start from the original data first (unscaled; the control problems of SDPLIB need ~30% fewer
    // iterations from it), and when that ends without meeting near_tol a second attempt from the scaled
    // data's start (from which qap6-8 converge); the better of the two is returned.
    const bool two_starts = opts_.scale && opts_.start == StartPoint::automatic;
    const StartPoint first = two_starts ? StartPoint::unscaled : opts_.start;
    Attempt result = attempt(first);
    int iterations = result.iterations;
    if (two_starts && retry_from_scaled_start(result)) {
      core::log::debug("sdp: the unscaled start ended {} at {:.2e}: restarting from the scaled start",
                       to_string(result.status), result.measures.merit());
      Attempt second = attempt(StartPoint::scaled);
      second.best_iteration += iterations;  // counted from the first attempt's start
      iterations += second.iterations;
      if (prefer_second(result, second)) result = std::move(second);
    }
    X_ = std::move(result.X);
    Z_ = std::move(result.Z);
    y_ = std::move(result.y);
    SdpResult res;
    res.status = result.status;
    res.iterations = iterations;
    res.best_iteration = result.best_iteration;
    const Measures& now = result.measures;
    res.primal_objective = now.pobj;
    res.dual_objective = now.dobj;
    res.primal_residual = now.rel_p;
    res.dual_residual = now.rel_d;
    res.relative_gap = now.rel_gap;
    res.achieved_accuracy = now.merit();
    res.schur = schur_->description();
    res.start = to_string(result.start);
    // Back to the original data: y_i = c y'_i / a_i, Z = c Z' (X unchanged).
    res.X = std::move(X_);
    res.y = (c_scale_ * y_).cwiseQuotient(a_scale_);
    res.Z = std::move(Z_);
    for (auto& z : res.Z) z *= c_scale_;
    return res;
  }

 private:
  // Objectives and relative residuals of an iterate, in the units of the original data.
  struct Measures {
    double pobj = 0.0, dobj = 0.0, rel_p = 0.0, rel_d = 0.0, rel_gap = 0.0;
    double rel_complementarity = 0.0;  // <X, Z> / (1 + |pobj| + |dobj|): the part of the gap centring can reduce
    double merit() const { return std::max({rel_p, rel_d, rel_gap}); }
  };
  struct Best {
    BlockValues X, Z;
    VectorXd y;
    Measures measures;
    int iteration = 0;
  };
  // The outcome of one run of the iterations from one starting point: its returned iterate (the last, or
  // the best one when it stopped early) and status.
  struct Attempt {
    StartPoint start = StartPoint::scaled;
    SdpStatus status = SdpStatus::iteration_limit;
    BlockValues X, Z;
    VectorXd y;
    Measures measures;
    int iterations = 0;
    int best_iteration = 0;
  };

  // A second start is worth its cost only when the first one did not get within near_tol: a certificate
  // (optimal, an infeasibility, a side of the target) or a near_optimal answer is kept.
  static bool retry_from_scaled_start(const Attempt& first) {
    return first.status == SdpStatus::stalled || first.status == SdpStatus::iteration_limit;
  }

  // The second attempt wins when it ended with a certificate or a returned iterate closer to optimal
  // (smaller merit); ties keep the first.
  static bool prefer_second(const Attempt& first, const Attempt& second) {
    const bool certificate = second.status != SdpStatus::stalled && second.status != SdpStatus::iteration_limit &&
                             second.status != SdpStatus::near_optimal;
    return certificate || second.measures.merit() < first.measures.merit();
  }

  Attempt attempt(StartPoint start) {
    initial_point(start);
    best_.reset();
    SdpStatus status = SdpStatus::iteration_limit;
    Measures now;
    std::vector<double> best_merit;  // the best merit up to each iteration
    int it = 0;
    for (;; ++it) {
      const VectorXd rp = b_ - apply_A(X_);
      BlockValues Rd = Cv_;
      axpy(-1.0, Z_, Rd);
      axpy(-1.0, apply_At(y_), Rd);
      now = measure(rp, Rd);
      core::log::debug(
          "sdp it {:3d} pobj {:+.9e} dobj {:+.9e} rel_p {:.2e} rel_d {:.2e} gap {:.2e} mu {:.2e} "
          "ap {:.3f} ad {:.3f} sigma {:.3f}",
          it, now.pobj, now.dobj, now.rel_p, now.rel_d, now.rel_gap, c_scale_ * dot(X_, Z_) / n_, last_ap_,
          last_ad_, last_sigma_);
      if (!best_ || now.merit() < best_->measures.merit()) best_ = Best{X_, Z_, y_, now, it};
      best_merit.push_back(best_->measures.merit());
      if (now.merit() < opts_.tol) {
        status = SdpStatus::optimal;
        break;
      }
      if (opts_.target && now.rel_d < opts_.tol && now.dobj > *opts_.target) {
        status = SdpStatus::above_target;
        break;
      }
      if (opts_.target && now.rel_p < opts_.tol && now.pobj < *opts_.target) {
        status = SdpStatus::below_target;
        break;
      }
      if (const auto ray = infeasibility(rp, Rd)) {
        status = *ray;
        break;
      }
      if (it >= opts_.max_iterations) break;
      if (stagnating(best_merit, now)) {
        status = SdpStatus::stalled;
        break;
      }
      if (!step(rp, Rd)) {
        status = SdpStatus::stalled;
        break;
      }
    }
    Attempt out;
    out.start = start;
    out.iterations = it;
    out.best_iteration = it;
    if (status == SdpStatus::stalled || status == SdpStatus::iteration_limit) {
      // Stopped early: return the best iterate, optimal or near_optimal when it meets a tolerance.
      X_ = std::move(best_->X);
      Z_ = std::move(best_->Z);
      y_ = std::move(best_->y);
      now = best_->measures;
      out.best_iteration = best_->iteration;
      if (now.merit() < opts_.tol) status = SdpStatus::optimal;
      else if (now.merit() < opts_.near_tol) status = SdpStatus::near_optimal;
      if (out.best_iteration != it)
        core::log::debug("sdp: returning the best iterate, of iteration {} (merit {:.2e})", out.best_iteration,
                         now.merit());
    }
    best_.reset();
    out.status = status;
    out.measures = now;
    out.X = std::move(X_);
    out.Z = std::move(Z_);
    out.y = std::move(y_);
    return out;
  }

  Measures measure(const VectorXd& rp, const BlockValues& Rd) const {
    Measures m;
    const double pobj = dot(Cv_, X_), dobj = b_.dot(y_);
    m.pobj = c_scale_ * pobj;
    m.dobj = c_scale_ * dobj;
    m.rel_p = rp.cwiseProduct(a_scale_).norm() / (1.0 + b_norm_);
    m.rel_d = c_scale_ * norm(Rd) / (1.0 + c_norm_);
    m.rel_gap = c_scale_ * std::abs(pobj - dobj) / (1.0 + c_scale_ * (std::abs(pobj) + std::abs(dobj)));
    m.rel_complementarity = c_scale_ * dot(X_, Z_) / (1.0 + c_scale_ * (std::abs(pobj) + std::abs(dobj)));
    return m;
  }

  // primal_infeasible when the dual iterate is a ray (A^T y + Z = C - R_d small relative to b^T y > 0),
  // dual_infeasible when the primal one is (A(X) = b - r_p small relative to <C, X> < 0).
  std::optional<SdpStatus> infeasibility(const VectorXd& rp, const BlockValues& Rd) const {
    const double pobj = dot(Cv_, X_), dobj = b_.dot(y_);
    if (dobj > 0.0) {
      BlockValues ray = Cv_;
      axpy(-1.0, Rd, ray);
      if (norm(ray) < opts_.infeasibility_tol * dobj) return SdpStatus::primal_infeasible;
    }
    if (pobj < 0.0 && (b_ - rp).norm() < opts_.infeasibility_tol * -pobj) return SdpStatus::dual_infeasible;
    return std::nullopt;
  }

  // No point in going on: the best merit improved by less than 10% over the last stall_iterations
  // (kNearStallIterations once it is within near_tol), or
  // the iterates left a best one within near_tol far behind (merit 100 times worse: on degenerate
  // problems rounding then only makes them worse, as CSDP also observes when it stops with its previous
  // iterate).
  bool stagnating(const std::vector<double>& best_merit, const Measures& now) const {
    const double best = best_merit.back();
    if (best < opts_.near_tol && now.merit() > 100.0 * best) {
      core::log::debug("sdp: merit {:.2e} far above the best {:.2e}: stopping", now.merit(), best);
      return true;
    }
    // The short window also when the complementarity <X, Z> has fallen far below the gap: pobj - dobj =
    // <X, Z> - y^T r_p, so the gap is then the primal residual times a diverging y (no strictly feasible
    // primal point, SDPLIB's qap family) and further steps, which shrink <X, Z>, cannot close it.
    const bool decoupled = now.rel_complementarity < kDecoupledGap * now.rel_gap;
    const auto window = static_cast<std::size_t>(best < opts_.near_tol || decoupled
                                                     ? std::min(opts_.stall_iterations, kNearStallIterations)
                                                     : opts_.stall_iterations);
    if (best_merit.size() > window && best > 0.9 * best_merit[best_merit.size() - 1 - window]) {
      core::log::debug("sdp: best merit {:.2e} improved by less than 10% in {} iterations", best, window);
      return true;
    }
    return false;
  }

  // <0, X> = b_i != 0 has no solution: y = sign(b_i) e_i is a dual ray (A^T y = 0, b^T y > 0), found before
  // any iteration (the Schur complement of such a problem is singular in that row).
  SdpResult empty_constraint_ray() const {
    const int i = empty_infeasible_;
    core::log::info("sdp: constraint {} has an empty matrix but b = {:g}: primal infeasible", i + 1, b_(i));
    SdpResult res;
    res.status = SdpStatus::primal_infeasible;
    res.X = shape_.zeros();
    res.Z = shape_.zeros();
    res.y = VectorXd::Zero(b_.size());
    res.y(i) = b_(i) > 0.0 ? 1.0 : -1.0;
    res.dual_objective = std::abs(b_(i)) * a_scale_(i);
    res.primal_residual = std::abs(b_(i)) * a_scale_(i) / (1.0 + b_norm_);
    res.schur = "none";
    return res;
  }

  // terms_[k]: the constraints touching block k (increasing) and their entries there.
  void group_by_block(std::vector<SdpMatrix> A) {
    terms_.assign(shape_.blocks.size(), {});
    for (std::size_t i = 0; i < A.size(); ++i) {
      auto& entries = A[i].entries;  // one record per (block, constraint): entries grouped by block
      std::stable_sort(entries.begin(), entries.end(), [](const SdpEntry& a, const SdpEntry& b) { return a.block < b.block; });
      for (const auto& e : entries) {
        BlockTerms& t = terms_[static_cast<std::size_t>(e.block)];
        if (t.constraint.empty() || t.constraint.back() != static_cast<int>(i)) {
          t.constraint.push_back(static_cast<int>(i));
          t.start.push_back(t.start.back());
        }
        t.entries.push_back({e.row, e.col, e.value});
        if (e.row != e.col) t.entries.push_back({e.col, e.row, e.value});
        t.start.back() = static_cast<int>(t.entries.size());
        if (t.upper_start.size() < t.start.size()) t.upper_start.push_back(t.upper_start.back());
        t.upper.push_back({e.row, e.col, e.row == e.col ? 0.5 * e.value : e.value});
        t.upper_start.back() = static_cast<int>(t.upper.size());
      }
      SdpMatrix().entries.swap(entries);  // release as we go
    }
    for (auto& t : terms_) {
      t.constraint.shrink_to_fit();
      t.start.shrink_to_fit();
      t.entries.shrink_to_fit();
      t.upper_start.shrink_to_fit();
      t.upper.shrink_to_fit();
    }
  }

  // A(X)_i = <A_i, X>.
  VectorXd apply_A(const BlockValues& X) const {
    VectorXd r = VectorXd::Zero(b_.size());
    for (std::size_t k = 0; k < terms_.size(); ++k) {
      const BlockTerms& t = terms_[k];
      const bool diagonal = shape_.blocks[k].diagonal;
      for (int a = 0; a < t.size(); ++a) {
        double s = 0.0;
        for (const BlockEntry* e = t.begin(a); e != t.end(a); ++e) s += e->v * X[k](e->p, diagonal ? 0 : e->q);
        r(t.constraint[static_cast<std::size_t>(a)]) += s;
      }
    }
    return r;
  }

  // A^T(y) = sum_i y_i A_i.
  BlockValues apply_At(const VectorXd& y) const {
    BlockValues out = shape_.zeros();
    for (std::size_t k = 0; k < terms_.size(); ++k) {
      const BlockTerms& t = terms_[k];
      const bool diagonal = shape_.blocks[k].diagonal;
      for (int a = 0; a < t.size(); ++a) {
        const double c = y(t.constraint[static_cast<std::size_t>(a)]);
        if (c == 0.0) continue;
        for (const BlockEntry* e = t.begin(a); e != t.end(a); ++e) out[k](e->p, diagonal ? 0 : e->q) += c * e->v;
      }
    }
    return out;
  }

  // Sparse Schur complement when asked, or (auto) when M has at most 25% nonzeros by the block
  // count and at least 1000 rows.
  bool use_sparse_schur() const {
    if (opts_.schur != SchurMode::automatic) return opts_.schur == SchurMode::sparse;
    const double m = static_cast<double>(b_.size());
    double pairs = 0.0;
    for (const auto& t : terms_) pairs += 0.5 * static_cast<double>(t.size()) * (t.size() + 1.0);
    return m >= 1000 && pairs <= 0.25 * 0.5 * m * (m + 1.0);
  }

  // Estimated working memory of the iterations in bytes: the Schur complement (sparse: M, its
  // factor without fill and the entry positions, 28 bytes per block contribution; dense: M and its
  // factor) plus kLiveBlockValues block values (iterates, the best one, directions, temporaries).
  double schur_bytes(bool sparse) const {
    const auto m = static_cast<double>(b_.size());
    double bytes = sparse ? 0.0 : 16.0 * m * m;
    if (sparse)
      for (const auto& t : terms_) bytes += 28.0 * 0.5 * t.size() * (t.size() + 1.0);
    return bytes;
  }
  double block_values_bytes() const {
    constexpr double kLiveBlockValues = 18.0;  // including the best iterate's X and Z
    double values = 0.0;
    for (const auto& blk : shape_.blocks) values += 8.0 * (blk.diagonal ? blk.size : double(blk.size) * blk.size) + 48.0;
    return kLiveBlockValues * values;
  }
  // SdpTooLarge when `need` bytes exceed the memory limit.
  void check_memory(double need) const {
    if (opts_.memory_limit_bytes == 0 || need <= static_cast<double>(opts_.memory_limit_bytes)) return;
    const auto bytes = static_cast<std::uint64_t>(std::min(need, 1.8e19));
    throw SdpTooLarge(fmt::format("SDP with {} constraints over {} blocks needs about {} of working memory, more than "
                                  "the limit of {}",
                                  b_.size(), shape_.blocks.size(), human_bytes(bytes),
                                  human_bytes(opts_.memory_limit_bytes)),
                      bytes);
  }

  // Scaled identity start, block by block (SDPT3's infeaspt, Toh-Todd-Tutuncu 1999): block k of
  // order n_k starts at X = xi_k I, Z = eta_k I with
  //   xi_k  = max(10, sqrt(n_k), s_k max_i (1 + |b_i|) / (1 + ||A_i^k||)),  s_k = n_k (dense), sqrt(n_k) (diagonal)
  //   eta_k = max(10, sqrt(n_k), max_i (1 + ||A_i^k||), 1 + ||C^k||),
  // over the constraints i touching block k, ||.^k|| the Frobenius norm of a matrix's part in block k.
  // Scaling by the block's own order, not the whole problem's, keeps a problem of many small blocks
  // (the chordal GM SDP) from starting ~n times farther from its solution than it needs.
  // StartPoint::scaled evaluates the formulas on the scaled data (unit-norm C and A_i), unscaled on the
  // original data (then mapped to the scaled units: X as it is, Z / c_scale).
  void initial_point(StartPoint start) {
    const bool original = start == StartPoint::unscaled;
    factors_current_ = false;
    X_ = shape_.zeros();
    Z_ = shape_.zeros();
    for (std::size_t k = 0; k < terms_.size(); ++k) {
      const BlockTerms& t = terms_[k];
      const double nk = shape_.blocks[k].size, root = std::sqrt(nk);
      double ratio = 0.0, a_max = 0.0;
      for (int a = 0; a < t.size(); ++a) {
        const auto i = t.constraint[static_cast<std::size_t>(a)];
        const double unit = original ? a_scale_(i) : 1.0;  // A_i and b_i are stored divided by a_scale_(i)
        double sq = 0.0;
        for (const BlockEntry* e = t.begin(a); e != t.end(a); ++e) sq += e->v * e->v;
        const double a_norm = 1.0 + unit * std::sqrt(sq);
        ratio = std::max(ratio, (1.0 + unit * std::abs(b_(i))) / a_norm);
        a_max = std::max(a_max, a_norm);
      }
      const double c_unit = original ? c_scale_ : 1.0;
      const double xi = std::max({10.0, root, (shape_.blocks[k].diagonal ? root : nk) * ratio});
      const double eta = std::max({10.0, root, a_max, 1.0 + c_unit * Cv_[k].norm()}) / c_unit;
      if (shape_.blocks[k].diagonal) {
        X_[k].setConstant(xi);
        Z_[k].setConstant(eta);
      } else {
        X_[k].diagonal().setConstant(xi);
        Z_[k].diagonal().setConstant(eta);
      }
    }
    y_ = VectorXd::Zero(b_.size());
  }

  // M_ij = <A_i, X A_j Z^-1> for i >= j (in the order of the blocks' constraint lists): add(i, j,
  // value) per block contribution. The blocks are visited in order; within a block, column j of the
  // block's constraints (its entries i >= j) is one task, and with threads > 1 the columns of a block
  // with enough work are shared among that many threads (for_each_column), each entry computed by the
  // same code as serially: `add` must then accept concurrent calls for different j.
  template <class Add>
  void schur_entries(const BlockValues& Zinv, Add&& add, int threads) const {
    for (std::size_t k = 0; k < terms_.size(); ++k) {
      const BlockTerms& t = terms_[k];
      const auto& active = t.constraint;
      const int na = t.size();
      const double nb = static_cast<double>(shape_.blocks[k].size);
      const double work = static_cast<double>(na) * (static_cast<double>(t.entries.size()) + nb * nb);
      const int team = work >= kParallelWork ? std::min(threads, na) : 1;
      if (shape_.blocks[k].diagonal) {
        const VectorXd d = X_[k].col(0).cwiseProduct(Zinv[k].col(0));
        for_each_column(na, team, [&] { return VectorXd::Zero(shape_.blocks[k].size).eval(); },
                        [&](int aj, VectorXd& w) {
                          for (const BlockEntry* e = t.begin(aj); e != t.end(aj); ++e) w(e->p) += e->v * d(e->p);
                          for (int ai = aj; ai < na; ++ai) {
                            double s = 0.0;
                            for (const BlockEntry* e = t.begin(ai); e != t.end(ai); ++e) s += e->v * w(e->p);
                            add(active[ai], active[aj], s);
                          }
                          for (const BlockEntry* e = t.begin(aj); e != t.end(aj); ++e) w(e->p) = 0.0;
                        });
        continue;
      }
      const MatrixXd& X = X_[k];
      const MatrixXd& Zi = Zinv[k];
      // Columns are claimed in runs of `width` (kGatherWidth in blocks of order <= kGatherMaxOrder, else 1). The
      // dense-route columns of a run share one pass over the constraints below them: sym(G_j)(p, q) of the
      // run's columns lie side by side (S[(p + q nb) width + b]), so each upper entry of A_i is read once per
      // run and its values for all the run's columns in one vector (control6: this gather was half the time).
      const int n = static_cast<int>(X.rows());
      const int width = n <= kGatherMaxOrder ? kGatherWidth : 1;
      struct Scratch {
        MatrixXd W, G;
        std::vector<double> S;
      };
      const auto make_scratch = [&] {
        return Scratch{MatrixXd(n, n), MatrixXd(n, n), std::vector<double>(static_cast<std::size_t>(n) * n * width, 0.0)};
      };
      for_each_column((na + width - 1) / width, team, make_scratch, [&](int run, Scratch& scratch) {
        int dense[kGatherWidth];
        int nd = 0;
        for (int aj = run * width; aj < std::min(na, (run + 1) * width); ++aj) {
          const double ej = static_cast<double>(t.end(aj) - t.begin(aj));
          const double tail = static_cast<double>(t.entries.size() - t.start[aj]);  // entries of constraints aj..
          const double upper_tail = static_cast<double>(t.upper.size() - t.upper_start[aj]);
          const double pairwise_cost = ej * tail;
          const double dense_cost = nb * nb * std::min(ej, nb) + upper_tail;
          if (pairwise_cost <= dense_cost) {
            // (X A_j Z^-1)[p,q] = sum over entries (r,s,c) of A_j of c X[p,r] Zi[s,q].
            for (int ai = aj; ai < na; ++ai) {
              double s = 0.0;
              for (const BlockEntry* ei = t.begin(ai); ei != t.end(ai); ++ei)
                for (const BlockEntry* ej_ = t.begin(aj); ej_ != t.end(aj); ++ej_) s += ei->v * ej_->v * X(ei->p, ej_->p) * Zi(ej_->q, ei->q);
              add(active[ai], active[aj], s);
            }
            continue;
          }
          MatrixXd& W = scratch.W;
          MatrixXd& G = scratch.G;
          W.setZero();  // X A_j
          for (const BlockEntry* e = t.begin(aj); e != t.end(aj); ++e) W.col(e->q) += e->v * X.col(e->p);
          G.noalias() = W * Zi;
          // <A_i, G> = <A_i, sym(G)>: summed over A_i's upper triangle against G + G^T (BlockTerms::upper), half
          // the entries, whose gathers are this loop's cost.
          for (int q = 0; q < n; ++q)
            for (int p = 0; p <= q; ++p) scratch.S[static_cast<std::size_t>(p + q * n) * width + nd] = G(p, q) + G(q, p);
          dense[nd++] = aj;
        }
        if (nd == 0) return;
        double sums[kGatherWidth];
        for (int ai = dense[0]; ai < na; ++ai) {
          gather_upper(t, ai, n, scratch.S.data(), width, sums);
          for (int b = 0; b < nd && dense[b] <= ai; ++b) add(active[ai], active[dense[b]], sums[b]);
        }
      });
    }
  }

  // task(j, scratch) for j = 0..n-1 on `team` threads (the caller's included), each with its own scratch
  // from make_scratch(); threads claim the next column as they finish one (columns differ in cost).
  template <class MakeScratch, class Task>
  static void for_each_column(int n, int team, MakeScratch&& make_scratch, Task&& task) {
    std::atomic<int> next{0};
    auto worker = [&] {
      auto scratch = make_scratch();
      for (int j = next++; j < n; j = next++) task(j, scratch);
    };
    std::vector<std::thread> helpers;
    for (int h = 1; h < team; ++h) helpers.emplace_back(worker);
    worker();
    for (auto& h : helpers) h.join();
  }

  bool factor_schur(const BlockValues& Zinv) {
    // The sparse path records where each entry lands on its first call, in emission order: serial.
    if (schur_->sparse()) return schur_->factor_sparse([&](auto&& add) { schur_entries(Zinv, add, 1); });
    MatrixXd& M = schur_->dense_matrix(b_.size());  // its lower triangle
    schur_entries(Zinv, [&M](int i, int j, double v) { M(i, j) += v; }, opts_.threads);
    return schur_->factor_dense();
  }

  struct Direction {
    BlockValues dX, dZ;
    VectorXd dy;
  };

  // ---- the Newton direction ----------------------------------------------------------------
  // dX = sym((R_c - X dZ) Z^-1) with R_c = sigma mu I - XZ - corr, dZ = R_d - A^T(dy), is computed by one of
  // two routes per block, chosen once from the block's constraints (sparse_products_):
  // - few constraint entries in a dense block (max-cut: a diagonal, theta: the edges): dX splits into a part
  //   fixed once sigma mu and the corrector term are chosen and a part linear in dy,
  //     dX = K + S(dy),  K = sym((sigma mu I - corr) Z^-1 - X R_d Z^-1) - X,  S(y) = sym(X A^T(y) Z^-1),
  //   with X R_d Z^-1 and R_d Z^-1 formed once per iteration for both directions and X A^T(y) from the
  //   constraint entries: one dense product per direction and refinement pass where the other route needs
  //   two, and K in three per iteration (R_d Z^-1, X R_d Z^-1, dX_a dZ_a Z^-1) where the other route needs seven;
  // - otherwise (and in diagonal blocks) from the dense dZ, as products X dZ Z^-1: the first route's
  //   cancellation between K and S(dy) there changed SDPLIB's degenerate hinf problems by more than rounding
  //   (hinf1 and hinf7 stalled at 4e-6 instead of ending near_optimal).

  // Per iteration: Z^-1 and, in the blocks of the first route, R_d Z^-1 and X R_d Z^-1 (left empty, meaning zero,
  // once R_d is at rounding level: dual_feasible_to_rounding).
  struct StepProducts {
    BlockValues Zinv, RdZinv, XRdZinv;
  };

  // A^T(y) restricted to block k, dense (a diagonal block as a column).
  MatrixXd At_block(const VectorXd& y, std::size_t k) const {
    const BlockTerms& t = terms_[k];
    const bool diagonal = shape_.blocks[k].diagonal;
    MatrixXd out = MatrixXd::Zero(shape_.blocks[k].size, diagonal ? 1 : shape_.blocks[k].size);
    for (int a = 0; a < t.size(); ++a) {
      const double c = y(t.constraint[static_cast<std::size_t>(a)]);
      if (c == 0.0) continue;
      for (const BlockEntry* e = t.begin(a); e != t.end(a); ++e) out(e->p, diagonal ? 0 : e->q) += c * e->v;
    }
    return out;
  }

  // B A^T(y) in a block of the first route: column q of the product gains c v B(:, p) for each entry (p, q, v)
  // of a constraint with coefficient c.
  MatrixXd times_At(const MatrixXd& B, std::size_t k, const VectorXd& y) const {
    const BlockTerms& t = terms_[k];
    MatrixXd out = MatrixXd::Zero(B.rows(), B.cols());
    for (int a = 0; a < t.size(); ++a) {
      const double c = y(t.constraint[static_cast<std::size_t>(a)]);
      if (c == 0.0) continue;
      for (const BlockEntry* e = t.begin(a); e != t.end(a); ++e) out.col(e->q) += (c * e->v) * B.col(e->p);
    }
    return out;
  }

  // K in every block (the first route's form where it applies): only A(K) enters the Schur system; the first
  // route's blocks also keep K as their part of dX.
  BlockValues fixed_part(const BlockValues& Rd, const StepProducts& P, double sigma_mu, const Direction* pred) const {
    BlockValues K(X_.size());
    for (std::size_t k = 0; k < X_.size(); ++k) {
      const MatrixXd& Zi = P.Zinv[k];
      if (shape_.blocks[k].diagonal) {
        const auto x = X_[k].col(0).array();
        const auto zi = Zi.col(0).array();
        Eigen::ArrayXd r = sigma_mu * zi - x - x * Rd[k].col(0).array() * zi;
        if (pred) r -= pred->dX[k].col(0).array() * pred->dZ[k].col(0).array() * zi;
        K[k] = r.matrix();
        continue;
      }
      if (!sparse_products_[k]) {
        MatrixXd R = sigma_mu * MatrixXd::Identity(X_[k].rows(), X_[k].cols()) - X_[k] * Rd[k];
        if (pred) R -= pred->dX[k] * pred->dZ[k];
        const MatrixXd D = R * Zi - X_[k];
        K[k] = 0.5 * (D + D.transpose());
        continue;
      }
      const bool with_rd = P.RdZinv[k].size() > 0;
      MatrixXd D = sigma_mu * Zi;
      if (with_rd) D -= P.XRdZinv[k];
      // corr Z^-1 = dX_a dZ_a Z^-1 with dZ_a Z^-1 = R_d Z^-1 - (Z^-1 A^T(dy_a))^T.
      if (pred && with_rd) D.noalias() -= pred->dX[k] * (P.RdZinv[k] - times_At(Zi, k, pred->dy).transpose());
      else if (pred) D.noalias() += pred->dX[k] * times_At(Zi, k, pred->dy).transpose();
      K[k] = 0.5 * (D + D.transpose()) - X_[k];
    }
    return K;
  }

  // dX from K, dy and dZ = R_d - A^T(dy): K + S(dy) in the first route's blocks, sym((R_c - X dZ) Z^-1) in the others.
  void primal_direction(const StepProducts& P, double sigma_mu, const Direction* pred, Direction& d) const {
    for (std::size_t k = 0; k < X_.size(); ++k) {
      const MatrixXd& Zi = P.Zinv[k];
      if (shape_.blocks[k].diagonal) {
        const auto x = X_[k].col(0).array();
        const auto zi = Zi.col(0).array();
        d.dX[k] = -(x * d.dZ[k].col(0).array() * zi).matrix();
        Eigen::ArrayXd r = sigma_mu * zi - x;
        if (pred) r -= pred->dX[k].col(0).array() * pred->dZ[k].col(0).array() * zi;
        d.dX[k] += r.matrix();
        continue;
      }
      if (sparse_products_[k]) {
        d.dX[k] += dy_part(Zi, k, d.dy);
        continue;
      }
      const MatrixXd H = X_[k] * d.dZ[k] * Zi;  // -sym(X dZ Z^-1) + sym(R_c Z^-1)
      d.dX[k] = -0.5 * (H + H.transpose());
      MatrixXd D = sigma_mu * Zi - X_[k];
      if (pred) D -= pred->dX[k] * pred->dZ[k] * Zi;
      d.dX[k] += 0.5 * (D + D.transpose());
    }
  }

  // The change of dX when dy changes by ddy (dZ by dZc = -A^T(ddy)): S(ddy), or -sym(X dZc Z^-1).
  void add_refinement(const StepProducts& P, const VectorXd& ddy, const BlockValues& dZc, BlockValues& dX) const {
    for (std::size_t k = 0; k < X_.size(); ++k) {
      const MatrixXd& Zi = P.Zinv[k];
      if (shape_.blocks[k].diagonal) {
        dX[k] -= (X_[k].array() * dZc[k].array() * Zi.array()).matrix();
      } else if (sparse_products_[k]) {
        dX[k] += dy_part(Zi, k, ddy);
      } else {
        const MatrixXd D = X_[k] * dZc[k] * Zi;
        dX[k] -= 0.5 * (D + D.transpose());
      }
    }
  }

  // S(y) = sym(X A^T(y) Z^-1) in a block of the first route.
  MatrixXd dy_part(const MatrixXd& Zi, std::size_t k, const VectorXd& y) const {
    const MatrixXd D = times_At(X_[k], k, y) * Zi;
    return 0.5 * (D + D.transpose());
  }

  bool solve_direction(const VectorXd& rp, const BlockValues& Rd, const StepProducts& P, double sigma_mu,
                       const Direction* pred, Direction& d) const {
    d.dX = fixed_part(Rd, P, sigma_mu, pred);
    d.dy = schur_->solve(rp - apply_A(d.dX));
    if (!d.dy.allFinite()) return false;
    d.dZ = Rd;
    axpy(-1.0, apply_At(d.dy), d.dZ);
    primal_direction(P, sigma_mu, pred, d);
    // Iterative refinement against the operator actually applied: near the optimum Z^-1 is large
    // and the rounding in X dZ Z^-1 breaks A(dX) = r_p, which would undo primal feasibility
    // step by step. A correction ddy moves A(dX) by M ddy, so solving M ddy = r_p - A(dX) removes
    // that error (and the shift of SchurFactor); the correction is added to dX, not recomputed
    // from scratch, so its own rounding is small.
    // Skipped when the error is small next to r_p (the step still reduces infeasibility) or at
    // rounding level; at most kRefinementPasses passes, and none after one that did not halve the
    // error: near a degenerate optimum the (shifted) factor no longer resolves it, and a further
    // correction from it only adds rounding to dX (on SDPLIB's gpp problems such passes cost the last
    // digits: gpp100 and gpp124-2 ended near_optimal, optimal without them).
    const double negligible = std::max(1e-3 * rp.norm(), 1e-14 * (1.0 + b_.norm()));
    double last = std::numeric_limits<double>::infinity();
    for (int r = 0; r < kRefinementPasses; ++r) {
      const VectorXd res = rp - apply_A(d.dX);
      if (res.norm() <= negligible || res.norm() > 0.5 * last) break;
      last = res.norm();
      const VectorXd ddy = schur_->solve(res);
      if (!ddy.allFinite()) break;
      const BlockValues dZc = apply_At(-ddy);
      d.dy += ddy;
      axpy(1.0, dZc, d.dZ);
      add_refinement(P, ddy, dZc, d.dX);
    }
    return true;
  }

  // Z^-1 of a dense block of at least this order through LAPACK's dpotri (dense_linalg.hpp): a third of the flops
  // of Eigen's solve against the identity, which was 16% of maxG51's time. The smaller blocks keep Eigen's
  // rounding: SDPLIB's degenerate families (gpp, qap, hinf, control) have blocks of order <= 500 and their
  // trajectories depend on the last digits.
  static constexpr Eigen::Index kLapackMinBlockOrder = 512;
  // A block's Schur work (constraints x (entries + order^2)) worth sharing among threads.
  static constexpr double kParallelWork = 2e5;
  static constexpr int kNearStallIterations = 5;
  static constexpr double kDecoupledGap = 1e-2;
  static constexpr int kRefinementPasses = 2;
  // Dense-route Schur columns are gathered kGatherWidth at a time (schur_entries) in blocks small enough that
  // their interleaved sym(G_j) stay in cache (1 MB).
  static constexpr int kGatherMaxOrder = 128;
  // Entries x order (the sparse product's work) against order^3 (the dense one's) at a quarter of the rate.
  static constexpr double kSparseProductRatio = 4.0;

  // Whether R_d = C - Z - A^T(y) is at rounding level (||R_d|| <= kRoundingResidual (1 + ||C||), scaled units):
  // after a full dual step it is what is left of forming Z + dZ. The first route's blocks then drop its products
  // R_d Z^-1 and X R_d Z^-1 (two dense products of an iteration's ~ten on max-cut, qp and theta: rel_d stays at
  // ~1e-16 from the second or third iteration on); dZ keeps R_d, so the dual residual shrinks as before.
  bool dual_feasible_to_rounding(const BlockValues& Rd) const {
    return norm(Rd) <= kRoundingResidual * (1.0 + c_scaled_norm_);
  }
  static constexpr double kRoundingResidual = 1e-14;

  static bool fail(const char* why) {
    core::log::debug("sdp: stalled: {}", why);
    return false;
  }

  bool step(const VectorXd& rp, const BlockValues& Rd) {
    StepProducts P;
    P.Zinv.resize(Z_.size());
    P.RdZinv.resize(Z_.size());
    P.XRdZinv.resize(Z_.size());
    const bool rd_negligible = dual_feasible_to_rounding(Rd);
    for (std::size_t k = 0; k < Z_.size(); ++k) {
      if (shape_.blocks[k].diagonal) {
        if ((Z_[k].array() <= 0.0).any()) return fail("Z is not positive definite");
        P.Zinv[k] = Z_[k].cwiseInverse();
        continue;
      }
      if (!factors_current_) {
        if (LZ_[k].compute(Z_[k]).info() != Eigen::Success) return fail("Z is not positive definite");
        if (LX_[k].compute(X_[k]).info() != Eigen::Success) return fail("X is not positive definite");
      }
      dense::cholesky_inverse(LZ_[k], P.Zinv[k], kLapackMinBlockOrder);
      if (!sparse_products_[k] || rd_negligible) continue;
      P.RdZinv[k].noalias() = Rd[k] * P.Zinv[k];
      P.XRdZinv[k].noalias() = X_[k] * P.RdZinv[k];
    }
    factors_current_ = true;
    if (!factor_schur(P.Zinv)) return fail("Schur complement indefinite even when shifted");
    const double mu = dot(X_, Z_) / n_;

    Direction pred;
    if (!solve_direction(rp, Rd, P, 0.0, nullptr, pred))
      return fail("predictor direction not finite");
    const double ap_a = max_step(shape_, X_, LX_, pred.dX, 1.0);
    const double ad_a = max_step(shape_, Z_, LZ_, pred.dZ, 1.0);
    const double mu_aff = dot_after_step(X_, ap_a, pred.dX, Z_, ad_a, pred.dZ) / n_;
    // Centring and step fraction from the predictor's progress (SDPT3's rules, Toh-Todd-Tutuncu 1999):
    // sigma = (mu_aff / mu)^e with e = 1 after a short predictor step (< 1/sqrt(3)), else max(1, 3 s^2),
    // s = min(predictor steps); a cubic exponent throughout over-trusted short predictor steps and
    // needed about twice CSDP's iterations on the control problems of SDPLIB.
    const double s = std::min(ap_a, ad_a);
    const double expon = s < 1.0 / std::sqrt(3.0) ? 1.0 : std::max(1.0, 3.0 * s * s);
    const double sigma = std::clamp(std::pow(std::max(mu_aff, 0.0) / mu, expon), 0.0, 1.0);

    Direction corr;
    if (!solve_direction(rp, Rd, P, sigma * mu, &pred, corr))
      return fail("corrector direction not finite");
    const double f = opts_.step_fraction + (1.0 - opts_.step_fraction) * 0.9 * s;
    SafeStep primal = safe_step(shape_, X_, corr.dX, f * max_step(shape_, X_, LX_, corr.dX, 1.0 / f));
    SafeStep dual = safe_step(shape_, Z_, corr.dZ, f * max_step(shape_, Z_, LZ_, corr.dZ, 1.0 / f));
    const double ap = primal.alpha, ad = dual.alpha;
    if (ap < 1e-10 && ad < 1e-10) return fail("step lengths below 1e-10");
    last_ap_ = ap;
    last_ad_ = ad;
    last_sigma_ = sigma;
    // The factors of the new X and Z are the accepted steps' (unchanged where a step is 0).
    if (ap > 0.0) {
      X_ = std::move(primal.value);
      LX_ = std::move(primal.factors);
    }
    if (ad > 0.0) {
      Z_ = std::move(dual.value);
      LZ_ = std::move(dual.factors);
    }
    y_ += ad * corr.dy;
    return true;
  }

  SdpOptions opts_;
  SdpProblem shape_;  // the blocks only (C is in Cv_, the constraints in terms_)
  double b_norm_ = 0.0, c_norm_ = 0.0;  // of the original data
  double c_scale_ = 1.0;
  double c_scaled_norm_ = 0.0;  // ||C|| in the scaled units (1 when scaled, unless C = 0)
  VectorXd a_scale_;           // scale of each constraint
  VectorXd b_;                 // scaled
  int empty_infeasible_ = -1;  // a constraint with an empty matrix and b != 0, if any
  int n_ = 0;
  std::vector<BlockTerms> terms_;
  // Per dense block: X A^T(y) from the constraint entries (few: at most n_k^2 / kSparseProductRatio) rather
  // than a dense product (times_At).
  std::vector<bool> sparse_products_;
  std::optional<SchurFactor> schur_;
  BlockValues Cv_, X_, Z_;
  // Cholesky factors of the dense blocks of X_ and Z_: computed at the start of an attempt, then the accepted
  // steps' own (safe_step factors every step it takes).
  BlockFactors LX_, LZ_;
  bool factors_current_ = false;
  VectorXd y_;
  std::optional<Best> best_;
  double last_ap_ = 0.0, last_ad_ = 0.0, last_sigma_ = 0.0;  // of the last step, for the log
};

}  // namespace

SdpResult solve_sdp(SdpProblem problem, const SdpOptions& options) {
  options.validate();
  problem.validate();
  Timer timer;
  Solver solver(std::move(problem), options);
  SdpResult res = solver.run();
  res.seconds = timer.seconds();
  return res;
}

}  // namespace core::certify
