// SDPA sparse files; a problem that parses and is small is also solved with a bounded iteration count, so a
// degenerate problem that makes the solver spin (issue 20.1) shows up as a timeout.
#include <sstream>

#include "certify/sdp_solver.hpp"
#include "certify/sdpa.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_clean([&] {
    std::istringstream in{std::string(fuzz::text(data, size))};
    core::certify::SdpProblem p = core::certify::parse_sdpa(in, "fuzz.dat-s");
    if (p.total_size() > 24 || p.num_constraints() > 24) return;
    core::certify::SdpOptions o;
    o.max_iterations = 30;
    core::certify::solve_sdp(std::move(p), o);
  });
}
