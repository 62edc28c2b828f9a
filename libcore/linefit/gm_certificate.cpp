// Certificate of a GM line with its free multipliers chosen by an SDP, dense or after chordal
// conversion (see gm_certificate.hpp). Requires a line whose lift is feasible (any normalised line)
// and, to be certified, an IRLS fixed point (stationary).
#include "linefit/gm_certificate.hpp"

#include <Eigen/SVD>

#include <array>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "certify/sdp_problem.hpp"
#include "common/errors.hpp"
#include "linefit/gm_qcqp.hpp"

namespace core::linefit {

namespace {

// The certificate at lambda_s + D alpha with alpha and t = y's last entry from the SDP's dual solution
// (lambda_s itself when the solution is not finite).
GmCertificate finish_certificate(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                 const GmFreeFamily& f, const certify::SdpResult& r, const char* method,
                                 const certify::CertificateOptions& options) {
  const int m = static_cast<int>(f.D.cols());
  const bool finite = r.y.size() > m && r.y.head(m + 1).allFinite();
  GmCertificate out;
  out.sdp = {r.status, finite ? r.y(m) : 0.0, r.iterations, r.seconds, m, 0, 0, graph.name};
  certify::MultiplierFit fit;
  fit.method = method;
  fit.lambda = f.lambda_s;
  if (finite) fit.lambda += f.D * r.y.head(m);
  out.certificate = certify_gm_multipliers(pts, line, sigma, graph, std::move(fit), options);
  return out;
}

// The free-multiplier SDP of certify_gm_sparse_sdp after chordal conversion.
certify::SdpProblem gm_chordal_sdp(const GmFreeFamily& f, const GmGraph& graph) {
  // Blocks: one per clique of the graph, rows {hub, z_i for i in the clique}. Every entry of the
  // pattern belongs to the first clique covering it (its value in C, B_j and -t I), and each later
  // covering clique takes a share through a split variable moving value from one covering clique to
  // the next (+ in one, - in the other), so the blocks sum to C + sum_j alpha_j B_j - t I.
  const std::int64_t nr = f.order;
  std::vector<std::vector<int>> rows(graph.cliques.size());
  std::unordered_map<std::int64_t, int> entry;
  std::vector<std::vector<std::array<int, 3>>> cover;  // entry -> (clique, local p, local q)
  certify::SdpProblem sdp;
  for (std::size_t e = 0; e < graph.cliques.size(); ++e) {
    rows[e].push_back(0);
    for (int i : graph.cliques[e])
      for (int r = 0; r < 3; ++r) rows[e].push_back(1 + 3 * i + r);
    const int d = static_cast<int>(rows[e].size());
    sdp.blocks.push_back({d, false});
    for (int p = 0; p < d; ++p)
      for (int q = p; q < d; ++q) {
        const std::int64_t lo = std::min(rows[e][p], rows[e][q]), hi = std::max(rows[e][p], rows[e][q]);
        auto [it, fresh] = entry.try_emplace(lo * nr + hi, static_cast<int>(cover.size()));
        if (fresh) cover.emplace_back();
        cover[it->second].push_back({static_cast<int>(e), p, q});
      }
  }
  auto owner = [&](int r, int c) -> const std::array<int, 3>& {
    const auto it = entry.find(static_cast<std::int64_t>(std::min(r, c)) * nr + std::max(r, c));
    if (it == entry.end()) throw std::logic_error("GM sparse SDP: Lagrangian entry outside the cliques of '" + graph.name + "'");
    return cover[it->second].front();
  };
  const int m_alpha = static_cast<int>(f.B.size()), t_var = m_alpha;
  int splits = 0;
  for (const auto& c : cover) splits += static_cast<int>(c.size()) - 1;
  sdp.A.resize(m_alpha + 1 + splits);
  for (const auto& e : f.C) {
    const auto& o = owner(e.row, e.col);
    sdp.C.add(o[0], o[1], o[2], e.value);
  }
  for (int j = 0; j < m_alpha; ++j)
    for (const auto& e : f.B[j]) {
      const auto& o = owner(e.row, e.col);
      sdp.A[j].add(o[0], o[1], o[2], -e.value);
    }
  for (int r = 0; r < f.order; ++r) {
    const auto& o = owner(r, r);
    sdp.A[t_var].add(o[0], o[1], o[2], 1.0);
  }
  int k = m_alpha + 1;
  for (const auto& c : cover)
    for (std::size_t s = 0; s + 1 < c.size(); ++s, ++k) {
      sdp.A[k].add(c[s][0], c[s][1], c[s][2], 1.0);
      sdp.A[k].add(c[s + 1][0], c[s + 1][1], c[s + 1][2], -1.0);
    }
  sdp.b = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(sdp.A.size()));
  sdp.b(t_var) = 1.0;
  return sdp;
}

}  // namespace

