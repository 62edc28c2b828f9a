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
  std::string solver = "eig";                  // eig (tls) | sdp | irls (gm)
  double sigma = 1.0;                          // GM scale
  std::optional<double> init_angle;            // IRLS: single start at this normal angle (rad)
  int starts = 8;                              // IRLS: initial angles k pi / starts, plus the TLS line
  bool verify = false;                         // exhaustive search for the global optimum
  bool redundant = false;                      // GM SDP: add the all-pairs redundant constraints
  std::string multipliers = "auto";            // GM certificate: auto | least_squares | closed_form (O(N)) |
                                               // stationary_sdp (free multipliers by a small SDP) | chordal (the
                                               // same multipliers by O(N)-per-iteration ADMM) | sdp (relaxation dual)
  std::string export_sdpa;                     // write the SDP relaxation here (SDPA sparse format)
  double tol = 1e-9;                           // relative certificate tolerance
  std::uint64_t seed = 0;                      // synthetic data only
  SyntheticLine synthetic;                     // used when neither input nor points is given

  template <class V>
  void visit(V& v) {
    v("input", input, "CSV file of x,y points (header optional)");
    v("points", points, "inline points [[x, y], ...] instead of a file");
    v("candidate", candidate, "certify the line a,b,c instead of fitting one");
    v("mode", mode, "loss: tls (squared distance) or gm (Geman-McClure)", core::one_of({"tls", "gm"}));
    v("solver", solver, "eig (tls closed form), sdp (Shor relaxation), irls (gm)",
      core::one_of({"eig", "sdp", "irls"}));
    v("sigma", sigma, "Geman-McClure scale", core::positive<double>());
    v("init_angle", init_angle, "IRLS: start only from this normal angle in radians");
    v("starts", starts, "IRLS: number of initial angles", core::in_range(1, 10000));
    v("verify", verify, "also find the global optimum by exhaustive angle/offset search");
    v("redundant", redundant, "GM SDP: include the O(N^2) redundant constraints");
    v("multipliers", multipliers,
      "GM certificate multipliers: auto (stationary_sdp up to 300 points, else closed_form), least_squares, "
      "closed_form (O(N)), stationary_sdp (free multipliers by an SDP), chordal (the same by chordal ADMM) or sdp "
      "(relaxation dual)",
      core::one_of({"auto", "least_squares", "closed_form", "stationary_sdp", "chordal", "sdp"}));
    v("export_sdpa", export_sdpa, "write the SDP relaxation to this .dat-s file");
    v("tol", tol, "certificate tolerance, relative to ||Q||_F", core::in_range(0.0, 1.0));
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
  nlohmann::json multiplier_sdp;  // multipliers stationary_sdp / chordal: t, iterations, seconds, ...
  std::optional<double> global_cost;  // --verify
  std::optional<Line> global_line;
  int irls_iterations = 0;
  StageTimes times;

  nlohmann::json to_json() const;
  bool verified() const;  // true without --verify, else cost within 1e-9 of the global cost
};

// "auto" picks stationary_sdp (certifies whenever chain multipliers can, O(N^3)) up to this many
// points and the O(N) closed form above it; other choices are returned unchanged.
inline constexpr std::size_t kAutoStationarySdpMaxPoints = 300;
std::string resolve_multipliers(const std::string& choice, std::size_t n_points);

FitResult run_fit(const FitOptions& opts);

}  // namespace core::linefit
