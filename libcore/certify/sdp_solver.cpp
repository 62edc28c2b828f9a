// Primal-dual interior-point SDP solver: HKM direction with Mehrotra predictor-corrector
// (Helmberg-Rendl-Vanderbei-Wolkowicz 1996; Todd, "Semidefinite optimization", Acta Numerica
// 2001, sections 5-6). Newton system for A(X) = b, A^T(y) + Z = C, XZ = sigma mu I:
//   M dy = r_p - A(K),  K = sym(R_c Z^-1 - X R_d Z^-1),  dZ = R_d - A^T(dy),
//   dX = sym((R_c - X dZ) Z^-1),  M_ij = <A_i, X A_j Z^-1>,
// with R_c = sigma mu I - XZ (minus dX_a dZ_a in the corrector). Inputs: a validated problem.
#include "certify/sdp_solver.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/SparseCholesky>

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/timer.hpp"

namespace core::certify {

const char* to_string(SdpStatus status) {
  switch (status) {
    case SdpStatus::optimal: return "optimal";
    case SdpStatus::primal_infeasible: return "primal_infeasible";
    case SdpStatus::dual_infeasible: return "dual_infeasible";
    case SdpStatus::stalled: return "stalled";
    case SdpStatus::iteration_limit: return "iteration_limit";
    case SdpStatus::above_target: return "above_target";
    case SdpStatus::below_target: return "below_target";
  }
  return "unknown";
}

void SdpOptions::validate() const {
  auto open_unit = [](double v) { return v > 0.0 && v < 1.0; };
  if (!open_unit(tol)) throw UsageError("sdp.tol must be in (0, 1), got " + std::to_string(tol));
  if (!open_unit(infeasibility_tol))
    throw UsageError("sdp.infeasibility_tol must be in (0, 1), got " + std::to_string(infeasibility_tol));
  if (max_iterations < 1)
    throw UsageError("sdp.max_iterations must be >= 1, got " + std::to_string(max_iterations));
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

VectorXd apply_A(const SdpProblem& p, const BlockValues& X) {
  VectorXd r(p.num_constraints());
  for (int i = 0; i < p.num_constraints(); ++i) r(i) = p.inner(p.A[i], X);
  return r;
}
BlockValues apply_At(const SdpProblem& p, const VectorXd& y) {
  BlockValues out = p.zeros();
  for (int i = 0; i < p.num_constraints(); ++i)
    if (y(i) != 0.0) p.accumulate(p.A[i], y(i), out);
  return out;
}

// Cholesky factors of the dense blocks of a positive definite block value (diagonal blocks get an
// empty factor); false when one is not positive definite.
using BlockFactors = std::vector<Eigen::LLT<MatrixXd>>;
bool factor_blocks(const SdpProblem& p, const BlockValues& X, BlockFactors& f) {
  f.clear();
  f.resize(X.size());  // default-constructed in place: copying an uncomputed LLT reads its unset info()
  for (std::size_t k = 0; k < X.size(); ++k) {
    if (p.blocks[k].diagonal) {
      if ((X[k].array() <= 0.0).any()) return false;
      continue;
    }
    f[k].compute(X[k]);
    if (f[k].info() != Eigen::Success) return false;
  }
  return true;
}

// min(limit, largest alpha with X + alpha dX still PSD), for X positive definite with factors L.
// A dense block first tries a Cholesky of X + limit dX: when it succeeds the whole segment is in
// the cone (convexity) and no eigenvalues are needed; otherwise the step is -1 / lambda_min of
// L^-1 dX L^-T. Callers take a fraction f < 1 of the result, so a success at limit that rounding
// allowed on the boundary still leaves X + f limit dX >= (1 - f) X.
double max_step(const SdpProblem& p, const BlockValues& X, const BlockFactors& L, const BlockValues& dX,
                double limit) {
  double alpha = limit;
  for (std::size_t k = 0; k < X.size(); ++k) {
    if (p.blocks[k].diagonal) {
      for (Eigen::Index i = 0; i < X[k].rows(); ++i)
        if (dX[k](i, 0) < 0.0) alpha = std::min(alpha, -X[k](i, 0) / dX[k](i, 0));
      continue;
    }
    if (Eigen::LLT<MatrixXd>(X[k] + alpha * dX[k]).info() == Eigen::Success) continue;
    MatrixXd T = L[k].matrixL().solve(dX[k]);
    T = L[k].matrixL().solve(T.transpose().eval());
    T = 0.5 * (T + T.transpose()).eval();
    const double lmin = Eigen::SelfAdjointEigenSolver<MatrixXd>(T, Eigen::EigenvaluesOnly).eigenvalues()(0);
    if (lmin < 0.0) alpha = std::min(alpha, -1.0 / lmin);
  }
  return alpha;
}

// ---- the solver ------------------------------------------------------------------------------

struct Entry {
  int p, q;
  double v;
};

// The Schur complement M, dense or sparse (when every constraint touches few blocks, M_ij is zero
// unless constraints i and j share a block), and its Cholesky factor. On degenerate problems M
// tends to a singular matrix at the optimum and rounding can make it indefinite: then M + delta I is
// factored with delta growing from 1e-14 of its largest diagonal entry (the refinement in
// solve_direction corrects for the shift). The sparse pattern is the same in every iteration, so
// its ordering (AMD) is computed once.
class SchurFactor {
 public:
  explicit SchurFactor(bool sparse) : sparse_(sparse) {}
  bool sparse() const { return sparse_; }

  bool factor_dense(Eigen::MatrixXd M) {
    dense_.compute(M);
    const double dmax = M.diagonal().cwiseAbs().maxCoeff();
    for (double delta = 1e-14 * dmax; dense_.info() != Eigen::Success && delta <= 1e-6 * dmax; delta *= 100.0) {
      M.diagonal().array() += delta;  // cumulative shift stays below 1.02 delta
      dense_.compute(M);
      core::log::debug("sdp: Schur complement shifted by {:.1e} of its largest diagonal", delta / dmax);
    }
    return dense_.info() == Eigen::Success;
  }

  // M from its lower-triangle entries, emitted as add(i, j, value) by `emit` in the same order in
  // every iteration (duplicates summed): the first call builds the pattern (with the whole diagonal,
  // for the shifts) and the position of each emitted entry, later calls add straight into M's values.
  template <class Emit>
  bool factor_sparse(int m, Emit&& emit) {
    if (!analyzed_) {
      std::vector<Eigen::Triplet<double>> lower;
      emit([&lower](int i, int j, double v) { lower.emplace_back(i, j, v); });
      for (int k = 0; k < m; ++k) lower.emplace_back(k, k, 0.0);
      M_.resize(m, m);
      M_.setFromTriplets(lower.begin(), lower.end());
      M_.makeCompressed();
      position_.resize(lower.size() - m);
      for (std::size_t k = 0; k + m < lower.size(); ++k) position_[k] = find(lower[k].row(), lower[k].col());
      llt_.analyzePattern(M_);
      analyzed_ = true;
    } else {
      Eigen::Map<Eigen::VectorXd> values(M_.valuePtr(), M_.nonZeros());
      values.setZero();
      std::size_t k = 0;
      emit([&](int, int, double v) { values(position_[k++]) += v; });
    }
    llt_.factorize(M_);
    if (first_) {
      core::log::debug("sdp: sparse Schur complement, {} rows, {} block contributions, {} nonzeros in its lower triangle, {} in its factor", m, position_.size(),
                       M_.nonZeros(), llt_.info() == Eigen::Success ? static_cast<long>(llt_.matrixL().nestedExpression().nonZeros()) : -1L);
      first_ = false;
    }
    double dmax = 0.0;
    for (int k = 0; k < m; ++k) dmax = std::max(dmax, std::abs(M_.valuePtr()[find(k, k)]));
    for (double delta = 1e-14 * dmax; llt_.info() != Eigen::Success && delta <= 1e-6 * dmax; delta *= 100.0) {
      for (int k = 0; k < m; ++k) M_.valuePtr()[find(k, k)] += delta;  // cumulative shift below 1.02 delta
      llt_.factorize(M_);
      core::log::debug("sdp: sparse Schur complement shifted by {:.1e} of its largest diagonal", delta / dmax);
    }
    return llt_.info() == Eigen::Success;
  }

  Eigen::VectorXd solve(const Eigen::VectorXd& r) const {
    if (sparse_) return llt_.solve(r);
    return dense_.solve(r);
  }

 private:
  // Value index of entry (row, col) of the compressed lower-triangle pattern of M.
  std::ptrdiff_t find(int row, int col) const {
    const int* begin = M_.innerIndexPtr() + M_.outerIndexPtr()[col];
    const int* end = M_.innerIndexPtr() + M_.outerIndexPtr()[col + 1];
    return std::lower_bound(begin, end, row) - M_.innerIndexPtr();
  }

  bool sparse_;
  bool analyzed_ = false;
  bool first_ = true;
  Eigen::LLT<Eigen::MatrixXd> dense_;
  Eigen::SparseMatrix<double> M_;
  std::vector<std::ptrdiff_t> position_;
  Eigen::SimplicialLLT<Eigen::SparseMatrix<double>, Eigen::Lower> llt_;
};

class Solver {
 public:
  Solver(const SdpProblem& original, const SdpOptions& opts) : opts_(opts), orig_(original), p_(original) {
    const int m = p_.num_constraints();
    c_scale_ = 1.0;
    a_scale_ = VectorXd::Ones(m);
    if (opts_.scale) {
      const double cn = p_.C.frobenius_norm();
      c_scale_ = cn > 0.0 ? cn : 1.0;
      for (auto& e : p_.C.entries) e.value /= c_scale_;
      for (int i = 0; i < m; ++i) {
        const double an = p_.A[i].frobenius_norm();
        if (an > 0.0) a_scale_(i) = an;
        for (auto& e : p_.A[i].entries) e.value /= a_scale_(i);
        p_.b(i) /= a_scale_(i);
      }
    }
    n_ = p_.total_size();
    expand_constraints();
    schur_.emplace(use_sparse_schur());
  }

  SdpResult run() {
    initial_point();
    SdpResult res;
    // Termination is judged in the units of the original data.
    const double b_norm = orig_.b.norm();
    const double c_norm = orig_.C.frobenius_norm();
    for (int it = 0;; ++it) {
      res.iterations = it;
      const VectorXd rp = p_.b - apply_A(p_, X_);
      BlockValues Rd = Cv_;
      axpy(-1.0, Z_, Rd);
      axpy(-1.0, apply_At(p_, y_), Rd);
      const double pobj = dot(Cv_, X_);
      const double dobj = p_.b.dot(y_);
      const double rel_p = rp.cwiseProduct(a_scale_).norm() / (1.0 + b_norm);
      const double rel_d = c_scale_ * norm(Rd) / (1.0 + c_norm);
      const double rel_gap =
          c_scale_ * std::abs(pobj - dobj) / (1.0 + c_scale_ * (std::abs(pobj) + std::abs(dobj)));
      core::log::debug(
          "sdp it {:3d} pobj {:+.9e} dobj {:+.9e} rel_p {:.2e} rel_d {:.2e} gap {:.2e} mu {:.2e} "
          "ap {:.3f} ad {:.3f} sigma {:.3f}",
          it, c_scale_ * pobj, c_scale_ * dobj, rel_p, rel_d, rel_gap, c_scale_ * dot(X_, Z_) / n_, last_ap_,
          last_ad_, last_sigma_);
      if (rel_p < opts_.tol && rel_d < opts_.tol && rel_gap < opts_.tol) {
        res.status = SdpStatus::optimal;
        break;
      }
      if (opts_.target && rel_d < opts_.tol && c_scale_ * dobj > *opts_.target) {
        res.status = SdpStatus::above_target;
        break;
      }
      if (opts_.target && rel_p < opts_.tol && c_scale_ * pobj < *opts_.target) {
        res.status = SdpStatus::below_target;
        break;
      }
      if (dobj > 0.0) {  // dual ray: A^T y + Z = C - R_d small relative to b^T y
        BlockValues ray = Cv_;
        axpy(-1.0, Rd, ray);
        if (norm(ray) < opts_.infeasibility_tol * dobj) {
          res.status = SdpStatus::primal_infeasible;
          break;
        }
      }
      if (pobj < 0.0 && (p_.b - rp).norm() < opts_.infeasibility_tol * -pobj) {  // primal ray
        res.status = SdpStatus::dual_infeasible;
        break;
      }
      if (it >= opts_.max_iterations) {
        res.status = SdpStatus::iteration_limit;
        break;
      }
      if (!step(rp, Rd)) {
        res.status = SdpStatus::stalled;
        break;
      }
    }
    unscale(res);
    return res;
  }

 private:
  // Both triangles of every constraint, grouped per block (constraints touching the block, in
  // increasing order), for forming the Schur complement.
  void expand_constraints() {
    const int m = p_.num_constraints();
    active_.assign(p_.blocks.size(), {});
    entries_.assign(p_.blocks.size(), {});
    std::vector<SdpEntry> sorted;
    for (int i = 0; i < m; ++i) {
      sorted = p_.A[i].entries;  // one record per (block, constraint): entries grouped by block
      std::stable_sort(sorted.begin(), sorted.end(), [](const SdpEntry& a, const SdpEntry& b) { return a.block < b.block; });
      for (const auto& e : sorted) {
        auto& act = active_[e.block];
        if (act.empty() || act.back() != i) {
          act.push_back(i);
          entries_[e.block].emplace_back();
        }
        entries_[e.block].back().push_back({e.row, e.col, e.value});
        if (e.row != e.col) entries_[e.block].back().push_back({e.col, e.row, e.value});
      }
    }
    Cv_ = p_.zeros();
    p_.accumulate(p_.C, 1.0, Cv_);
  }

  // Sparse Schur complement when asked, or (auto) when M has at most 25% nonzeros by the block
  // count and at least 1000 rows.
  bool use_sparse_schur() const {
    if (opts_.schur != SchurMode::automatic) return opts_.schur == SchurMode::sparse;
    const double m = p_.num_constraints();
    double pairs = 0.0;
    for (const auto& act : active_) pairs += 0.5 * static_cast<double>(act.size()) * (act.size() + 1.0);
    return m >= 1000 && pairs <= 0.25 * 0.5 * m * (m + 1.0);
  }

  // Scaled identity start (SDPT3's choice of scales, Toh-Todd-Tutuncu 1999).
  void initial_point() {
    const int m = p_.num_constraints();
    double xi = std::max(10.0, std::sqrt(static_cast<double>(n_)));
    double eta = xi;
    for (int i = 0; i < m; ++i) {
      const double an = p_.A[i].frobenius_norm();
      xi = std::max(xi, n_ * (1.0 + std::abs(p_.b(i))) / (1.0 + an));
      eta = std::max(eta, an);
    }
    eta = std::max(eta, p_.C.frobenius_norm());
    X_ = p_.identity(xi);
    Z_ = p_.identity(eta);
    y_ = VectorXd::Zero(m);
  }

  // M_ij = <A_i, X A_j Z^-1> for i >= j (in the order of the active lists): add(i, j, value) per
  // block contribution.
  template <class Add>
  void schur_entries(const BlockValues& Zinv, Add&& add) const {
    for (std::size_t k = 0; k < p_.blocks.size(); ++k) {
      const auto& active = active_[k];
      const auto& E = entries_[k];
      if (p_.blocks[k].diagonal) {
        const VectorXd d = X_[k].col(0).cwiseProduct(Zinv[k].col(0));
        VectorXd t = VectorXd::Zero(p_.blocks[k].size);
        for (std::size_t aj = 0; aj < active.size(); ++aj) {
          for (const auto& e : E[aj]) t(e.p) += e.v * d(e.p);
          for (std::size_t ai = aj; ai < active.size(); ++ai) {
            double s = 0.0;
            for (const auto& e : E[ai]) s += e.v * t(e.p);
            add(active[ai], active[aj], s);
          }
          for (const auto& e : E[aj]) t(e.p) = 0.0;
        }
        continue;
      }
      const MatrixXd& X = X_[k];
      const MatrixXd& Zi = Zinv[k];
      const double nb = static_cast<double>(p_.blocks[k].size);
      std::vector<double> tail(active.size() + 1, 0.0);  // entries of constraints active[ai..]
      for (std::size_t ai = active.size(); ai-- > 0;) tail[ai] = tail[ai + 1] + E[ai].size();
      for (std::size_t aj = 0; aj < active.size(); ++aj) {
        const double ej = static_cast<double>(E[aj].size());
        const double pairwise_cost = ej * tail[aj];
        const double dense_cost = nb * nb * std::min(ej, nb) + tail[aj];
        if (pairwise_cost <= dense_cost) {
          // (X A_j Z^-1)[p,q] = sum over entries (r,s,c) of A_j of c X[p,r] Zi[s,q].
          for (std::size_t ai = aj; ai < active.size(); ++ai) {
            double s = 0.0;
            for (const auto& ei : E[ai])
              for (const auto& ej_ : E[aj]) s += ei.v * ej_.v * X(ei.p, ej_.p) * Zi(ej_.q, ei.q);
            add(active[ai], active[aj], s);
          }
        } else {
          MatrixXd W = MatrixXd::Zero(X.rows(), X.cols());  // X A_j
          for (const auto& e : E[aj]) W.col(e.q) += e.v * X.col(e.p);
          const MatrixXd G = W * Zi;
          for (std::size_t ai = aj; ai < active.size(); ++ai) {
            double s = 0.0;
            for (const auto& ei : E[ai]) s += ei.v * G(ei.p, ei.q);
            add(active[ai], active[aj], s);
          }
        }
      }
    }
  }

  bool factor_schur(const BlockValues& Zinv) {
    const int m = p_.num_constraints();
    if (schur_->sparse()) return schur_->factor_sparse(m, [&](auto&& add) { schur_entries(Zinv, add); });
    MatrixXd M = MatrixXd::Zero(m, m);
    schur_entries(Zinv, [&M](int i, int j, double v) { M(i, j) += v; });
    M.triangularView<Eigen::StrictlyUpper>() = M.transpose();
    return schur_->factor_dense(std::move(M));
  }

  // The part of dX that depends on dZ: -sym(X W Z^-1).
  BlockValues hkm_product(const BlockValues& Zinv, const BlockValues& W) const {
    BlockValues out = p_.zeros();
    for (std::size_t k = 0; k < X_.size(); ++k) {
      if (p_.blocks[k].diagonal) {
        out[k].col(0) = -(X_[k].col(0).array() * W[k].col(0).array() * Zinv[k].col(0).array()).matrix();
        continue;
      }
      const MatrixXd D = X_[k] * W[k] * Zinv[k];
      out[k] = -0.5 * (D + D.transpose());
    }
    return out;
  }

  // dX = sym((R_c - X dZ) Z^-1) with R_c = sigma mu I - XZ - corr (corr = dX_a dZ_a or none).
  BlockValues primal_direction(const BlockValues& Zinv, const BlockValues& dZ, double sigma_mu,
                               const BlockValues* dXa, const BlockValues* dZa) const {
    BlockValues dX = hkm_product(Zinv, dZ);
    for (std::size_t k = 0; k < X_.size(); ++k) {
      if (p_.blocks[k].diagonal) {
        const auto zi = Zinv[k].col(0).array();
        Eigen::ArrayXd r = sigma_mu * zi - X_[k].col(0).array();
        if (dXa) r -= (*dXa)[k].col(0).array() * (*dZa)[k].col(0).array() * zi;
        dX[k].col(0) += r.matrix();
        continue;
      }
      MatrixXd D = sigma_mu * Zinv[k] - X_[k];
      if (dXa) D -= (*dXa)[k] * (*dZa)[k] * Zinv[k];
      dX[k] += 0.5 * (D + D.transpose());
    }
    return dX;
  }

  struct Direction {
    BlockValues dX, dZ;
    VectorXd dy;
  };

  bool solve_direction(const VectorXd& rp, const BlockValues& Rd,
                       const BlockValues& Zinv, double sigma_mu, const BlockValues* dXa,
                       const BlockValues* dZa, Direction& d) const {
    // K = (sigma mu I - corr) Z^-1 - X - X R_d Z^-1, symmetrised inside inner().
    BlockValues K = p_.zeros();
    for (std::size_t k = 0; k < X_.size(); ++k) {
      if (p_.blocks[k].diagonal) {
        const auto x = X_[k].col(0).array();
        const auto zi = Zinv[k].col(0).array();
        Eigen::ArrayXd r = sigma_mu * zi - x - x * Rd[k].col(0).array() * zi;
        if (dXa) r -= (*dXa)[k].col(0).array() * (*dZa)[k].col(0).array() * zi;
        K[k].col(0) = r.matrix();
        continue;
      }
      MatrixXd R = sigma_mu * MatrixXd::Identity(X_[k].rows(), X_[k].cols()) - X_[k] * Rd[k];
      if (dXa) R -= (*dXa)[k] * (*dZa)[k];
      MatrixXd D = R * Zinv[k] - X_[k];
      K[k] = 0.5 * (D + D.transpose());
    }
    d.dy = schur_->solve(rp - apply_A(p_, K));
    if (!d.dy.allFinite()) return false;
    d.dZ = Rd;
    axpy(-1.0, apply_At(p_, d.dy), d.dZ);
    d.dX = primal_direction(Zinv, d.dZ, sigma_mu, dXa, dZa);
    // Iterative refinement against the operator actually applied: near the optimum Z^-1 is large
    // and the rounding in X dZ Z^-1 breaks A(dX) = r_p, which would undo primal feasibility
    // step by step. A correction ddy moves A(dX) by M ddy, so solving M ddy = r_p - A(dX) removes
    // that error (and the shift of SchurFactor); the correction is added to dX, not recomputed
    // from scratch, so its own rounding is small.
    // Skipped when the error is small next to r_p (the step still reduces infeasibility) or at
    // rounding level; at most two passes.
    const double negligible = std::max(1e-3 * rp.norm(), 1e-14 * (1.0 + p_.b.norm()));
    for (int r = 0; r < 2; ++r) {
      const VectorXd res = rp - apply_A(p_, d.dX);
      if (res.norm() <= negligible) break;
      const VectorXd ddy = schur_->solve(res);
      if (!ddy.allFinite()) break;
      const BlockValues dZc = apply_At(p_, -ddy);
      d.dy += ddy;
      axpy(1.0, dZc, d.dZ);
      axpy(1.0, hkm_product(Zinv, dZc), d.dX);
    }
    return true;
  }

  static bool fail(const char* why) {
    core::log::debug("sdp: stalled: {}", why);
    return false;
  }

  bool step(const VectorXd& rp, const BlockValues& Rd) {
    BlockFactors LX, LZ;
    if (!factor_blocks(p_, X_, LX)) return fail("X is not positive definite");
    if (!factor_blocks(p_, Z_, LZ)) return fail("Z is not positive definite");
    BlockValues Zinv = p_.zeros();
    for (std::size_t k = 0; k < Z_.size(); ++k)
      Zinv[k] = p_.blocks[k].diagonal ? Z_[k].cwiseInverse().eval()
                                      : LZ[k].solve(MatrixXd::Identity(Z_[k].rows(), Z_[k].cols()));
    if (!factor_schur(Zinv)) return fail("Schur complement indefinite even when shifted");
    const double mu = dot(X_, Z_) / n_;

    Direction pred;
    if (!solve_direction(rp, Rd, Zinv, 0.0, nullptr, nullptr, pred))
      return fail("predictor direction not finite");
    const double ap_a = max_step(p_, X_, LX, pred.dX, 1.0);
    const double ad_a = max_step(p_, Z_, LZ, pred.dZ, 1.0);
    BlockValues Xa = X_, Za = Z_;
    axpy(ap_a, pred.dX, Xa);
    axpy(ad_a, pred.dZ, Za);
    const double mu_aff = dot(Xa, Za) / n_;
    const double sigma = std::clamp(std::pow(std::max(mu_aff, 0.0) / mu, 3.0), 0.0, 1.0);

    Direction corr;
    if (!solve_direction(rp, Rd, Zinv, sigma * mu, &pred.dX, &pred.dZ, corr))
      return fail("corrector direction not finite");
    const double f = opts_.step_fraction;
    const double ap = f * max_step(p_, X_, LX, corr.dX, 1.0 / f);
    const double ad = f * max_step(p_, Z_, LZ, corr.dZ, 1.0 / f);
    if (ap < 1e-10 && ad < 1e-10) return fail("step lengths below 1e-10");
    last_ap_ = ap;
    last_ad_ = ad;
    last_sigma_ = sigma;
    axpy(ap, corr.dX, X_);
    axpy(ad, corr.dZ, Z_);
    y_ += ad * corr.dy;
    return true;
  }

  // Back to the original data: y_i = c y'_i / a_i, Z = c Z', objectives and residuals unscaled.
  void unscale(SdpResult& res) {
    res.X = X_;
    res.y = (c_scale_ * y_).cwiseQuotient(a_scale_);
    res.Z = Z_;
    for (auto& z : res.Z) z *= c_scale_;
    const SdpProblem& p = orig_;
    BlockValues C = p.zeros();
    p.accumulate(p.C, 1.0, C);
    res.primal_objective = dot(C, res.X);
    res.dual_objective = p.b.dot(res.y);
    res.primal_residual = (p.b - apply_A(p, res.X)).norm() / (1.0 + p.b.norm());
    BlockValues Rd = C;
    axpy(-1.0, res.Z, Rd);
    axpy(-1.0, apply_At(p, res.y), Rd);
    res.dual_residual = norm(Rd) / (1.0 + p.C.frobenius_norm());
    res.relative_gap = std::abs(res.primal_objective - res.dual_objective) /
                       (1.0 + std::abs(res.primal_objective) + std::abs(res.dual_objective));
  }

  SdpOptions opts_;
  const SdpProblem& orig_;
  SdpProblem p_;  // scaled copy
  double c_scale_ = 1.0;
  VectorXd a_scale_;
  int n_ = 0;
  std::vector<std::vector<int>> active_;                  // [block]: constraints touching it
  std::vector<std::vector<std::vector<Entry>>> entries_;  // [block][index in active_] both triangles
  std::optional<SchurFactor> schur_;
  BlockValues Cv_, X_, Z_;
  VectorXd y_;
  double last_ap_ = 0.0, last_ad_ = 0.0, last_sigma_ = 0.0;  // of the last step, for the log
};

}  // namespace

SdpResult solve_sdp(const SdpProblem& problem, const SdpOptions& options) {
  options.validate();
  problem.validate();
  Timer timer;
  Solver solver(problem, options);
  SdpResult res = solver.run();
  res.seconds = timer.seconds();
  return res;
}

}  // namespace core::certify