Eigen::SparseMatrix<double> gm_free_directions(const Eigen::VectorXd& x, const GmGraph& graph) {
  const int N = graph.n;
  if (x.size() != 3 * N + 2)
    throw DataError("GM free directions: lift of size " + std::to_string(x.size()) + " for " + std::to_string(N) + " points");
  const int E = static_cast<int>(graph.edges.size());
  std::vector<Eigen::Triplet<double>> out;
  std::vector<Eigen::Triplet<double>> t;
  for (int e = 0; e < E; ++e) {
    const auto [u, v] = graph.edges[e];
    // Multipliers touching only the hub, z_u and z_v: mu_u, mu_v and the edge's three.
    const std::array<int, 5> ks = {1 + u, 1 + v, 1 + N + 3 * e, 2 + N + 3 * e, 3 + N + 3 * e};
    const int zu = 2 + 3 * u, zv = 2 + 3 * v;
    auto local_row = [zu, zv](int r) { return r < 2 ? r : r >= zu && r < zu + 3 ? r - zu + 2 : r - zv + 5; };
    Eigen::Matrix<double, 8, 5> G = Eigen::Matrix<double, 8, 5>::Zero();
    for (int c = 0; c < 5; ++c) {
      t.clear();
      gm_append_constraint(graph, ks[c], 1.0, t);
      for (const auto& en : t) G(local_row(en.row()), c) += en.value() * x(en.col());  // A_k x
    }
    const Eigen::JacobiSVD<Eigen::Matrix<double, 8, 5>> svd(G, Eigen::ComputeFullV);
    for (int d = 0; d < 2; ++d) {
      Eigen::Matrix<double, 5, 1> v5 = svd.matrixV().col(3 + d);
      int lead = 0;  // sign convention: largest entry positive
      v5.cwiseAbs().maxCoeff(&lead);
      if (v5(lead) < 0.0) v5 = -v5;
      for (int c = 0; c < 5; ++c)
        if (v5(c) != 0.0) out.emplace_back(ks[c], 2 * e + d, v5(c));
    }
  }
  if (E > N - 1) {  // circulations of the offset force around the cycle of each non-tree edge
    const Line line = gm_line_from_lifted(x);
    std::vector<double> s(N);
    for (int i = 0; i < N; ++i) s[i] = x.segment<2>(2 + 3 * i).dot(x.head<2>());
    const GmTree tree = gm_spanning_tree(graph);
    Eigen::VectorXd flow = Eigen::VectorXd::Zero(gm_num_multipliers(graph));
    std::vector<int> cycle;
    auto carry = [&](int e, int from) {  // unit force m carried along edge e away from point `from`
      gm_add_edge_flow(graph, e, graph.edges[e][0] == from ? 1.0 : -1.0, line, s[graph.edges[e][0]],
                       s[graph.edges[e][1]], flow);
      cycle.push_back(e);
    };
    for (int e = N - 1; e < E; ++e) {
      cycle.clear();
      int u = graph.edges[e][0], v = graph.edges[e][1];
      carry(e, u);  // u -> v, then back from v to u through the tree
      while (u != v) {
        if (tree.depth[v] >= tree.depth[u]) {  // v -> parent(v)
          carry(tree.parent_edge[v], v);
          v = tree.parent[v];
        } else {  // parent(u) -> u
          carry(tree.parent_edge[u], tree.parent[u]);
          u = tree.parent[u];
        }
      }
      double norm2 = 0.0;
      for (int ce : cycle) norm2 += flow.segment<3>(1 + N + 3 * ce).squaredNorm();
      const int col = 2 * E + (e - (N - 1));
      for (int ce : cycle) {
        for (int p = 0; p < 3; ++p) {
          const int k = 1 + N + 3 * ce + p;
          if (flow(k) != 0.0) out.emplace_back(k, col, flow(k) / std::sqrt(norm2));
        }
        flow.segment<3>(1 + N + 3 * ce).setZero();
      }
    }
  }
  Eigen::SparseMatrix<double> D(gm_num_multipliers(graph), 2 * E + std::max(0, E - (N - 1)));
  D.setFromTriplets(out.begin(), out.end());
  return D;
}

