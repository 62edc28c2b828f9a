// Lifted Geman-McClure QCQP, lifting and certificate (see gm_qcqp.hpp).
#include "linefit/gm_qcqp.hpp"

#include <cmath>

#include "common/errors.hpp"

namespace core::linefit {

namespace {

constexpr int kPairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};

// The symmetric matrix K with x^T K x = u_p v_q - u_q v_p for vectors at offsets u, v of x.
certify::SparseMatrixd antisym_selector(int n, int u, int v, int p, int q) {
  std::vector<Eigen::Triplet<double>> t = {{u + p, v + q, 0.5}, {v + q, u + p, 0.5},
                                           {u + q, v + p, -0.5}, {v + p, u + q, -0.5}};
  certify::SparseMatrixd K(n, n);
  K.setFromTriplets(t.begin(), t.end());
  return K;
}

int z_offset(int i) { return 2 + 3 * i; }


// Triplets of Q (both triangles): the cost blocks of each point and their coupling to n = (a, b).
void append_cost(const Points& pts, double sigma, std::vector<Eigen::Triplet<double>>& t) {
  const int N = static_cast<int>(pts.size());
  const double inv = 1.0 / N, s2 = sigma * sigma;
  for (int i = 0; i < N; ++i) {
    const int z = z_offset(i);
    const double q[3] = {pts.x[i], pts.y[i], -1.0};
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) t.emplace_back(z + r, z + c, inv * q[r] * q[c]);
    for (int r = 0; r < 2; ++r) {
      t.emplace_back(z + r, z + r, inv * s2);
      t.emplace_back(z + r, r, -inv * s2);
      t.emplace_back(r, z + r, -inv * s2);
      t.emplace_back(r, r, inv * s2);
    }
  }
}

void check_sigma(double sigma) {
  if (!(sigma > 0.0) || !std::isfinite(sigma)) throw UsageError("sigma must be > 0 and finite");
}

void check_graph(const Points& pts, const GmGraph& g) {
  if (g.n != static_cast<int>(pts.size()))
    throw DataError("GM constraint graph '" + g.name + "' has " + std::to_string(g.n) + " points, the data " +
                    std::to_string(pts.size()));
}

}  // namespace

certify::Qcqp gm_qcqp(const Points& pts, double sigma, const GmGraph& graph) {
  check_fit_input(pts, "GM QCQP");
  check_sigma(sigma);
  check_graph(pts, graph);
  graph.validate();
  const int N = static_cast<int>(pts.size()), n = 3 * N + 2;
  std::vector<Eigen::Triplet<double>> t;
  append_cost(pts, sigma, t);
  certify::SparseMatrixd Q(n, n), A0(n, n);
  Q.setFromTriplets(t.begin(), t.end());
  A0.insert(0, 0) = 1.0;
  A0.insert(1, 1) = 1.0;
  certify::Qcqp qcqp;
  qcqp.Q = Q;
  qcqp.A0 = A0;
  for (int i = 0; i < N; ++i)  // z_{i,a} b - z_{i,b} a = 0
    qcqp.constraints.push_back({antisym_selector(n, z_offset(i), 0, 0, 1), 0.0,
                                "z_" + std::to_string(i) + " normal || n"});
  for (const auto& [u, v] : graph.edges)
    for (const auto& pq : kPairs)
      qcqp.constraints.push_back({antisym_selector(n, z_offset(u), z_offset(v), pq[0], pq[1]), 0.0,
                                  "z_" + std::to_string(u) + " || z_" + std::to_string(v)});
  return qcqp;
}

Eigen::VectorXd gm_lift(const Points& pts, const Line& line, double sigma) {
  const int N = static_cast<int>(pts.size());
  const double s2 = sigma * sigma;
  const Eigen::Vector3d l(line.a, line.b, line.c);
  Eigen::VectorXd x(3 * N + 2);
  x(0) = line.a;
  x(1) = line.b;
  for (int i = 0; i < N; ++i) {
    const double e = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
    x.segment<3>(z_offset(i)) = s2 / (s2 + e * e) * l;
  }
  return x;
}

Line gm_line_from_lifted(const Eigen::VectorXd& x) {
  const int N = static_cast<int>((x.size() - 2) / 3);
  const Eigen::Vector2d n = x.head<2>();
  int best = 0;
  double best_s = -1.0;
  for (int i = 0; i < N; ++i) {
    const double s = x.segment<2>(z_offset(i)).dot(n);
    if (s > best_s) best_s = s, best = i;
  }
  if (!(best_s > 0.0)) throw DataError("lifted GM vector has no point with a positive weight");
  return normalise_line(n(0), n(1), x(z_offset(best) + 2) / best_s);
}

void gm_add_edge_flow(const GmGraph& g, int e, double F, const Line& line, double s_u, double s_v,
                      Eigen::VectorXd& lambda) {
  const Eigen::Vector3d l(line.a, line.b, line.c);
  const Eigen::Vector3d m(line.c * line.a, line.c * line.b, -1.0);  // (c n, -1), orthogonal to l and u
  const Eigen::Vector3d omega = l.cross(2.0 * F * m / (s_u * s_v)) / l.squaredNorm();
  const int k = 1 + g.n + 3 * e;
  lambda(k) -= omega(2);     // (a, b)
  lambda(k + 1) += omega(1); // (a, c)
  lambda(k + 2) -= omega(0); // (b, c)
}

