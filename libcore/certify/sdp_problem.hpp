// A semidefinite program in standard primal form over a block-diagonal matrix variable:
//   primal:  min <C, X>   s.t. <A_i, X> = b_i (i = 1..m),  X >= 0 (PSD)
//   dual:    max b^T y    s.t. Z = C - sum_i y_i A_i >= 0.
// Blocks are dense symmetric or diagonal (an LP block: its entries are nonnegative scalars).
// Matrices are stored sparsely as upper-triangle entries (row <= col) per block, as in the SDPA
// sparse format; entries must name an existing block and lie inside it, diagonal blocks hold only
// row == col entries. validate() checks all of this and throws DataError otherwise.
#pragma once
#include <Eigen/Dense>

#include <string>
#include <vector>

namespace core::certify {

struct BlockSpec {
  int size = 0;
  bool diagonal = false;  // an LP block: only its diagonal exists
};

struct SdpEntry {
  int block = 0;  // 0-based block index
  int row = 0;    // 0-based, row <= col
  int col = 0;
  double value = 0.0;
};

// A symmetric block-diagonal matrix given by its upper-triangle entries. Repeated (block, row, col)
// entries add up.
struct SdpMatrix {
  std::vector<SdpEntry> entries;
  void add(int block, int row, int col, double value);  // swaps row/col into upper order
  double frobenius_norm() const;                         // counts off-diagonal entries twice
};

// One dense value per block: dense blocks are size x size, diagonal blocks size x 1.
using BlockValues = std::vector<Eigen::MatrixXd>;

struct SdpProblem {
  std::vector<BlockSpec> blocks;
  SdpMatrix C;
  std::vector<SdpMatrix> A;
  Eigen::VectorXd b;

  int num_constraints() const { return static_cast<int>(A.size()); }
  int total_size() const;  // sum of block sizes (the whole matrix variable's order); DataError past 2^31 - 1
  // Throws DataError naming the first inconsistency (block index, entry, sizes, non-finite value).
  void validate() const;

  BlockValues zeros() const;
  BlockValues identity(double scale) const;
  // <M, X> for a sparse matrix and a block-valued X.
  double inner(const SdpMatrix& M, const BlockValues& X) const;
  // Adds alpha * M to the block values.
  void accumulate(const SdpMatrix& M, double alpha, BlockValues& out) const;
};

}  // namespace core::certify
