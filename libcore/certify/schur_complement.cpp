// Storage, ordering and Cholesky factorisation of the interior-point Schur complement (see
// schur_complement.hpp). Inputs: constraint indices in [0, m), each block's list increasing.
#include "certify/schur_complement.hpp"

#include <Eigen/OrderingMethods>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

#include "certify/dense_linalg.hpp"
#include "common/log.hpp"

namespace core::certify {
namespace {

// The position of each constraint in the block order: by the first block it touches, constraints
// touching more than SchurFactor::kWideConstraint blocks last.
std::vector<int> block_order(int m, const std::vector<BlockTerms>& terms) {
  const auto um = static_cast<std::size_t>(m);
  std::vector<int> first(um, std::numeric_limits<int>::max()), span(um, 0);
  for (std::size_t k = 0; k < terms.size(); ++k)
    for (int i : terms[k].constraint) {
      first[static_cast<std::size_t>(i)] = std::min(first[static_cast<std::size_t>(i)], static_cast<int>(k));
      ++span[static_cast<std::size_t>(i)];
    }
  std::vector<int> order(um);
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int i) {
    const auto u = static_cast<std::size_t>(i);
    return std::tuple(span[u] > SchurFactor::kWideConstraint, first[u], i);
  };
  std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
  std::vector<int> perm(um);
  for (int c = 0; c < m; ++c) perm[static_cast<std::size_t>(order[static_cast<std::size_t>(c)])] = c;
  return perm;
}

}  // namespace

SchurFactor::SchurFactor(int m, const std::vector<BlockTerms>& terms) : sparse_(true) { analyse(m, terms); }

const char* SchurFactor::description() const {
  return !sparse_ ? "dense" : amd_ ? "sparse, AMD order" : "sparse, block order";
}

Eigen::MatrixXd& SchurFactor::dense_matrix(Eigen::Index m) {
  dense_.setZero(m, m);  // no reallocation when the order is unchanged
  return dense_;
}

// The factor overwrites M's lower triangle (dense_linalg.hpp), which is first mirrored into the upper one;
// after a failure the lower triangle is restored from the untouched upper one and the kept diagonal, plus
// the cumulative shift.
bool SchurFactor::factor_dense() {
  dense_.triangularView<Eigen::StrictlyUpper>() = dense_.transpose();
  const Eigen::VectorXd diagonal = dense_.diagonal();
  const double dmax = diagonal.cwiseAbs().maxCoeff();
  bool ok = dense::cholesky_lower(dense_, lapack_min_order_);
  double shift = 0.0;
  // delta > 0 bounds the loop also for an all-zero (or NaN) M, which no shift can make positive definite.
  for (double delta = 1e-14 * dmax; !ok && delta > 0.0 && delta <= 1e-6 * dmax; delta *= 100.0) {
    shift += delta;  // stays below 1.02 delta
    dense_.triangularView<Eigen::StrictlyLower>() = dense_.transpose();
    dense_.diagonal() = diagonal.array() + shift;
    ok = dense::cholesky_lower(dense_, lapack_min_order_);
    core::log::debug("sdp: Schur complement shifted by {:.1e} of its largest diagonal", delta / dmax);
  }
  return ok;
}

// The block order is kept when the envelope of M (per column, the rows from its first entry down to
// the diagonal; it holds the Cholesky factor) is at most kFillLimit times M's entries: an O(nnz) test
// that also spares a symbolic analysis of an order that would fill badly (which can cost more than
// AMD itself).
void SchurFactor::analyse(int m, const std::vector<BlockTerms>& terms) {
  perm_ = block_order(m, terms);
  build_pattern(m, terms);
  double envelope = 0.0;
  for (int c = 0; c < m; ++c)
    envelope += c - M_.innerIndexPtr()[M_.outerIndexPtr()[c]] + 1;  // each column holds its diagonal
  if (envelope > kFillLimit * static_cast<double>(M_.nonZeros())) {
    amd_ = true;
    Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> amd;  // new position -> current one
    {
      SparseMatrix full = M_.selfadjointView<Eigen::Upper>();
      Eigen::AMDOrdering<int>()(full, amd);
    }
    std::vector<int> inverse(static_cast<std::size_t>(m));
    for (int c = 0; c < m; ++c) inverse[static_cast<std::size_t>(amd.indices()(c))] = c;
    for (auto& p : perm_) p = inverse[static_cast<std::size_t>(p)];
    build_pattern(m, terms);
  }
  llt_.analyzePattern(M_);
  const long fill = llt_.matrixL().nestedExpression().nonZeros();
  core::log::debug("sdp: {} Schur complement, {} rows, {} nonzeros in its upper triangle, {} in its factor",
                   description(), m, M_.nonZeros(), fill);
}

