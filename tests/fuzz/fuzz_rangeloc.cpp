// range-certify's inputs. First byte even: a dataset folder, the rest being anchors.csv, ranges.csv and
// (optional) groundtruth.csv separated by NUL bytes; odd: a --candidate trajectory CSV of dimension 2 or 3
// (second bit).
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "rangeloc/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto input = fuzz::text(data + 1, size - 1);
  return fuzz::expect_clean([&] {
    if (data[0] & 1) {
      core::rangeloc::read_trajectory(fuzz::file("candidate.csv", input), data[0] & 2 ? 3 : 2);
      return;
    }
    const auto parts = fuzz::split(input, 3);
    const auto dir = fuzz::folder("range");
    fuzz::file("range/anchors.csv", parts[0]);
    fuzz::file("range/ranges.csv", parts.size() > 1 ? parts[1] : std::string_view());
    std::filesystem::remove(dir / "groundtruth.csv");  // optional: present only when the input has a third part
    if (parts.size() > 2) fuzz::file("range/groundtruth.csv", parts[2]);
    core::rangeloc::read_dataset(dir);
  });
}
