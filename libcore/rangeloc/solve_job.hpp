// The `range-certify solve` job: options in, result out. Loads a dataset folder, a STAR-loc run
// (starloc:FOLDER/RUN) or simulates one (no input), runs Gauss-Newton from `init` and then from up to
// tries - 1 random trajectories, certifies each local solution (closed-form multipliers, O(N) block
// LDL^T) and stops at the first certified one; a --candidate trajectory is certified as given.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "rangeloc/certificate.hpp"
#include "rangeloc/dataset.hpp"
#include "rangeloc/gauss_newton.hpp"
#include "rangeloc/simulate.hpp"
#include "rangeloc/starloc.hpp"

namespace core::rangeloc {

struct SolveOptions {
  std::string input;            // dataset folder, starloc:FOLDER/RUN, or empty: simulate `sim`
  std::string prior = "cv";
  std::string init = "random";  // gt | flip | random
  int tries = 10;
  bool stop_at_certified = true;
  std::string candidate;        // trajectory CSV to certify as given
  double sigma_d = 0.1;         // range noise of the cost
  double sigma_a = 0.2;         // acceleration (cv) / velocity (zv) noise of the prior
  std::uint64_t seed = 0;       // random initialisations
  int max_iterations = 200;
  double pivot_tol = 1e-9;
  double stationarity_tol = 1e-6;
  double rho_tol = 1e-6;
  int sdp_check = 0;            // also solve the SDP relaxation when N <= this (0: never)
  // STAR-loc input only
  int tag = 1;
  double group_window = 0.0;
  bool calibrate = true;
  std::vector<double> time_range;
  std::string query_times;      // CSV of times at which to write the estimate (trajectory_query.csv)
  double query_dt = 0.0;        // or a grid with this step over the state times (0: none)
  SimOptions sim;               // the problem of a run without input

  template <class V>
  void visit(V& v) {
    v("input", input, "dataset folder (anchors.csv, ranges.csv[, groundtruth.csv]), starloc:FOLDER/RUN, or empty to simulate");
    v("prior", prior, "motion prior: cv (constant velocity), zv (zero velocity) or none", core::one_of({"cv", "zv", "none"}));
    v("init", init, "first initialisation: gt (ground truth), flip (ground truth reflected through the anchors' plane) or random",
      core::one_of({"gt", "flip", "random"}));
    v("tries", tries, "at most this many Gauss-Newton runs (init, then random), stopping at the first certified", core::in_range(1, 100000));
    v("stop_at_certified", stop_at_certified, "stop at the first certified try (false: run all tries, for studies)");
    v("candidate", candidate, "trajectory CSV t,x,y[,z][,vx,vy[,vz]] at the state times, certified as given");
    v("sigma_d", sigma_d, "range noise standard deviation of the cost", core::positive<double>());
    v("sigma_a", sigma_a, "prior noise: acceleration (cv) or velocity step (zv)", core::positive<double>());
    v("seed", seed, "seed of the random initialisations");
    v("max_iterations", max_iterations, "Gauss-Newton iteration limit per try", core::in_range(1, 100000));
    v("pivot_tol", pivot_tol, "certified only when every relative (Jacobi-scaled) pivot of H exceeds this", core::in_range(0.0, 1.0));
    v("stationarity_tol", stationarity_tol, "relative ||H y|| above which a solution is not stationary", core::in_range(0.0, 1.0));
    v("rho_tol", rho_tol,
      "the certificate is refused when |rho - cost| exceeds this fraction of cost plus the magnitude of rho's terms",
      core::in_range(0.0, 1.0));
    v("sdp_check", sdp_check, "also solve the SDP relaxation with libcore/certify when N <= this (0: never)", core::in_range(0, 200));
    v("tag", tag, "STAR-loc: tag (from_id) whose ranges are used");
    v("group_window", group_window, "STAR-loc: ranges within this many seconds share one state", core::at_least(0.0));
    v("calibrate", calibrate, "STAR-loc: subtract each anchor's mean range bias (computed with the ground truth)");
    v("time_range", time_range, "STAR-loc: [t0, t1] seconds of the run to use (empty: all)");
    v("query_times", query_times,
      "CSV of times (column 't' or a single column) at which the run directory gets trajectory_query.csv (GP interpolation)");
    v("query_dt", query_dt, "or query the estimate every this many seconds over the state times (0: no queries)",
      core::at_least(0.0));
    v.section("sim", sim);
  }
  void validate() const;
};

// `range-certify query`: a trajectory CSV (e.g. a run's trajectory.csv, with velocities) queried at
// other times by the motion prior's GP interpolation.
struct QueryOptions {
  std::string trajectory;  // t,x,y[,z][,vx,vy[,vz]]
  std::string times;       // CSV of query times
  double dt = 0.0;         // or a grid over the trajectory's times
  std::string prior = "cv";
  std::string output;      // CSV t,x,y[,z]

  template <class V>
  void visit(V& v) {
    v("trajectory", trajectory, "trajectory CSV t,x,y[,z][,vx,vy[,vz]] (a run's trajectory.csv)");
    v("times", times, "CSV of query times (column 't' or a single column)");
    v("dt", dt, "or query every this many seconds between the first and last state (0: use 'times')", core::at_least(0.0));
    v("prior", prior, "interpolation: cv (the constant-velocity GP posterior mean) or zv/none (linear)",
      core::one_of({"cv", "zv", "none"}));
    v("output", output, "CSV to write: t,x,y[,z]");
  }
  void validate() const;
};

// Writes the queried positions to options.output; returns the number of query times.
std::size_t run_query(const QueryOptions& options);

struct Attempt {
  std::string init;
  CostParts cost;
  int iterations = 0;
  int factorizations = 0;
  bool converged = false;
  Certificate certificate;
  double rmse = -1;     // < 0: no ground truth
  double rmse_xy = -1;  // 3-D only: the horizontal error
  double solve_s = 0, multipliers_s = 0, certificate_s = 0;
  double iteration_s = 0;  // one Gauss-Newton iteration (linearise, factor, solve, line search)
};

struct SolveResult {
  Dataset data;
  Prior prior = Prior::cv;
  Trajectory estimate;
  Trajectory queried;                // the estimate at the query times (empty without queries)
  Attempt best;                      // the certified attempt, else the lowest cost
  std::vector<Attempt> attempts;
  bool from_candidate = false;
  StarlocInfo starloc;
  nlohmann::json sdp;                // when sdp_check applies
  nlohmann::json to_json() const;
};

// Resolves the data (folder, starloc: or simulation) as the solve options say.
Dataset load_problem_data(const SolveOptions& options, StarlocInfo* info = nullptr);
// The initial trajectory of one try (`init` gt | flip | random); random draws from `rng_seed`.
Eigen::VectorXd initial_state(const Problem& problem, const Dataset& data, const std::string& init, std::uint64_t rng_seed,
                              double sigma_a);
SolveResult run_solve(const SolveOptions& options);

}  // namespace core::rangeloc
