// Storage and checks for a block-diagonal standard-form SDP (see sdp_problem.hpp).
#include "certify/sdp_problem.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <utility>

#include "common/errors.hpp"

namespace core::certify {

void SdpMatrix::add(int block, int row, int col, double value) {
  if (row > col) std::swap(row, col);
  entries.push_back({block, row, col, value});
}

double SdpMatrix::frobenius_norm() const {
  double s = 0.0;
  for (const auto& e : entries) s += (e.row == e.col ? 1.0 : 2.0) * e.value * e.value;
  return std::sqrt(s);
}

int SdpProblem::total_size() const {
  std::int64_t n = 0;  // 64-bit: two blocks of 2^31 - 1 must not wrap around
  for (const auto& blk : blocks) n += blk.size;
  if (n > std::numeric_limits<int>::max())
    throw DataError("SDP blocks have a total order of " + std::to_string(n) + ", more than 2^31 - 1");
  return static_cast<int>(n);
}

namespace {

void check_matrix(const SdpProblem& p, const SdpMatrix& M, const std::string& name) {
  for (const auto& e : M.entries) {
    std::ostringstream where;
    where << name << " entry (block " << e.block + 1 << ", " << e.row + 1 << ", " << e.col + 1 << ")";
    if (e.block < 0 || e.block >= static_cast<int>(p.blocks.size()))
      throw DataError(where.str() + ": block index out of range (there are " +
                      std::to_string(p.blocks.size()) + " blocks)");
    const BlockSpec& blk = p.blocks[e.block];
    if (e.row < 0 || e.col < 0 || e.row >= blk.size || e.col >= blk.size)
      throw DataError(where.str() + ": index outside the block of size " + std::to_string(blk.size));
    if (e.row > e.col) throw DataError(where.str() + ": entries must be upper-triangle (row <= col)");
    if (blk.diagonal && e.row != e.col)
      throw DataError(where.str() + ": off-diagonal entry in a diagonal block");
    if (!std::isfinite(e.value)) throw DataError(where.str() + ": value is not finite");
  }
}

}  // namespace

void SdpProblem::validate() const {
  if (blocks.empty()) throw DataError("SDP has no blocks");
  // min <C, X> over X >= 0 alone has no dual to iterate on (an empty Schur complement): 0 or unbounded.
  if (num_constraints() == 0) throw DataError("SDP has no constraints");
  for (std::size_t k = 0; k < blocks.size(); ++k)
    if (blocks[k].size <= 0)
      throw DataError("SDP block " + std::to_string(k + 1) + " has size " + std::to_string(blocks[k].size));
  if (b.size() != num_constraints())
    throw DataError("SDP has " + std::to_string(num_constraints()) + " constraint matrices but " +
                    std::to_string(b.size()) + " right-hand sides");
  if (!b.allFinite()) throw DataError("SDP right-hand side b has a non-finite value");
  check_matrix(*this, C, "C");
  for (int i = 0; i < num_constraints(); ++i) check_matrix(*this, A[i], "A_" + std::to_string(i + 1));
}

BlockValues SdpProblem::zeros() const {
  BlockValues v;
  v.reserve(blocks.size());
  for (const auto& blk : blocks)
    v.push_back(blk.diagonal ? Eigen::MatrixXd::Zero(blk.size, 1) : Eigen::MatrixXd::Zero(blk.size, blk.size));
  return v;
}

BlockValues SdpProblem::identity(double scale) const {
  BlockValues v;
  v.reserve(blocks.size());
  for (const auto& blk : blocks)
    v.push_back(blk.diagonal ? Eigen::MatrixXd::Constant(blk.size, 1, scale)
                             : Eigen::MatrixXd(scale * Eigen::MatrixXd::Identity(blk.size, blk.size)));
  return v;
}

double SdpProblem::inner(const SdpMatrix& M, const BlockValues& X) const {
  double s = 0.0;
  for (const auto& e : M.entries) {
    if (blocks[e.block].diagonal) s += e.value * X[e.block](e.row, 0);
    else s += (e.row == e.col ? 1.0 : 2.0) * e.value * X[e.block](e.row, e.col);
  }
  return s;
}

void SdpProblem::accumulate(const SdpMatrix& M, double alpha, BlockValues& out) const {
  for (const auto& e : M.entries) {
    if (blocks[e.block].diagonal) {
      out[e.block](e.row, 0) += alpha * e.value;
    } else {
      out[e.block](e.row, e.col) += alpha * e.value;
      if (e.row != e.col) out[e.block](e.col, e.row) += alpha * e.value;
    }
  }
}

}  // namespace core::certify
