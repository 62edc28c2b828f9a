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
  double tol = 1e-9;                           // relative certificate tolerance
  std::uint64_t seed = 0;                      // synthetic data only
  SyntheticLine synthetic;                     // used when neither input nor points is given

  template <class V>
  void visit(V& v) {
    v("input", input, "CSV file of x,y points (header optional)");
    v("points", points, "inline points [[x, y], ...] instead of a file");
    v("candidate", candidate, "certify the line a,b,c instead of fitting one");
    v("tol", tol, "certificate tolerance, relative to ||Q||_F", core::in_range(0.0, 1.0));
    v("seed", seed, "seed of the synthetic data");
    v.section("synthetic", synthetic);
  }
  void validate() const;
};

// Parses "a,b,c" into a normalised line; UsageError naming `key` when malformed.
Line parse_candidate(const std::string& text, const std::string& key);

struct FitResult {
  std::string source;  // file name, "inline points" or "synthetic (seed N)"
  Points points;
  Line line;
  bool from_candidate = false;
  TlsCertificate certificate;
  StageTimes times;

  nlohmann::json to_json() const;
};

FitResult run_fit(const FitOptions& opts);

}  // namespace core::linefit
