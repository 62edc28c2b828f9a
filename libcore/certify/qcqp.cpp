// QCQP storage, Lagrangian and Shor relaxation (see qcqp.hpp). Inputs: symmetric matrices of one
// common size; validate() enforces it.
#include "certify/qcqp.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"

namespace core::certify {

int SymMatrix::rows() const {
  return std::visit([](const auto& m) { return static_cast<int>(m.rows()); }, m_);
}
int SymMatrix::cols() const {
  return std::visit([](const auto& m) { return static_cast<int>(m.cols()); }, m_);
}
double SymMatrix::quad(const Eigen::VectorXd& x) const {
  return std::visit([&](const auto& m) { return x.dot(m * x); }, m_);
}
Eigen::VectorXd SymMatrix::apply(const Eigen::VectorXd& x) const {
  return std::visit([&](const auto& m) -> Eigen::VectorXd { return m * x; }, m_);
}
Eigen::MatrixXd SymMatrix::dense() const {
  if (is_sparse()) return Eigen::MatrixXd(std::get<SparseMatrixd>(m_));
  return std::get<Eigen::MatrixXd>(m_);
}
SparseMatrixd SymMatrix::sparse() const {
  if (is_sparse()) return std::get<SparseMatrixd>(m_);
  return std::get<Eigen::MatrixXd>(m_).sparseView();
}
double SymMatrix::frobenius_norm() const {
  return std::visit([](const auto& m) { return m.norm(); }, m_);
}
bool SymMatrix::all_finite() const {
  if (is_sparse()) {
    const auto& s = std::get<SparseMatrixd>(m_);
    return Eigen::Map<const Eigen::VectorXd>(s.valuePtr(), s.nonZeros()).allFinite();
  }
  return std::get<Eigen::MatrixXd>(m_).allFinite();
}
double SymMatrix::asymmetry() const {
  if (is_sparse()) {
    const auto& s = std::get<SparseMatrixd>(m_);
    const SparseMatrixd d = s - SparseMatrixd(s.transpose());
    double worst = 0.0;
    for (int k = 0; k < d.outerSize(); ++k)
      for (SparseMatrixd::InnerIterator it(d, k); it; ++it) worst = std::max(worst, std::abs(it.value()));
    return worst;
  }
  const auto& m = std::get<Eigen::MatrixXd>(m_);
  return (m - m.transpose()).cwiseAbs().maxCoeff();
}

void SymMatrix::append_triplets(std::vector<Eigen::Triplet<double>>& out, double alpha) const {
  if (alpha == 0.0) return;
  if (is_sparse()) {
    const auto& s = std::get<SparseMatrixd>(m_);
    for (int k = 0; k < s.outerSize(); ++k)
      for (SparseMatrixd::InnerIterator it(s, k); it; ++it)
        out.emplace_back(static_cast<int>(it.row()), static_cast<int>(it.col()), alpha * it.value());
    return;
  }
  const auto& m = std::get<Eigen::MatrixXd>(m_);
  for (int j = 0; j < m.cols(); ++j)
    for (int i = 0; i < m.rows(); ++i)
      if (m(i, j) != 0.0) out.emplace_back(i, j, alpha * m(i, j));
}

void SymMatrix::append_upper(SdpMatrix& out) const {
  if (is_sparse()) {
    const auto& s = std::get<SparseMatrixd>(m_);
    for (int k = 0; k < s.outerSize(); ++k)
      for (SparseMatrixd::InnerIterator it(s, k); it; ++it)
        if (it.row() <= it.col() && it.value() != 0.0)
          out.add(0, static_cast<int>(it.row()), static_cast<int>(it.col()), it.value());
    return;
  }
  const auto& m = std::get<Eigen::MatrixXd>(m_);
  for (int j = 0; j < m.cols(); ++j)
    for (int i = 0; i <= j; ++i)
      if (m(i, j) != 0.0) out.add(0, i, j, m(i, j));
}

void Qcqp::validate() const {
  const int n = Q.rows();
  auto check = [n](const SymMatrix& M, const std::string& name) {
    if (M.rows() != M.cols())
      throw DataError("QCQP matrix " + name + " is not square (" + std::to_string(M.rows()) + "x" +
                      std::to_string(M.cols()) + ")");
    if (M.rows() != n)
      throw DataError("QCQP matrix " + name + " has size " + std::to_string(M.rows()) + ", the cost has " +
                      std::to_string(n));
    if (!M.all_finite()) throw DataError("QCQP matrix " + name + " has a non-finite entry");
    if (M.asymmetry() > 1e-12 * (1.0 + M.frobenius_norm()))
      throw DataError("QCQP matrix " + name + " is not symmetric");
  };
  if (n == 0) throw DataError("QCQP has an empty cost matrix");
  check(Q, "Q");
  check(A0, "A_0");
  for (std::size_t i = 0; i < constraints.size(); ++i) {
    const auto& c = constraints[i];
    const std::string name = "A_" + std::to_string(i + 1) + (c.name.empty() ? "" : " (" + c.name + ")");
    check(c.A, name);
    if (!std::isfinite(c.b)) throw DataError("QCQP right-hand side of " + name + " is not finite");
  }
}

double Qcqp::constraint_violation(const Eigen::VectorXd& x) const {
  double worst = std::abs(A0.quad(x) - 1.0);
  for (const auto& c : constraints) worst = std::max(worst, std::abs(c.A.quad(x) - c.b));
  return worst;
}

SparseMatrixd Qcqp::lagrangian(const Eigen::VectorXd& lambda) const {
  std::vector<Eigen::Triplet<double>> t;
  Q.append_triplets(t, 1.0);
  A0.append_triplets(t, -lambda(0));
  for (std::size_t i = 0; i < constraints.size(); ++i) constraints[i].A.append_triplets(t, -lambda(i + 1));
  SparseMatrixd H(dim(), dim());
  H.setFromTriplets(t.begin(), t.end());
  return H;
}

double Qcqp::dual_value(const Eigen::VectorXd& lambda) const {
  double d = lambda(0);
  for (std::size_t i = 0; i < constraints.size(); ++i) d += lambda(i + 1) * constraints[i].b;
  return d;
}

SdpProblem shor_relaxation(const Qcqp& q) {
  q.validate();
  SdpProblem p;
  p.blocks = {{q.dim(), false}};
  q.Q.append_upper(p.C);
  p.A.resize(q.num_multipliers());
  p.b.resize(q.num_multipliers());
  q.A0.append_upper(p.A[0]);
  p.b(0) = 1.0;
  for (std::size_t i = 0; i < q.constraints.size(); ++i) {
    q.constraints[i].A.append_upper(p.A[i + 1]);
    p.b(i + 1) = q.constraints[i].b;
  }
  return p;
}

}  // namespace core::certify
