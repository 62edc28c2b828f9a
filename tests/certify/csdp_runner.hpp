// Runs Debian's csdp binary on an SDPA file for cross-checks (tests and the bench driver):
// its exit code (0 solved, 1 primal infeasible, 2 dual infeasible, others partial/failed) and
// the dual objective c^T y recomputed in full precision from the y line of its solution file.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <Eigen/Dense>

namespace certify_test {

inline const char* kCsdp = "/usr/bin/csdp";
inline bool have_csdp() { return std::filesystem::exists(kCsdp); }

struct CsdpRun {
  int exit_code = -1;
  std::optional<double> dual_objective;  // c^T y in the file's (max) convention
};

inline CsdpRun run_csdp(const std::filesystem::path& problem, const Eigen::VectorXd& c) {
  const std::filesystem::path sol = problem.string() + ".sol";
  const std::string cmd = std::string(kCsdp) + " '" + problem.string() + "' '" + sol.string() + "' > '" +
                          problem.string() + ".log' 2>&1";
  const int status = std::system(cmd.c_str());
  CsdpRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(sol);
  std::string line;
  if (in && std::getline(in, line)) {
    std::istringstream ss(line);
    Eigen::VectorXd y(c.size());
    int k = 0;
    for (double v; k < c.size() && ss >> v;) y(k++) = v;
    if (k == c.size()) run.dual_objective = c.dot(y);
  }
  return run;
}

}  // namespace certify_test