// M_'s pattern in the order perm_: column c holds the rows r <= c of constraints sharing a block
// with the constraint at position c, and its diagonal (two passes over the blocks: count, then fill).
void SchurFactor::build_pattern(int m, const std::vector<BlockTerms>& terms) {
  const auto um = static_cast<std::size_t>(m);
  std::vector<std::vector<int>> blocks_of(um);
  for (std::size_t k = 0; k < terms.size(); ++k)
    for (int i : terms[k].constraint) blocks_of[static_cast<std::size_t>(i)].push_back(static_cast<int>(k));
  std::vector<int> at(um);  // constraint at each position
  for (int i = 0; i < m; ++i) at[static_cast<std::size_t>(perm_[static_cast<std::size_t>(i)])] = i;
  std::vector<int> mark(um, -1);
  auto visit = [&](int c, auto&& row) {  // the diagonal always, even for a constraint touching no block
    mark[static_cast<std::size_t>(c)] = c;
    row(c);
    for (int k : blocks_of[static_cast<std::size_t>(at[static_cast<std::size_t>(c)])])
      for (int j : terms[static_cast<std::size_t>(k)].constraint) {
        const int r = perm_[static_cast<std::size_t>(j)];
        if (r <= c && mark[static_cast<std::size_t>(r)] != c) {
          mark[static_cast<std::size_t>(r)] = c;
          row(r);
        }
      }
  };
  M_ = SparseMatrix(m, m);
  int* outer = M_.outerIndexPtr();
  outer[0] = 0;
  for (int c = 0; c < m; ++c) {
    int count = 0;
    visit(c, [&count](int) { ++count; });
    outer[c + 1] = outer[c] + count;
  }
  std::fill(mark.begin(), mark.end(), -1);
  M_.resizeNonZeros(outer[m]);
  int* inner = M_.innerIndexPtr();
  for (int c = 0; c < m; ++c) {
    int* out = inner + outer[c];
    visit(c, [&out](int r) { *out++ = r; });
    std::sort(inner + outer[c], inner + outer[c + 1]);
  }
}

double* SchurFactor::clear_values() {
  std::fill(M_.valuePtr(), M_.valuePtr() + M_.nonZeros(), 0.0);
  return M_.valuePtr();
}

int SchurFactor::record_position(int i, int j) {
  position_.push_back(static_cast<int>(find(perm_[static_cast<std::size_t>(i)], perm_[static_cast<std::size_t>(j)])));
  return position_.back();
}

bool SchurFactor::factor_values() {
  llt_.factorize(M_);
  const int m = static_cast<int>(M_.rows());
  double* values = M_.valuePtr();
  double dmax = 0.0;
  for (int k = 0; k < m; ++k) dmax = std::max(dmax, std::abs(values[find(k, k)]));
  for (double delta = 1e-14 * dmax; llt_.info() != Eigen::Success && delta > 0.0 && delta <= 1e-6 * dmax;
       delta *= 100.0) {
    for (int k = 0; k < m; ++k) values[find(k, k)] += delta;  // cumulative shift below 1.02 delta
    llt_.factorize(M_);
    core::log::debug("sdp: sparse Schur complement shifted by {:.1e} of its largest diagonal", delta / dmax);
  }
  return llt_.info() == Eigen::Success;
}

Eigen::VectorXd SchurFactor::solve(const Eigen::VectorXd& r) const {
  if (!sparse_) {
    Eigen::VectorXd x = r;
    dense::cholesky_solve(dense_, x, lapack_min_order_);
    return x;
  }
  Eigen::VectorXd rp(r.size());
  for (Eigen::Index i = 0; i < r.size(); ++i) rp(perm_[static_cast<std::size_t>(i)]) = r(i);
  const Eigen::VectorXd xp = llt_.solve(rp);
  Eigen::VectorXd x(r.size());
  for (Eigen::Index i = 0; i < r.size(); ++i) x(i) = xp(perm_[static_cast<std::size_t>(i)]);
  return x;
}

// Value index of entry (r, c) of M_ (positions in perm_ order, either triangle).
std::ptrdiff_t SchurFactor::find(int r, int c) const {
  if (r > c) std::swap(r, c);
  const int* begin = M_.innerIndexPtr() + M_.outerIndexPtr()[c];
  const int* end = M_.innerIndexPtr() + M_.outerIndexPtr()[c + 1];
  return std::lower_bound(begin, end, r) - M_.innerIndexPtr();
}

}  // namespace core::certify