Eigen::VectorXd gm_stationary_multipliers(const Points& pts, const Line& line, double sigma, const GmGraph& graph) {
  check_graph(pts, graph);
  const int N = static_cast<int>(pts.size());
  const double w = 1.0 / N, s2 = sigma * sigma;
  std::vector<double> s(N), force(N);
  double s_mean = 0.0, total = 0.0;
  for (int i = 0; i < N; ++i) {
    const double e = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
    s[i] = s2 / (s2 + e * e);
    force[i] = w * s[i] * s[i] * e;  // s_i tau_i / N: offset force of point i along m
    s_mean += w * s[i];
    total += force[i];
  }
  Eigen::VectorXd lambda = Eigen::VectorXd::Zero(gm_num_multipliers(graph));
  lambda(0) = s2 * (1.0 - s_mean);
  for (int i = 0; i < N; ++i) {
    const double e = line.a * pts.x[i] + line.b * pts.y[i] - line.c;
    const double r = -line.b * pts.x[i] + line.a * pts.y[i];  // position along the line
    lambda(1 + i) = -2.0 * w * s[i] * e * r;
  }
  // Subtree sums of the forces; tree edge (u, v) carries the sum over u's side from u to v.
  const GmTree tree = gm_spanning_tree(graph);
  std::vector<double> sub(force);
  for (int k = N - 1; k > 0; --k) sub[tree.parent[tree.order[k]]] += sub[tree.order[k]];
  for (int k = 1; k < N; ++k) {
    const int child = tree.order[k], e = tree.parent_edge[child];
    const auto [u, v] = graph.edges[e];
    const double F = child == v ? total - sub[v] : sub[u];
    gm_add_edge_flow(graph, e, F, line, s[u], s[v], lambda);
  }
  return lambda;
}

void gm_append_constraint(const GmGraph& g, int k, double weight, std::vector<Eigen::Triplet<double>>& t) {
  auto antisym = [&t, weight](int u, int v, int p, int q) {  // weight times antisym_selector
    const double h = 0.5 * weight;
    t.emplace_back(u + p, v + q, h), t.emplace_back(v + q, u + p, h);
    t.emplace_back(u + q, v + p, -h), t.emplace_back(v + p, u + q, -h);
  };
  if (k == 0) {
    t.emplace_back(0, 0, weight);
    t.emplace_back(1, 1, weight);
  } else if (k <= g.n) {
    antisym(z_offset(k - 1), 0, 0, 1);
  } else {
    const int e = (k - 1 - g.n) / 3, p = (k - 1 - g.n) % 3;
    antisym(z_offset(g.edges[e][0]), z_offset(g.edges[e][1]), kPairs[p][0], kPairs[p][1]);
  }
}

certify::SparseMatrixd gm_lagrangian(const Points& pts, double sigma, const GmGraph& graph, const Eigen::VectorXd& lambda) {
  check_fit_input(pts, "GM Lagrangian");
  check_sigma(sigma);
  check_graph(pts, graph);
  const int N = static_cast<int>(pts.size()), n = 3 * N + 2;
  if (lambda.size() != gm_num_multipliers(graph))
    throw DataError("GM Lagrangian: " + std::to_string(lambda.size()) + " multipliers, expected " +
                    std::to_string(gm_num_multipliers(graph)) + " for graph '" + graph.name + "'");
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(static_cast<std::size_t>(21) * N + 12 * graph.edges.size());
  append_cost(pts, sigma, t);
  for (int k = 0; k < lambda.size(); ++k)
    if (lambda(k) != 0.0 || k == 0) gm_append_constraint(graph, k, -lambda(k), t);
  certify::SparseMatrixd H(n, n);
  H.setFromTriplets(t.begin(), t.end());
  return H;
}

certify::Certificate certify_gm_multipliers(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                            certify::MultiplierFit fit, const certify::CertificateOptions& options) {
  const int N = static_cast<int>(pts.size());
  const Eigen::VectorXd x = gm_lift(pts, line, sigma);
  const certify::SparseMatrixd H = gm_lagrangian(pts, sigma, graph, fit.lambda);
  const Eigen::VectorXd Qx = gm_lagrangian(pts, sigma, graph, Eigen::VectorXd::Zero(fit.lambda.size())) * x;
  fit.residual = (H * x).norm() / (1.0 + Qx.norm());
  // Constraint violation of the lift (feasible up to rounding): n^T n = 1, z_i's normal || n, edges.
  double violation = std::abs(x.head<2>().squaredNorm() - 1.0);
  for (int i = 0; i < N; ++i) {
    const Eigen::Vector3d z = x.segment<3>(z_offset(i));
    violation = std::max(violation, std::abs(z(0) * x(1) - z(1) * x(0)));
  }
  for (const auto& [u, v] : graph.edges) {
    const Eigen::Vector3d zu = x.segment<3>(z_offset(u)), zv = x.segment<3>(z_offset(v));
    violation = std::max(violation, zu.cross(zv).cwiseAbs().maxCoeff());
  }
  const double dual = fit.lambda(0);  // d(lambda) = lambda_0: every other constraint has b = 0
  return certify::certify_lagrangian(H, x.dot(Qx), dual, violation, std::move(fit), options);
}

certify::Certificate certify_gm_closed_form(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                            const certify::CertificateOptions& options) {
  certify::MultiplierFit fit;
  fit.method = "closed_form";
  fit.lambda = gm_stationary_multipliers(pts, line, sigma, graph);
  return certify_gm_multipliers(pts, line, sigma, graph, std::move(fit), options);
}

certify::Certificate certify_gm(const Points& pts, const Line& line, double sigma, const GmGraph& graph,
                                const certify::CertificateOptions& options) {
  return certify::certify(gm_qcqp(pts, sigma, graph), gm_lift(pts, line, sigma), options);
}

}  // namespace core::linefit
