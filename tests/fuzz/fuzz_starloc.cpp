// STAR-loc recordings (range-certify --input starloc:FOLDER/RUN): the input is RUN/uwb.csv,
// dataset_params.json and uwb_markers_v1.csv separated by NUL bytes; the run is named "run".
#include "fuzz_support.hpp"
#include "rangeloc/starloc.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto parts = fuzz::split(fuzz::text(data, size), 3);
  const auto dir = fuzz::folder("star");
  fuzz::folder("star/run");
  fuzz::file("star/run/uwb.csv", parts[0]);
  fuzz::file("star/dataset_params.json", parts.size() > 1 ? parts[1] : "");
  fuzz::file("star/uwb_markers_v1.csv", parts.size() > 2 ? parts[2] : "");
  core::rangeloc::StarlocOptions options;
  options.group_window = 0.05;
  return fuzz::expect_clean([&] { core::rangeloc::read_starloc((dir / "run").string(), options); });
}
