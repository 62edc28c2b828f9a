// g2o files (slam-certify's --input) with the reader's options picked by the first byte; the text after a NUL
// byte is read as a --candidate file (vertex estimates) against the parsed problem.
#include <algorithm>
#include <sstream>

#include "fuzz_support.hpp"
#include "slam/g2o.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  core::slam::G2oOptions options;
  options.normalize_quaternions = data[0] & 1;
  options.estimate_only = data[0] & 2;
  const auto input = fuzz::text(data + 1, size - 1);
  const auto cut = std::min(input.find('\0'), input.size());
  return fuzz::expect_clean([&] {
    std::istringstream in{std::string(input.substr(0, cut))};
    const core::slam::G2oGraph g = core::slam::parse_g2o(in, "fuzz.g2o", options);
    if (cut < input.size())
      core::slam::read_g2o_estimate(fuzz::file("candidate.g2o", input.substr(cut + 1)), g.problem);
  });
}
