// The Schur complement M_ij = <A_i, X A_j Z^-1> of the interior-point SDP solver (sdp_solver.cpp):
// its storage and Cholesky factorisation, dense, or sparse for problems whose constraints each touch
// few blocks of many small ones (M_ij = 0 unless constraints i and j share a block; e.g. a chordal
// conversion, Fukuda-Kojima-Murota-Nakata 2001, where one iteration then costs O(number of blocks)).
//
// Sparse: the pattern is the same in every iteration, so it is built once, straight from the blocks'
// constraint lists, as the upper triangle of M in a symmetric order chosen once: the "block order"
// (constraints by the first block they touch, those touching more than kWideConstraint blocks last),
// which for block chains such as chordal conversions in clique-tree order gives a banded M whose
// factor barely fills and costs no memory beyond M itself; when its envelope (a bound on the factor)
// holds more than kFillLimit times the entries of M, an AMD order of M's pattern instead. Eigen's factorisation then
// runs in that order without copying M.
//
// On degenerate problems M tends to a singular matrix at the optimum and rounding can make it
// indefinite: then M + delta I is factored with delta growing from 1e-14 of its largest diagonal
// entry up to 1e-6 (the solver's iterative refinement corrects for the shift).
#pragma once
#include <Eigen/Dense>
#include <Eigen/SparseCholesky>

#include <cstddef>
#include <vector>

namespace core::certify {

// One entry of a constraint matrix inside a block, both triangles listed (a diagonal block lists its
// diagonal once, column q = p).
struct BlockEntry {
  int p, q;
  double v;
};

// The constraints touching one block, in increasing order, each with its entries in that block:
// constraint[a] owns entries[start[a] .. start[a + 1]).
struct BlockTerms {
  std::vector<int> constraint;
  std::vector<int> start = {0};
  std::vector<BlockEntry> entries;
  // The same entries once per symmetric pair (p <= q), the diagonal ones halved, so that
  // <A, G> = sum over them of v (G + G^T)(p, q): constraint[a] owns upper[upper_start[a] .. upper_start[a + 1]).
  std::vector<int> upper_start = {0};
  std::vector<BlockEntry> upper;
  int size() const { return static_cast<int>(constraint.size()); }
  const BlockEntry* begin(int a) const { return entries.data() + start[static_cast<std::size_t>(a)]; }
  const BlockEntry* end(int a) const { return entries.data() + start[static_cast<std::size_t>(a) + 1]; }
  const BlockEntry* upper_begin(int a) const { return upper.data() + upper_start[static_cast<std::size_t>(a)]; }
  const BlockEntry* upper_end(int a) const { return upper.data() + upper_start[static_cast<std::size_t>(a) + 1]; }
};

// The dense-route Schur columns of a block are gathered kGatherWidth at a time (sdp_solver.cpp): S holds their
// symmetric parts interleaved, S[(p + q n) width + b] the (p, q) entry (p <= q) of the run's column b.
inline constexpr int kGatherWidth = 8;
// s[b] = sum over constraint a's upper entries (p, q, v) of v S[(p + q n) width + b], b < width (1 or
// kGatherWidth), accumulated in list order with every product rounded before it is summed (schur_gather.cpp),
// so that a run of columns gives bitwise the sums of one column at a time.
void gather_upper(const BlockTerms& t, int a, int n, const double* S, int width, double* s);

class SchurFactor {
 public:
  static constexpr int kWideConstraint = 64;
  static constexpr double kFillLimit = 4.0;

  // Dense, factored through LAPACK from order lapack_min_order (dense_linalg.hpp), Eigen below.
  explicit SchurFactor(Eigen::Index lapack_min_order) : lapack_min_order_(lapack_min_order) {}
  SchurFactor(int m, const std::vector<BlockTerms>& terms);  // sparse, pattern from the blocks' constraints
  bool sparse() const { return sparse_; }
  // dense | sparse, block order | sparse, AMD order
  const char* description() const;

  // Dense: the storage of M, m x m and zeroed (allocated once while m stays the same), for the caller to
  // fill its lower triangle; then factor_dense() factors it in place (shifted when rounding made it
  // indefinite, see above). False when no shift up to 1e-6 of its largest diagonal entry helps.
  Eigen::MatrixXd& dense_matrix(Eigen::Index m);
  bool factor_dense();

  // Sparse: M from its lower-triangle entries (constraint indices), emitted as add(i, j, value) by
  // `emit` in the same order in every iteration (duplicates summed): the first call records where
  // each emitted entry lands in M's values, later calls add straight into them.
  template <class Emit>
  bool factor_sparse(Emit&& emit) {
    double* values = clear_values();
    if (position_.empty()) {
      emit([&](int i, int j, double v) { values[record_position(i, j)] += v; });
      position_.shrink_to_fit();
    } else {
      std::size_t k = 0;
      emit([&](int, int, double v) { values[position_[k++]] += v; });
    }
    return factor_values();
  }

  Eigen::VectorXd solve(const Eigen::VectorXd& r) const;

 private:
  using SparseMatrix = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

  void analyse(int m, const std::vector<BlockTerms>& terms);
  void build_pattern(int m, const std::vector<BlockTerms>& terms);
  double* clear_values();
  int record_position(int i, int j);
  bool factor_values();
  std::ptrdiff_t find(int r, int c) const;

  bool sparse_ = false;
  bool amd_ = false;
  Eigen::Index lapack_min_order_ = 0;
  Eigen::MatrixXd dense_;        // dense: the Cholesky factor in the lower triangle, M's upper triangle above it
  SparseMatrix M_;               // upper triangle, in the order perm_
  std::vector<int> perm_;        // position of each constraint
  std::vector<int> position_;    // value index of each emitted entry (M_ has int indices)
  Eigen::SimplicialLLT<SparseMatrix, Eigen::Upper, Eigen::NaturalOrdering<int>> llt_;
};

}  // namespace core::certify
