// TUM RGB-D trajectories (nice-slam-run's ground truth and estimates): a trajectory that reads must write and
// read back to as many poses, and associate with itself one to one.
#include <stdexcept>

#include "fuzz_support.hpp"
#include "nerf/trajectory.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fuzz::expect_clean([&] {
    const auto t = core::nerf::read_tum_trajectory(fuzz::file("t.txt", fuzz::text(data, size)));
    const auto again = core::nerf::read_tum_trajectory(fuzz::file("w.txt", core::nerf::format_tum_trajectory(t)));
    if (again.size() != t.size()) throw std::logic_error("TUM round trip changed the pose count");
    if (core::nerf::associate(t, t, 0.0).size() != t.size()) throw std::logic_error("self-association lost poses");
  });
}
