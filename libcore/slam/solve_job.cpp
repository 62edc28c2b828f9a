// The `slam-certify solve` job (see solve_job.hpp).
#include "slam/solve_job.hpp"

#include "common/errors.hpp"
#include "common/log.hpp"

namespace core::slam {

void SolveOptions::validate() const {
  if (rank_min != 0 && rank_min > rank_max)
    throw UsageError("config key 'rank_min' (" + std::to_string(rank_min) + ") exceeds 'rank_max' (" +
                     std::to_string(rank_max) + ")");
}

nlohmann::json SolveJobResult::to_json() const {
  const SolveResult& s = solution;
  const Problem& p = graph.problem;
  nlohmann::json levels = nlohmann::json::array();
  for (const StaircaseLevel& l : s.levels)
    levels.push_back({{"rank", l.rank},
                      {"cost", l.relaxation_cost},
                      {"iterations", l.trust_region.iterations},
                      {"tcg_iterations", l.trust_region.tcg_iterations},
                      {"grad_norm", l.trust_region.grad_norm},
                      {"stop", l.trust_region.stop},
                      {"lambda_min", l.lambda_min},
                      {"psd", l.psd},
                      {"refined", l.refined}});
  nlohmann::json j = {{"source", source},
                      {"dimension", p.d},
                      {"cost", s.cost},
                      {"lower_bound", s.lower_bound},
                      {"dual_value", s.dual_value},
                      {"duality_gap", s.duality_gap},
                      {"suboptimality_bound", s.suboptimality_bound},
                      {"certified", s.certified},
                      {"lambda_min", s.lambda_min},
                      {"rank", s.rank},
                      {"poses", p.num_poses()},
                      {"landmarks", p.num_landmarks()},
                      {"edges", p.num_edges()},
                      {"candidate", from_candidate},
                      {"cholesky", cholesky},
                      {"times_s",
                       {{"build", times.times().count("build") ? times.times().at("build") : 0.0},
                        {"solve", s.solve_seconds},
                        {"certify", s.certify_seconds}}}};
  if (!from_candidate) {
    j["relaxation_cost"] = s.relaxation_cost;
    j["staircase"] = levels;
    j["solve_parts_s"] = {{"chordal", s.chordal_seconds},
                          {"preconditioner", s.preconditioner_seconds},
                          {"trust_region", s.trust_region_seconds}};
  }
  if (!s.reason.empty()) j["reason"] = s.reason;
  return j;
}

SolveJobResult run_solve(const SolveOptions& o) {
  o.validate();
  SolveJobResult r;
  if (o.input.empty()) {
    r.graph = simulate_world(o.world).graph;
    r.source = "simulated world (seed " + std::to_string(o.world.seed) + ")";
  } else {
    r.graph = read_g2o(o.input, G2oOptions{.normalize_quaternions = o.quaternions == "normalize"});
    r.source = o.input;
  }
  const Problem& p = r.graph.problem;
  log::info("{}: {}D, {} poses, {} landmarks, {} edges", r.source, p.d, p.num_poses(), p.num_landmarks(), p.num_edges());
  Estimate candidate;
  if (!o.candidate.empty()) {
    candidate = read_g2o_estimate(o.candidate, p);
    r.from_candidate = true;
  }
  Timer build;
  const DataMatrix Q(p, o.cholesky);
  r.times.add("build", build.seconds());
  r.cholesky = Q.cholesky();
  CertificateOptions co;
  co.eta_rel = o.eta_rel;
  co.gap_tol = o.gap_tol;
  if (r.from_candidate) {
    r.solution = certify_candidate(Q, p, candidate, co);
  } else {
    StaircaseOptions so;
    so.rank_min = o.rank_min;
    so.rank_max = o.rank_max;
    so.init = o.init;
    so.seed = o.seed;
    so.max_condition = o.max_condition;
    so.trust_region.grad_tol = o.grad_tol;
    so.trust_region.rel_decrease_tol = o.rel_decrease_tol;
    so.trust_region.max_iterations = o.max_iterations;
    so.certificate = co;
    r.solution = solve(Q, so);
  }
  return r;
}

}  // namespace core::slam
