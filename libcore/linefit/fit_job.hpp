// The `tls-fit fit` job: options in, result out. Points come from a CSV file, an inline list, or
// (when neither is given) seeded synthetic data, so a bare run works on a fresh machine.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/timer.hpp"
#include "linefit/synthetic.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

struct FitOptions {
  std::string input;                           // CSV of x,y
  std::vector<std::vector<double>> points;     // inline [[x, y], ...]
  std::string candidate;                       // "a,b,c": certify this line instead of fitting
  std::string mode = "tls";                    // tls | gm (Geman-McClure)
  std::string solver = "auto";                 // auto (the mode's: eig for tls, irls for gm) | eig | sdp | irls
  double sigma = 1.0;                          // GM scale
  std::optional<double> init_angle;            // IRLS: single start at this normal angle (rad)
  int starts = 8;                              // IRLS: initial angles k pi / starts, plus the TLS line
  bool verify = false;                         // exhaustive search for the global optimum
  bool redundant = false;                      // GM: constraint graph of all pairs (O(N^2) constraints)
  std::string graph = "balanced";              // GM constraint graph: balanced (built at the line) | data (order)
  int block = 0;                               // GM constraint graph: block size b (0: 1, 2, 4 until certified)
  std::string multipliers = "auto";            // GM certificate: auto | least_squares | closed_form (O(N)) |
                                               // stationary_sdp (free multipliers by a small SDP) | chordal (the
                                               // same by ADMM) | sparse_sdp (the same SDP split over the
                                               // graph's cliques, O(N) per iteration) | sdp (relaxation dual)
  std::string export_sdpa;                     // write the SDP relaxation here (SDPA sparse format): the sdp
                                               // solver's, else that of the certificate's graph
  double tol = 1e-9;                           // relative certificate tolerance
  double memory_gb = 0.0;                      // GM certificate SDP: working-memory limit (0: 90% of what is available)
  std::uint64_t seed = 0;                      // synthetic data only
  SyntheticLine synthetic;                     // used when neither input nor points is given

  template <class V>
  void visit(V& v) {
    v("input", input, "CSV file of x,y points (header optional)");
    v("points", points, "inline points [[x, y], ...] instead of a file");
    v("candidate", candidate, "certify the line a,b,c instead of fitting one");
    v("mode", mode, "loss: tls (squared distance) or gm (Geman-McClure)", core::one_of({"tls", "gm"}));
    v("solver", solver, "auto (eig for tls, irls for gm), eig (tls closed form), sdp (Shor relaxation), irls (gm)",
      core::one_of({"auto", "eig", "sdp", "irls"}));
    v("sigma", sigma, "Geman-McClure scale", core::positive<double>());
    v("init_angle", init_angle, "IRLS: start only from this normal angle in radians");
    v("starts", starts, "IRLS: number of initial angles", core::in_range(1, 10000));
    v("verify", verify, "also find the global optimum by exhaustive angle/offset search");
    v("redundant", redundant, "GM: constrain all pairs of points (O(N^2) redundant constraints; overrides graph)");
    v("graph", graph,
      "GM constraint graph, built at the certified line: balanced (inliers in balanced order of their offset "
      "forces, the other points spread among them) or data (data order); the sdp solver's relaxation uses data",
      core::one_of({"balanced", "data"}));
    v("block", block,
      "GM constraint graph: each point constrained with all points of its block of b and the neighbouring "
      "blocks (1: a chain, the other points tied as leaves when balanced; 0: try 1, 2 and 4 until one certifies)",
      core::in_range(0, 64));
    v("multipliers", multipliers,
      "GM certificate multipliers: auto (sparse_sdp), least_squares, closed_form (O(N)), stationary_sdp (free "
      "multipliers by an SDP), chordal (the same by chordal ADMM), sparse_sdp (the same SDP split over the "
      "graph's cliques, O(N) per interior-point iteration) or sdp (relaxation dual)",
      core::one_of({"auto", "least_squares", "closed_form", "stationary_sdp", "chordal", "sparse_sdp", "sdp"}));
    v("export_sdpa", export_sdpa, "write the SDP relaxation (the sdp solver's, else the certificate graph's) to this .dat-s file");
    v("tol", tol, "certificate tolerance: tls, relative to ||Q||_F; gm, the PSD shift relative to each diagonal entry of H", core::in_range(0.0, 1.0));
    v("memory_gb", memory_gb,
      "GM certificate: refuse an SDP whose estimated working memory exceeds this many GB (0: 90% of the memory "
      "available at the start); a larger block than the first is then skipped, the first is an error (exit 2)",
      core::in_range(0.0, 1e6));
    v("seed", seed, "seed of the synthetic data");
    v.section("synthetic", synthetic);
  }
  void validate() const;
};

// Parses "a,b,c" into a normalised line; UsageError naming `key` when malformed.
Line parse_candidate(const std::string& text, const std::string& key);

// Certificate figures common to both modes.
struct FitCertificate {
  double cost = 0;        // mean loss of the line (the mode's loss)
  double dual = 0;        // Lagrangian dual value
  double lambda_min = 0;  // smallest eigenvalue of H (information)
  double stationarity = 0;
  bool certified = false;
  std::string detail;     // why not certified, multiplier method, eta
  // GM: the slack the PSD tolerance leaves at the candidate, eta sum_i H_ii x^_i^2 (the factorisation
  // proves H + eta diag(H) > 0, so a feasible x of the lift's size costs at least dual - that).
  // Jacobi-relative, so it stays O(eta) as N grows (the z_i rows of H are O(1/N)).
  std::optional<double> eta_bound;
  double gap() const { return cost - dual; }
};

struct FitResult {
  std::string source;  // file name, "inline points" or "synthetic (seed N)"
  std::string mode, solver;
  double sigma = 0;
  Points points;
  Line line;
  bool from_candidate = false;
  FitCertificate certificate;
  std::vector<double> weights;  // GM: (sigma^2 / (sigma^2 + e^2))^2; TLS: 1
  std::optional<bool> tight;    // sdp solver: relaxation tight
  nlohmann::json sdp;           // sdp solver: status, value, eigen ratio, iterations
  std::string multipliers;         // the GM multiplier choice used (after resolving "auto")
  std::string graph;               // the GM constraint graph of the certificate
  std::size_t graph_edges = 0;
  nlohmann::json graphs_tried;     // each graph tried (block escalation): name, edges, certified, search
  struct Better {
    Line line;
    double cost = 0;
  };
  std::optional<Better> better;    // GM candidate or single-start fit: a line multi-start IRLS found cheaper
  nlohmann::json multiplier_sdp;  // multipliers stationary_sdp / chordal / newton: the search's figures
  std::optional<double> global_cost;  // --verify
  std::optional<Line> global_line;
  int irls_iterations = 0;
  StageTimes times;

  nlohmann::json to_json() const;
  bool verified() const;  // true without --verify, else cost within 1e-9 of the global cost
};

// "auto" picks sparse_sdp (the stationary_sdp decision at O(N) per interior-point iteration); other
// choices are returned unchanged.
std::string resolve_multipliers(const std::string& choice);

FitResult run_fit(const FitOptions& opts);

}  // namespace core::linefit
