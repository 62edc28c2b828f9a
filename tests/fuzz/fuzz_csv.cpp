// Numeric CSV (tls-fit's points and any numeric table).
#include "fuzz_support.hpp"
#include "io/csv.hpp"
#include "linefit/points.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fuzz::file("p.csv", fuzz::text(data, size));
  fuzz::expect_clean([&] { core::io::read_numeric_csv(path); });
  return fuzz::expect_clean([&] { core::linefit::check_fit_input(core::linefit::read_points_csv(path), "fuzz"); });
}
