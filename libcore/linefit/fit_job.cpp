// The `tls-fit fit` job (see fit_job.hpp).
#include "linefit/fit_job.hpp"

#include <sstream>

#include "common/errors.hpp"

namespace core::linefit {

void FitOptions::validate() const {
  if (!input.empty() && !points.empty())
    throw UsageError("config keys 'input' and 'points' are exclusive: give the points one way");
  if (!candidate.empty()) parse_candidate(candidate, "candidate");
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
  for (const auto& [name, s] : times.times()) stages[name] = s;
  return {{"mode", "tls"},
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
          {"tol", certificate.tol},
          {"certified", certificate.certified},
          {"times_s", stages}};
}

FitResult run_fit(const FitOptions& opts) {
  FitResult r;
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
  Eigen::Matrix3d Q;
  {
    auto t = r.times.scope("solve");
    Q = tls_cost_matrix(r.points);
    r.from_candidate = !opts.candidate.empty();
    r.line = r.from_candidate ? parse_candidate(opts.candidate, "candidate") : fit_tls(r.points);
  }
  {
    auto t = r.times.scope("certify");
    r.certificate = certify_tls(Q, r.line, opts.tol);
  }
  return r;
}

}  // namespace core::linefit
