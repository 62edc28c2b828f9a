// Certificate of a GM line with its free chain multipliers chosen by a small SDP (see
// gm_certificate.hpp). Requires a line whose lift is feasible (any normalised line) and, to be
// certified, an IRLS fixed point (stationary).
#include "linefit/gm_certificate.hpp"

#include <Eigen/SVD>

#include <array>
#include <vector>

#include "certify/sdp_problem.hpp"
#include "common/errors.hpp"
#include "linefit/gm_qcqp.hpp"

namespace core::linefit {

Eigen::SparseMatrix<double> gm_free_directions(const Eigen::VectorXd& x) {
  const int N = static_cast<int>((x.size() - 2) / 3);
  std::vector<Eigen::Triplet<double>> out;
  std::vector<Eigen::Triplet<double>> t;
  for (int i = 0; i + 1 < N; ++i) {
    // Multipliers touching only the hub, z_i and z_{i+1}: mu_i, mu_{i+1} and the pair's three.
    const std::array<int, 5> ks = {1 + i, 2 + i, 1 + N + 3 * i, 2 + N + 3 * i, 3 + N + 3 * i};
    const int zi = 2 + 3 * i;
    auto local_row = [zi](int r) { return r < 2 ? r : r - zi + 2; };  // hub 0-1, z_i 2-4, z_{i+1} 5-7
    Eigen::Matrix<double, 8, 5> G = Eigen::Matrix<double, 8, 5>::Zero();
    for (int c = 0; c < 5; ++c) {
      t.clear();
      gm_append_constraint(N, ks[c], 1.0, t);
      for (const auto& e : t) G(local_row(e.row()), c) += e.value() * x(e.col());  // A_k x
    }
    const Eigen::JacobiSVD<Eigen::Matrix<double, 8, 5>> svd(G, Eigen::ComputeFullV);
    for (int d = 0; d < 2; ++d) {
      Eigen::Matrix<double, 5, 1> v = svd.matrixV().col(3 + d);
      int lead = 0;  // sign convention: largest entry positive
      v.cwiseAbs().maxCoeff(&lead);
      if (v(lead) < 0.0) v = -v;
      for (int c = 0; c < 5; ++c)
        if (v(c) != 0.0) out.emplace_back(ks[c], 2 * i + d, v(c));
    }
  }
  Eigen::SparseMatrix<double> D(gm_chain_multipliers(N), 2 * std::max(0, N - 1));
  D.setFromTriplets(out.begin(), out.end());
  return D;
}

GmCertificate certify_gm_stationary_sdp(const Points& pts, const Line& line, double sigma,
                                        const certify::CertificateOptions& options,
                                        const certify::SdpOptions& sdp_options) {
  check_fit_input(pts, "GM certificate");
  const int N = static_cast<int>(pts.size()), n = 3 * N + 2;
  const Eigen::VectorXd x = gm_lift(pts, line, sigma);
  const Eigen::VectorXd lambda_s = gm_stationary_multipliers(pts, line, sigma, false);
  const Eigen::SparseMatrix<double> D = gm_free_directions(x);
  const int k0 = std::abs(x(0)) >= std::abs(x(1)) ? 0 : 1;  // the deleted row/column of H
  auto reduced = [k0](int r) { return r < k0 ? r : r - 1; };

  // max t s.t. H_r(lambda_s) - sum_j mu_j (sum_k D_kj A_k)_r - t I >= 0 (dual form C - sum y_i A_i).
  certify::SdpProblem sdp;
  sdp.blocks = {{n - 1, false}};
  const certify::SparseMatrixd Hs = gm_lagrangian(pts, sigma, lambda_s);
  for (int c = 0; c < Hs.outerSize(); ++c)
    for (certify::SparseMatrixd::InnerIterator it(Hs, c); it; ++it)
      if (it.row() <= c && it.row() != k0 && c != k0) sdp.C.add(0, reduced(it.row()), reduced(c), it.value());
  const int m = static_cast<int>(D.cols()) + 1;
  sdp.A.resize(m);
  std::vector<Eigen::Triplet<double>> t;
  for (int j = 0; j + 1 < m; ++j) {
    t.clear();
    for (Eigen::SparseMatrix<double>::InnerIterator it(D, j); it; ++it)
      gm_append_constraint(N, static_cast<int>(it.row()), it.value(), t);
    for (const auto& e : t)
      if (e.row() <= e.col() && e.row() != k0 && e.col() != k0)
        sdp.A[j].add(0, reduced(e.row()), reduced(e.col()), e.value());
  }
  for (int r = 0; r + 1 < n; ++r) sdp.A[m - 1].add(0, r, r, 1.0);
  sdp.b = Eigen::VectorXd::Zero(m);
  sdp.b(m - 1) = 1.0;

  GmCertificate out;
  const certify::SdpResult r = certify::solve_sdp(sdp, sdp_options);
  out.sdp = {r.status, r.y.size() == m ? r.y(m - 1) : 0.0, r.iterations, r.seconds, m - 1, n - 1};
  certify::MultiplierFit fit;
  fit.method = "stationary_sdp";
  fit.lambda = lambda_s;
  if (r.y.size() == m && r.y.allFinite()) fit.lambda += D * r.y.head(m - 1);
  out.certificate = certify_gm_multipliers(pts, line, sigma, std::move(fit), options);
  return out;
}

}  // namespace core::linefit
