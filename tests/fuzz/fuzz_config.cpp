// Config files and overrides: the input is a YAML file merged over tls-fit's fit options; each of its lines is
// then also tried as a command-line override (key=value, +key=value, ~key).
#include <sstream>

#include "common/config.hpp"
#include "fuzz_support.hpp"
#include "linefit/fit_job.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(fuzz::text(data, size));
  fuzz::expect_clean([&] { core::resolve_options<core::linefit::FitOptions>({fuzz::file("c.yaml", input).string()}, {}); });
  std::istringstream lines(input);
  std::vector<std::string> overrides;
  for (std::string line; std::getline(lines, line) && overrides.size() < 8;) overrides.push_back(line);
  fuzz::expect_clean([&] { core::resolve_options<core::linefit::FitOptions>({}, overrides); });
  return 0;
}
