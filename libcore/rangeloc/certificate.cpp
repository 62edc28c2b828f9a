#include "rangeloc/certificate.hpp"

#include <cmath>
#include <limits>

namespace core::rangeloc {

namespace {

// Lifted block of state n: [theta_n (k); z_n], so k + 1 rows.
struct StateBlocks {
  SmallMatrix diag;    // H_nn
  SmallVector arrow;   // H_{n,h}
  double corner = 0;   // this state's share of H_hh (measurement terms)
};

// H_nn, H_{n,h} and the measurement part of H_hh for state n (lambda_n = 0 gives Q's blocks).
void state_blocks(const Problem& pb, int n, double lambda_n, StateBlocks& out) {
  const int d = pb.dim(), k = pb.state_size();
  out.diag.setZero(k + 1, k + 1);
  out.arrow.setZero(k + 1);
  out.corner = 0.0;
  const double w = pb.data_weight();
  SmallVector c = SmallVector::Zero(k + 1);
  c(k) = -1.0;
  for (int i = pb.first(n); i < pb.first(n + 1); ++i) {
    const auto& m = pb.measurements()[i];
    const auto a = pb.anchors().col(m.anchor);
    c.head(d) = 2.0 * a;
    const double bm = m.range * m.range - a.squaredNorm();  // residual = bm h + 2 a^T p - z
    out.diag.noalias() += w * c * c.transpose();
    out.arrow += w * bm * c;
    out.corner += w * bm * bm;
  }
  if (pb.prior() != Prior::none) {
    SmallMatrix phi, wt;
    if (n + 1 < pb.states()) {
      pb.prior_blocks(n, phi, wt);
      out.diag.topLeftCorner(k, k).noalias() += phi.transpose() * wt * phi;
    }
    if (n > 0) {
      pb.prior_blocks(n - 1, phi, wt);
      out.diag.topLeftCorner(k, k) += wt;
    }
  }
  out.diag.topLeftCorner(d, d).diagonal().array() += lambda_n;
  out.arrow(k) -= 0.5 * lambda_n;
}

// H_{n,n+1}: the prior's coupling -Phi_n^T W_n (zero rows and columns for z).
void coupling_block(const Problem& pb, int n, SmallMatrix& out) {
  const int k = pb.state_size();
  out.setZero(k + 1, k + 1);
  if (pb.prior() == Prior::none) return;
  SmallMatrix phi, wt;
  pb.prior_blocks(n, phi, wt);
  out.topLeftCorner(k, k).noalias() = -phi.transpose() * wt;
}

SmallVector lifted_state(const Problem& pb, const Eigen::VectorXd& theta, int n) {
  const int k = pb.state_size();
  SmallVector y(k + 1);
  y.head(k) = theta.segment(n * k, k);
  y(k) = pb.positions(theta, n).squaredNorm();
  return y;
}

}  // namespace

Multipliers closed_form_multipliers(const Problem& pb, const Eigen::VectorXd& theta) {
  Multipliers mult;
  mult.lambda.resize(pb.states());
  const double w = pb.data_weight();
  double qy_h = 0.0, lambda_z = 0.0;
  for (int n = 0; n < pb.states(); ++n) {
    const SmallVector p = pb.positions(theta, n);
    double sum_e = 0.0;
    for (int i = pb.first(n); i < pb.first(n + 1); ++i) {
      const auto& m = pb.measurements()[i];
      const auto a = pb.anchors().col(m.anchor);
      const double e = m.range * m.range - (a - p).squaredNorm();
      sum_e += e;
      const double term = w * (m.range * m.range - a.squaredNorm()) * e;
      qy_h += term;
      mult.rho_scale += std::abs(term);
    }
    mult.lambda(n) = -2.0 * w * sum_e;
    lambda_z += mult.lambda(n) * p.squaredNorm();
    mult.rho_scale += 0.5 * std::abs(mult.lambda(n)) * p.squaredNorm();
  }
  mult.rho = qy_h - 0.5 * lambda_z;
  return mult;
}

Certificate certify_solution(const Problem& pb, const Eigen::VectorXd& theta, const Multipliers& mult,
                             const CertificateOptions& opts) {
  Certificate cert;
  const int N = pb.states();
  cert.cost = pb.cost(theta).total();
  cert.rho = mult.rho;
  cert.rho_gap = std::abs(mult.rho - cert.cost) / std::max(std::abs(cert.cost), std::numeric_limits<double>::min());
  cert.rho_gap_rounding =
      std::abs(mult.rho - cert.cost) / std::max(std::abs(cert.cost) + mult.rho_scale, std::numeric_limits<double>::min());

  // Jacobi scaling S = diag(H)^-1/2; a non-positive diagonal entry already shows H is not PSD.
  std::vector<SmallVector> scale(N);
  StateBlocks blk;
  double corner = -mult.rho;
  cert.min_pivot = std::numeric_limits<double>::infinity();
  auto reject = [&](int n, double value, std::string why) {
    cert.min_pivot = value;
    cert.min_pivot_state = n;
    cert.reason = std::move(why);
  };
  for (int n = 0; n < N; ++n) {
    state_blocks(pb, n, mult.lambda(n), blk);
    corner += blk.corner;
    const SmallVector dg = blk.diag.diagonal();
    if (dg.minCoeff() <= 0.0 && cert.reason.empty())
      reject(n, dg.minCoeff() / dg.cwiseAbs().maxCoeff(), "non-positive diagonal entry of H at state " + std::to_string(n));
    scale[n] = dg.cwiseAbs().cwiseMax(std::numeric_limits<double>::min()).cwiseSqrt().cwiseInverse();
  }
  const double scale_h = corner > 0 ? 1.0 / std::sqrt(corner) : 1.0;
  if (corner <= 0 && cert.reason.empty()) reject(-1, corner, "non-positive diagonal entry of H at h");

  // Stationarity: r = S H y against S^-1 y, so the ratio is that of the Jacobi-scaled system.
  double r2 = 0.0, y2 = 1.0 / (scale_h * scale_h), r_h = corner;  // h = 1
  SmallMatrix up, prev_up;
  SmallVector y_prev, y_n, y_next, r;
  for (int n = 0; n < N; ++n) {
    state_blocks(pb, n, mult.lambda(n), blk);
    y_n = lifted_state(pb, theta, n);
    r = blk.diag * y_n + blk.arrow;
    if (n > 0) r.noalias() += prev_up.transpose() * y_prev;
    if (n + 1 < N) {
      coupling_block(pb, n, up);
      y_next = lifted_state(pb, theta, n + 1);
      r.noalias() += up * y_next;
      prev_up = up;
    }
    r_h += blk.arrow.dot(y_n);
    r2 += r.cwiseProduct(scale[n]).squaredNorm();
    y2 += y_n.cwiseQuotient(scale[n]).squaredNorm();
    y_prev = y_n;
  }
  r2 += (r_h * scale_h) * (r_h * scale_h);
  cert.stationarity = std::sqrt(r2 / y2);

  // Block LDL^T of the scaled arrowhead, h last: D_n = T_nn - U^T D_{n-1}^-1 U, w_n = b_n - U^T D_{n-1}^-1 w_{n-1}.
  if (cert.reason.empty()) {
    SmallMatrix d, x;  // x = D_{n-1}^-1 U_{n-1}
    SmallVector wv, xw;
    double schur = corner * scale_h * scale_h;
    for (int n = 0; n < N; ++n) {
      state_blocks(pb, n, mult.lambda(n), blk);
      d = scale[n].asDiagonal() * blk.diag * scale[n].asDiagonal();
      wv = scale[n].cwiseProduct(blk.arrow) * scale_h;
      if (n > 0) {
        d.noalias() -= up.transpose() * x;
        wv.noalias() -= up.transpose() * xw;
      }
      Eigen::LDLT<SmallMatrix> ldlt(d);
      const double pivot = ldlt.vectorD().minCoeff();
      if (pivot < cert.min_pivot) {
        cert.min_pivot = pivot;
        cert.min_pivot_state = n;
      }
      if (!(pivot > 0.0)) {
        cert.reason = "H is not positive semidefinite: pivot " + std::to_string(pivot) + " at state " + std::to_string(n);
        break;
      }
      xw = ldlt.solve(wv);
      schur -= wv.dot(xw);
      if (n + 1 < N) {
        coupling_block(pb, n, up);
        up = scale[n].asDiagonal() * up * scale[n + 1].asDiagonal();
        x = ldlt.solve(up);
      }
    }
    cert.schur_h = schur;
  }
  if (cert.reason.empty()) {
    if (cert.stationarity > opts.stationarity_tol)
      cert.reason = "not a stationary point: relative ||H y|| = " + std::to_string(cert.stationarity);
    else if (cert.rho_gap_rounding > opts.rho_tol)
      cert.reason = "rho and cost disagree: gap " + std::to_string(cert.rho_gap) + " of the cost, " +
                    std::to_string(cert.rho_gap_rounding) + " of the terms that make up rho";
    else if (cert.min_pivot <= opts.pivot_tol)
      cert.reason = "smallest relative pivot " + std::to_string(cert.min_pivot) + " at state " +
                    std::to_string(cert.min_pivot_state) + " is not above pivot_tol";
    else if (cert.schur_h < -opts.stationarity_tol)
      cert.reason = "negative Schur complement of h: " + std::to_string(cert.schur_h);
  }
  cert.certified = cert.reason.empty();
  return cert;
}

Eigen::VectorXd lift(const Problem& pb, const Eigen::VectorXd& theta) {
  const int s = pb.state_size() + 1;
  Eigen::VectorXd y(1 + pb.states() * s);
  y(0) = 1.0;
  for (int n = 0; n < pb.states(); ++n) y.segment(1 + n * s, s) = lifted_state(pb, theta, n);
  return y;
}

// Reference assembly straight from the definitions (one rank-one term per range, the prior's
// quadratic form in [theta_n; theta_n+1]), independent of the block sweep above.
Eigen::SparseMatrix<double> lifted_cost_matrix(const Problem& pb) {
  const int d = pb.dim(), k = pb.state_size(), s = k + 1, dim = 1 + pb.states() * s;
  std::vector<Eigen::Triplet<double>> t;
  for (const auto& m : pb.measurements()) {
    const auto a = pb.anchors().col(m.anchor);
    std::vector<std::pair<int, double>> c{{0, m.range * m.range - a.squaredNorm()}, {1 + m.state * s + k, -1.0}};
    for (int i = 0; i < d; ++i) c.push_back({1 + m.state * s + i, 2.0 * a(i)});
    for (const auto& [i, ci] : c)
      for (const auto& [j, cj] : c) t.emplace_back(i, j, pb.data_weight() * ci * cj);
  }
  if (pb.prior() != Prior::none) {
    SmallMatrix phi, wt;
    for (int n = 0; n + 1 < pb.states(); ++n) {
      pb.prior_blocks(n, phi, wt);
      Eigen::MatrixXd g(k, 2 * k);  // u = g [theta_n; theta_n+1]
      g << -phi, Eigen::MatrixXd::Identity(k, k);
      const Eigen::MatrixXd block = g.transpose() * wt * g;
      auto index = [&](int i) { return i < k ? 1 + n * s + i : 1 + (n + 1) * s + (i - k); };
      for (int i = 0; i < 2 * k; ++i)
        for (int j = 0; j < 2 * k; ++j) t.emplace_back(index(i), index(j), block(i, j));
    }
  }
  Eigen::SparseMatrix<double> q(dim, dim);
  q.setFromTriplets(t.begin(), t.end());
  return q;
}

certify::Qcqp lifted_qcqp(const Problem& pb) {
  const int d = pb.dim(), s = pb.state_size() + 1, dim = 1 + pb.states() * s;
  certify::Qcqp qcqp;
  qcqp.Q = lifted_cost_matrix(pb);
  Eigen::SparseMatrix<double> a0(dim, dim);
  a0.insert(0, 0) = 1.0;
  qcqp.A0 = a0;
  for (int n = 0; n < pb.states(); ++n) {  // h z_n - ||p_n||^2 = 0
    std::vector<Eigen::Triplet<double>> t{{0, 1 + n * s + s - 1, 0.5}, {1 + n * s + s - 1, 0, 0.5}};
    for (int i = 0; i < d; ++i) t.emplace_back(1 + n * s + i, 1 + n * s + i, -1.0);
    Eigen::SparseMatrix<double> an(dim, dim);
    an.setFromTriplets(t.begin(), t.end());
    qcqp.constraints.push_back({an, 0.0, "z_" + std::to_string(n)});
  }
  return qcqp;
}

Eigen::SparseMatrix<double> certificate_matrix(const Problem& pb, const Multipliers& mult) {
  Eigen::VectorXd lambda(1 + pb.states());
  lambda(0) = mult.rho;
  lambda.tail(pb.states()) = mult.lambda;
  return lifted_qcqp(pb).lagrangian(lambda);
}

}  // namespace core::rangeloc