GmFreeFamily gm_free_family(const Points& pts, const Line& line, double sigma, const GmGraph& graph) {
  check_fit_input(pts, "GM certificate");
  graph.validate();
  GmFreeFamily f;
  f.x = gm_lift(pts, line, sigma);
  f.lambda_s = gm_stationary_multipliers(pts, line, sigma, graph);
  f.D = gm_free_directions(f.x, graph);
  f.k0 = std::abs(f.x(0)) >= std::abs(f.x(1)) ? 0 : 1;  // the deleted row/column of H
  f.order = 3 * graph.n + 1;
  const int k0 = f.k0;
  auto reduced = [k0](int r) { return r < k0 ? r : r - 1; };
  const certify::SparseMatrixd Hs = gm_lagrangian(pts, sigma, graph, f.lambda_s);
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(f.order);
  for (int c = 0; c < Hs.outerSize(); ++c)
    for (certify::SparseMatrixd::InnerIterator it(Hs, c); it; ++it)
      if (it.row() == c && c != k0 && it.value() > 0.0) scale(reduced(c)) = 1.0 / std::sqrt(it.value());
  auto push = [&](std::vector<ReducedEntry>& out, int r, int c, double v) {
    if (r <= c && r != k0 && c != k0) out.push_back({reduced(r), reduced(c), v * scale(reduced(r)) * scale(reduced(c))});
  };
  for (int c = 0; c < Hs.outerSize(); ++c)
    for (certify::SparseMatrixd::InnerIterator it(Hs, c); it; ++it) push(f.C, static_cast<int>(it.row()), c, it.value());
  f.B.resize(f.D.cols());
  std::vector<Eigen::Triplet<double>> t;
  for (int j = 0; j < f.D.cols(); ++j) {
    t.clear();
    for (Eigen::SparseMatrix<double>::InnerIterator it(f.D, j); it; ++it)
      gm_append_constraint(graph, static_cast<int>(it.row()), -it.value(), t);  // H = Q - sum lambda_k A_k
    for (const auto& e : t) push(f.B[j], e.row(), e.col(), e.value());
  }
  return f;
}

GmCertificate certify_gm_stationary_sdp(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                        const certify::CertificateOptions& options,
                                        const certify::SdpOptions& sdp_options) {
  const GmFreeFamily f = gm_free_family(pts, line, sigma, graph);
  // max t s.t. C + sum_j alpha_j B_j - t I >= 0, in the dual form C - sum_i y_i A_i (A_j = -B_j, A_t = I).
  certify::SdpProblem sdp;
  sdp.blocks = {{f.order, false}};
  for (const auto& e : f.C) sdp.C.add(0, e.row, e.col, e.value);
  const int m = static_cast<int>(f.B.size()) + 1;
  sdp.A.resize(m);
  for (int j = 0; j + 1 < m; ++j)
    for (const auto& e : f.B[j]) sdp.A[j].add(0, e.row, e.col, -e.value);
  for (int r = 0; r < f.order; ++r) sdp.A[m - 1].add(0, r, r, 1.0);
  sdp.b = Eigen::VectorXd::Zero(m);
  sdp.b(m - 1) = 1.0;
  const certify::SdpResult r = certify::solve_sdp(std::move(sdp), sdp_options);
  GmCertificate out = finish_certificate(pts, line, sigma, graph, f, r, "stationary_sdp", options);
  out.sdp.order = f.order;
  out.sdp.constraints = m;
  return out;
}

GmCertificate certify_gm_sparse_sdp(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                    const certify::CertificateOptions& options, const certify::SdpOptions& sdp_options) {
  const GmFreeFamily f = gm_free_family(pts, line, sigma, graph);
  certify::SdpProblem sdp = gm_chordal_sdp(f, graph);
  const int order = sdp.total_size(), constraints = sdp.num_constraints();
  const certify::SdpResult r = certify::solve_sdp(std::move(sdp), sdp_options);
  GmCertificate out = finish_certificate(pts, line, sigma, graph, f, r, "sparse_sdp", options);
  out.sdp.order = order;
  out.sdp.constraints = constraints;
  return out;
}

}  // namespace core::linefit
