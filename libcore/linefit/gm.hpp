// Geman-McClure robust line fitting ("A Fine Line", Sec. 3) by Black-Rangarajan duality:
//   rho(e) = sigma^2 e^2 / (sigma^2 + e^2) = min over s of  s^2 e^2 + sigma^2 (s - 1)^2,
// minimised at s = sigma^2 / (sigma^2 + e^2). Alternating over s and the line gives IRLS: weights
// w_i = s_i^2 = (sigma^2 / (sigma^2 + e_i^2))^2, then the weighted TLS line (weighted centroid and
// scatter, smallest eigenvector), to a fixed point; each step does not increase the cost
// f(line) = (1/N) sum_i rho(e_i), e_i = a x_i + b y_i - c. The problem is non-convex, so IRLS runs
// from several initial lines and keeps the best, which it then iterates to a fixed point (the line
// moving by less than 1e-14), so that certificates see a stationary point to rounding. An exhaustive search over the normal angle and
// offset (grid fine enough for sigma, then pattern-search refinement of the best cells) gives an
// independent global optimum for verification.
#pragma once
#include <optional>
#include <vector>

#include "linefit/points.hpp"
#include "linefit/tls.hpp"

namespace core::linefit {

// Mean Geman-McClure loss of a line.
double gm_cost(const Points& pts, const Line& line, double sigma);
// IRLS weights (sigma^2 / (sigma^2 + e_i^2))^2.
std::vector<double> gm_weights(const Points& pts, const Line& line, double sigma);
// Weighted TLS: the line minimising sum w_i e_i^2 (DataError when all weights vanish).
Line fit_weighted_tls(const Points& pts, const std::vector<double>& weights);
// The line with unit normal at angle phi through the median projection of the points.
Line line_from_angle(const Points& pts, double phi);

struct IrlsOptions {
  int max_iterations = 500;
  double tol = 1e-13;  // stop when the relative cost decrease falls below this
  int starts = 8;      // initial normal angles k pi / starts, plus the plain TLS line
  std::optional<double> init_angle;  // when set: this single start only
};

struct IrlsResult {
  Line line;
  double cost = 0.0;
  int iterations = 0;  // of the winning start
  int total_iterations = 0;
  int starts = 0;
  int best_start = 0;  // index of the winning start (-1: the TLS start)
  std::vector<double> start_costs;
};

IrlsResult irls_gm(const Points& pts, double sigma, const IrlsOptions& options = {});

// Global optimum of the mean loss rho over lines by exhaustive search (independent of IRLS).
struct VerifyResult {
  Line line;
  double cost = 0.0;
  long evaluations = 0;  // of the full cost
};
enum class Loss { squared, geman_mcclure };
double mean_loss(const Points& pts, const Line& line, Loss loss, double sigma);
VerifyResult exhaustive_search(const Points& pts, Loss loss, double sigma);

}  // namespace core::linefit
