// The `tls-fit fit` job (see fit_job.hpp).
#include "linefit/fit_job.hpp"

#include <cmath>
#include <sstream>

#include "certify/relaxation.hpp"
#include "certify/sdpa.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/memory.hpp"
#include "linefit/gm.hpp"
#include "linefit/gm_certificate.hpp"
#include "linefit/gm_chordal.hpp"
#include "linefit/gm_graph.hpp"
#include "linefit/gm_qcqp.hpp"

namespace core::linefit {

void FitOptions::validate() const {
  if (!input.empty() && !points.empty())
    throw UsageError("config keys 'input' and 'points' are exclusive: give the points one way");
  if (!candidate.empty()) parse_candidate(candidate, "candidate");
  if (init_angle && !std::isfinite(*init_angle))  // YAML's .inf is a double; the start line would be NaN
    throw UsageError("config key 'init_angle': must be a finite angle in radians");
  if (mode == "tls" && solver == "irls")
    throw UsageError("config key 'solver': irls needs mode gm (plain TLS has the closed form: solver eig)");
  if (mode == "gm" && solver == "eig")
    throw UsageError("config key 'solver': eig is plain TLS only; mode gm uses irls or sdp");
}

Line parse_candidate(const std::string& text, const std::string& key) {
  std::vector<double> v;
  std::stringstream ss(text);
  std::string field;
  while (std::getline(ss, field, ',')) {
    try {
      std::size_t used = 0;
      v.push_back(std::stod(field, &used));
      if (field.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument(field);
    } catch (const std::exception&) {
      throw UsageError("config key '" + key + "': '" + field + "' is not a number (expected a,b,c)");
    }
  }
  if (v.size() != 3) throw UsageError("config key '" + key + "': expected three numbers a,b,c, got '" + text + "'");
  try {
    return normalise_line(v[0], v[1], v[2]);
  } catch (const DataError& e) {
    throw UsageError("config key '" + key + "': " + e.what());
  }
}

nlohmann::json FitResult::to_json() const {
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& [name, t] : times.times()) stages[name] = t;
  nlohmann::json j = {{"mode", mode},
                      {"solver", solver},
                      {"source", source},
                      {"n", points.size()},
                      {"a", line.a},
                      {"b", line.b},
                      {"c", line.c},
                      {"candidate", from_candidate},
                      {"cost", certificate.cost},
                      {"dual", certificate.dual},
                      {"gap", certificate.gap()},
                      {"lambda_min", certificate.lambda_min},
                      {"stationarity", certificate.stationarity},
                      {"certified", certificate.certified},
                      {"certificate_detail", certificate.detail},
                      {"times_s", stages},
                      {"peak_rss_mib", peak_rss_mib()}};
  if (certificate.eta_bound) j["eta_bound"] = *certificate.eta_bound;
  if (mode == "gm") {
    j["sigma"] = sigma;
    std::size_t inliers = 0;
    for (double w : weights) inliers += w > 0.25;  // s_i > 1/2, i.e. |e_i| < sigma
    j["inliers"] = inliers;
    if (solver == "irls") j["irls_iterations"] = irls_iterations;
  }
  if (tight) j["tight"] = *tight;
  if (better) j["better_line"] = {{"a", better->line.a}, {"b", better->line.b}, {"c", better->line.c}, {"cost", better->cost}};
  if (!sdp.is_null()) j["sdp"] = sdp;
  if (!multipliers.empty()) j["multipliers"] = multipliers;
  if (!graph.empty()) j["graph"] = {{"name", graph}, {"edges", graph_edges}, {"tried", graphs_tried}};
  if (!multiplier_sdp.is_null()) j["multiplier_sdp"] = multiplier_sdp;
  if (global_cost) {
    j["global_cost"] = *global_cost;
    j["global_line"] = {global_line->a, global_line->b, global_line->c};
    j["verified"] = verified();
  }
  return j;
}

bool FitResult::verified() const {
  return !global_cost || certificate.cost <= *global_cost + 1e-9 * (1.0 + std::abs(*global_cost));
}

namespace {

certify::Qcqp tls_qcqp(const Eigen::Matrix3d& Q) {
  certify::Qcqp q;
  q.Q = Eigen::MatrixXd(Q);
  q.A0 = Eigen::MatrixXd(Eigen::Vector3d(1, 1, 0).asDiagonal());
  return q;
}

// The title of an exported relaxation says in which frame its line variables are.
std::string centred_note(const Eigen::Vector2d& origin) {
  std::ostringstream os;
  os.precision(17);
  os << " (coordinates relative to the points' centroid (" << origin.x() << ", " << origin.y() << "))";
  return os.str();
}

nlohmann::json relaxation_json(const certify::RelaxationResult& r) {
  return {{"status", certify::to_string(r.sdp.status)},
          {"value", r.sdp_value},
          {"dual", r.sdp.dual_objective},
          {"eigen_ratio", r.eigen_ratio},
          {"rank", r.numerical_rank},
          {"relative_gap", r.relative_gap},
          {"iterations", r.sdp.iterations},
          {"seconds", r.sdp.seconds}};
}

}  // namespace

std::string resolve_multipliers(const std::string& choice) { return choice == "auto" ? "sparse_sdp" : choice; }

namespace {

nlohmann::json certificate_search_json(const GmMultiplierSdp& g) {
  return {{"status", certify::to_string(g.status)}, {"t", g.t}, {"iterations", g.iterations},
          {"seconds", g.seconds}, {"free_directions", g.free_directions}, {"order", g.order},
          {"constraints", g.constraints}};
}

nlohmann::json certificate_search_json(const GmChordalResult& g) {
  return {{"t", g.t}, {"residual", g.residual}, {"proven", g.proven}, {"converged", g.converged},
          {"iterations", g.iterations}, {"seconds", g.seconds}, {"cliques", g.cliques}};
}

// The GM constraint graph: all pairs with `redundant`, else blocks of b points in data order (b = 1:
// the chain), or (graph balanced, when a line is known) the balanced graph built at that line.
GmGraph constraint_graph(const FitOptions& opts, const Points& pts, const Line* line, int b) {
  const int n = static_cast<int>(pts.size());
  if (opts.redundant) return gm_all_pairs_graph(n);
  if (opts.graph == "balanced" && line) return gm_balanced_graph(pts, *line, opts.sigma, b);
  std::vector<int> order(pts.size());
  for (int i = 0; i < n; ++i) order[i] = i;
  GmGraph g = b == 1 ? gm_band_graph(order, 1) : gm_block_graph(order, b);
  g.name += " (data order)";
  return g;
}

// Block sizes to try: the given one, or (0) 1, 2 and 4 until one certifies.
std::vector<int> block_sizes(const FitOptions& opts) {
  if (opts.redundant || opts.block > 0) return {std::max(1, opts.block)};
  return {1, 2, 4};
}

// The certificate of r.line on one graph with the chosen multipliers; the search's figures go to
// `search` (JSON) and `text` (for the detail line).
certify::Certificate certify_on_graph(const FitOptions& opts, FitResult& r, const GmGraph& graph,
                                      const std::optional<certify::RelaxationResult>& relax,
                                      const std::optional<GmGraph>& solve_graph, nlohmann::json& search, std::string& text) {
  certify::Qcqp qcqp;
  const bool generic = r.multipliers == "least_squares" || r.multipliers == "sdp";
  if (generic) {
    auto t = r.times.scope("build");
    qcqp = gm_qcqp(r.points, opts.sigma, graph);
  }
  std::optional<certify::RelaxationResult> cert_relax;
  if (r.multipliers == "sdp") {  // the dual of the relaxation on the certificate's graph
    auto t = r.times.scope("sdp");
    if (relax && solve_graph && solve_graph->edges == graph.edges) {
      cert_relax = relax;
    } else {
      cert_relax = certify::solve_relaxation(qcqp);
      if (!relax) {
        r.tight = cert_relax->tight;
        r.sdp = relaxation_json(*cert_relax);
      }
    }
  }
  auto t = r.times.scope("certify");
  certify::CertificateOptions co;
  co.eta_rel = std::max(opts.tol, 1e-15);
  co.lanczos.full_reorthogonalization = 3 * r.points.size() + 2 <= 20000;
  co.lanczos.max_steps = 3 * r.points.size() + 2 <= 20000 ? 300 : 100;
  if (r.multipliers == "stationary_sdp" || r.multipliers == "sparse_sdp") {
    certify::SdpOptions so;
    so.target = 0.0;  // only the sign of t* matters: stop once an iterate shows it
    so.memory_limit_bytes = opts.memory_gb > 0.0 ? static_cast<std::uint64_t>(opts.memory_gb * 1e9)
                                                 : available_memory_bytes() / 10 * 9;
    GmCertificate g = r.multipliers == "sparse_sdp" ? certify_gm_sparse_sdp(r.points, r.line, opts.sigma, graph, co, so)
                                                    : certify_gm_stationary_sdp(r.points, r.line, opts.sigma, graph, co, so);
    search = certificate_search_json(g.sdp);
    text = std::string(" (SDP ") + certify::to_string(g.sdp.status) + ", t " + std::to_string(g.sdp.t) + ")";
    return std::move(g.certificate);
  }
  if (r.multipliers == "chordal") {
    GmChordalCertificate g = certify_gm_chordal(r.points, r.line, opts.sigma, graph, co);
    search = certificate_search_json(g.admm);
    return std::move(g.certificate);
  }
  if (r.multipliers == "closed_form") return certify_gm_closed_form(r.points, r.line, opts.sigma, graph, co);
  const Eigen::VectorXd x = gm_lift(r.points, r.line, opts.sigma);
  return r.multipliers == "sdp" ? certify::certify(qcqp, x, co, cert_relax->sdp.y) : certify::certify(qcqp, x, co);
}

// The GM certificate of r.line, growing the block size (block_sizes()) until one certifies.
void certify_gm_fit(const FitOptions& opts, FitResult& r, const std::optional<certify::RelaxationResult>& relax,
                    const std::optional<GmGraph>& solve_graph, const Eigen::Vector2d& origin) {
  certify::Certificate c;
  GmGraph graph;
  std::string text;
  nlohmann::json tried = nlohmann::json::array();
  // A line that multi-start IRLS beats is not optimal (a better feasible point disproves it, O(N)):
  // then only the first graph is tried (for the dual value) and the line is not certified. A
  // multi-start IRLS fit has been compared with those starts already.
  const double cost = gm_cost(r.points, r.line, opts.sigma);
  if (!(opts.solver == "irls" && !opts.init_angle && !r.from_candidate)) {
    auto t = r.times.scope("probe");
    IrlsOptions io;
    io.starts = opts.starts;
    const IrlsResult probe = irls_gm(r.points, opts.sigma, io);
    if (probe.cost < cost - 1e-9 * (1.0 + cost)) r.better = {probe.line, probe.cost};
  }
  for (int k : block_sizes(opts)) {
    GmGraph next;
    {
      auto t = r.times.scope("build");
      next = constraint_graph(opts, r.points, &r.line, k);
      next.validate();
    }
    nlohmann::json search;
    try {
      c = certify_on_graph(opts, r, next, relax, solve_graph, search, text);
    } catch (const certify::SdpTooLarge& e) {
      if (tried.empty())  // nothing to report: the first graph is already too large
        throw UsageError("GM certificate on the graph '" + next.name + "': " + e.what() +
                         " (set memory_gb to allow more, or certify fewer points)");
      log::warn("{}: {}; larger blocks not tried", next.name, e.what());
      tried.push_back({{"graph", next.name}, {"edges", next.edges.size()}, {"certified", false}, {"skipped", e.what()}});
      break;
    }
    graph = std::move(next);
    tried.push_back({{"graph", graph.name}, {"edges", graph.edges.size()}, {"certified", c.certified}, {"search", search}});
    r.multiplier_sdp = search;
    if (c.certified || r.better) break;
  }
  r.graph = graph.name;
  r.graph_edges = graph.edges.size();
  r.graphs_tried = tried;
  if (!opts.export_sdpa.empty()) {  // the relaxation the sdp solver solved, else the certificate's graph
    auto t = r.times.scope("export");
    const GmGraph& g = solve_graph ? *solve_graph : graph;
    certify::write_sdpa(opts.export_sdpa, certify::shor_relaxation(gm_qcqp(r.points, opts.sigma, g)),
                        "tls-fit gm relaxation (graph " + g.name + ") of " + r.source + centred_note(origin));
  }
  r.certificate.cost = cost;
  r.certificate.dual = c.dual_value;
  r.certificate.lambda_min = c.lambda_min ? c.lambda_min->lambda_min : 0.0;
  r.certificate.stationarity = c.multipliers.residual;
  r.certificate.certified = c.certified && !r.better;
  if (r.better) c.reason = "multi-start IRLS found a line of lower cost " + std::to_string(r.better->cost);
  r.certificate.eta_bound = c.shift_bound(gm_lift(r.points, r.line, opts.sigma));
  std::ostringstream d;
  d << "multipliers " << c.multipliers.method << text << ", graph " << graph.name << ", eta " << c.eta
    << (r.certificate.certified ? "" : ", not certified: " + c.reason);
  r.certificate.detail = d.str();
  r.weights = gm_weights(r.points, r.line, opts.sigma);
}

}  // namespace

FitResult run_fit(const FitOptions& requested) {
  FitOptions opts = requested;
  if (opts.solver == "auto") opts.solver = opts.mode == "gm" ? "irls" : "eig";
  FitResult r;
  r.mode = opts.mode;
  r.solver = opts.solver;
  r.sigma = opts.sigma;
  {
    auto t = r.times.scope("load");
    if (!opts.input.empty()) {
      r.source = opts.input;
      r.points = read_points_csv(opts.input);
    } else if (!opts.points.empty()) {
      r.source = "inline points";
      r.points = points_from_list(opts.points, "config key 'points'");
    } else {
      r.source = "synthetic (seed " + std::to_string(opts.seed) + ")";
      r.points = generate_line_points(opts.synthetic, opts.seed).points;
      check_fit_input(r.points, r.source);
    }
  }
  const bool gm = opts.mode == "gm";
  r.from_candidate = !opts.candidate.empty();
  if (r.from_candidate) r.line = parse_candidate(opts.candidate, "candidate");
  // Everything below (solvers, certificates, --verify, --export-sdpa) works on the points centred
  // at their centroid: the problem is translation invariant (translate()), and at |x| ~ 1e6 and
  // beyond the raw cost matrix cancels every digit of the cost (negative costs, vacuous
  // certificates, SDP lines far off). The points and the lines go back to the input's frame at the end.
  const Eigen::Vector2d origin = centroid(r.points);
  Points given = std::move(r.points);
  const Line given_line = r.line;
  r.points = translate(given, -origin);
  if (r.from_candidate) r.line = translate(r.line, -origin);
  if (gm) r.multipliers = resolve_multipliers(opts.multipliers);

  // The sdp solver solves the relaxation of the data-order (or all-pairs) graph; GM certificates use
  // the graph built at the line (`graph`), whose QCQP is assembled generically (O(N (N + E))) only for
  // the least-squares or relaxation-dual multipliers and --export-sdpa.
  const Eigen::Matrix3d Q = tls_cost_matrix(r.points);
  std::optional<certify::RelaxationResult> relax;
  std::optional<GmGraph> solve_graph;
  if (opts.solver == "sdp" && !r.from_candidate) {
    certify::Qcqp qcqp;
    {
      auto t = r.times.scope("build");
      if (gm) solve_graph = constraint_graph(opts, r.points, nullptr, std::max(1, opts.block));
      qcqp = gm ? gm_qcqp(r.points, opts.sigma, *solve_graph) : tls_qcqp(Q);
    }
    auto t = r.times.scope("sdp");
    relax = certify::solve_relaxation(qcqp);
    r.tight = relax->tight;
    r.sdp = relaxation_json(*relax);
  }
  if (!r.from_candidate) {
    auto t = r.times.scope("solve");
    if (opts.solver == "eig") {
      r.line = fit_tls(r.points);
    } else if (opts.solver == "irls") {
      IrlsOptions io;
      io.starts = opts.starts;
      io.init_angle = opts.init_angle;
      const IrlsResult ir = irls_gm(r.points, opts.sigma, io);
      r.line = ir.line;
      r.irls_iterations = ir.total_iterations;
    } else {
      r.line = gm ? gm_line_from_lifted(relax->x) : normalise_line(relax->x(0), relax->x(1), relax->x(2));
    }
  }
  if (!gm) {
    if (!opts.export_sdpa.empty()) {
      auto t = r.times.scope("export");
      certify::write_sdpa(opts.export_sdpa, certify::shor_relaxation(tls_qcqp(Q)),
                         "tls-fit tls relaxation of " + r.source + centred_note(origin));
    }
    auto t = r.times.scope("certify");
    const TlsCertificate c = certify_tls(Q, r.line, opts.tol);
    r.certificate = {c.cost, c.dual, c.lambda_min, c.stationarity, c.certified, fmt::format("closed form, tol {:.3g}", c.tol), std::nullopt};
    r.weights.assign(r.points.size(), 1.0);
  } else {
    certify_gm_fit(opts, r, relax, solve_graph, origin);
  }
  if (opts.verify) {
    auto t = r.times.scope("verify");
    const VerifyResult v = exhaustive_search(r.points, gm ? Loss::geman_mcclure : Loss::squared, opts.sigma);
    r.global_cost = v.cost;
    r.global_line = translate(v.line, origin);
  }
  r.points = std::move(given);
  r.line = r.from_candidate ? given_line : translate(r.line, origin);
  if (r.better) r.better->line = translate(r.better->line, origin);
  return r;
}

}  // namespace core::linefit
