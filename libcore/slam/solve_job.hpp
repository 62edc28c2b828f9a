// The `slam-certify solve` job: options in, result out. The problem comes from a g2o file or (when
// none is given) from a seeded simulated landmark world, so a bare run works on a fresh machine.
// Either the staircase solves it, or --candidate certifies a given configuration.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "common/config.hpp"
#include "common/timer.hpp"
#include "slam/g2o.hpp"
#include "slam/simulate.hpp"
#include "slam/staircase.hpp"

namespace core::slam {

struct SolveOptions {
  std::string input;      // g2o file; empty: the simulated world
  std::string candidate;  // g2o file with vertices: certify it instead of solving
  std::string cholesky = "auto";
  std::string quaternions = "normalize";
  int rank_min = 0;
  int rank_max = 10;
  std::string init = "chordal";
  std::uint64_t seed = 0;
  double grad_tol = 1e-2;
  double rel_decrease_tol = 1e-6;
  int max_iterations = 500;
  double max_condition = 1e6;
  double eta_rel = 1e-10;
  double gap_tol = 1e-6;
  WorldOptions world;

  template <class V>
  void visit(V& v) {
    v("input", input, "g2o file (empty: the simulated world of the world section)");
    v("candidate", candidate, "g2o file whose vertices are certified instead of solving");
    v("cholesky", cholesky,
      "sparse Cholesky back-end: auto (simplicial for 2D pose graphs, 3D pose graphs below ~1,000 poses and problems "
      "below 200 unknowns; else cholmod when built), cholmod or simplicial",
      core::one_of({"auto", "cholmod", "simplicial"}));
    v("quaternions", quaternions,
      "edge quaternions: normalize, or as_is (SE-Sync's reader: a non-unit quaternion scales the rotation)",
      core::one_of({"normalize", "as_is"}));
    v("rank_min", rank_min, "first staircase rank (0: d + 1)", core::in_range(0, 1000));
    v("rank_max", rank_max, "last staircase rank", core::in_range(2, 1000));
    v("init", init, "initialisation: chordal or random", core::one_of({"chordal", "random"}));
    v("seed", seed, "seed of the random initialisation");
    v("grad_tol", grad_tol, "trust region: Riemannian gradient norm to stop at", core::in_range(0.0, 1e6));
    v("rel_decrease_tol", rel_decrease_tol, "trust region: relative decrease of the cost to stop at",
      core::in_range(0.0, 1.0));
    v("max_iterations", max_iterations, "trust region iterations per staircase level", core::in_range(1, 1000000));
    v("max_condition", max_condition, "preconditioner: condition number bound of Q + lambda I", core::in_range(1.0, 1e16));
    v("eta_rel", eta_rel, "certificate: PSD shift relative to the mean diagonal of the data matrix",
      core::in_range(1e-16, 1.0));
    v("gap_tol", gap_tol, "certificate: relative duality gap", core::in_range(0.0, 1.0));
    v.section("world", world);
  }
  void validate() const;
};

struct SolveJobResult {
  std::string source;
  G2oGraph graph;
  SolveResult solution;
  bool from_candidate = false;
  StageTimes times;  // build, solve, certify
  std::string cholesky;
  nlohmann::json to_json() const;
};

SolveJobResult run_solve(const SolveOptions& options);

}  // namespace core::slam
