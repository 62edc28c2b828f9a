// Seeded RNG: reproducible, split streams independent of use order, sane distributions.
#include <doctest/doctest.h>

#include <cmath>

#include "common/rng.hpp"

TEST_CASE("same seed, same stream; split streams differ and ignore position") {
  core::Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) CHECK(a() == b());
  core::Rng c(42);
  const auto s1 = c.split(1);
  c();
  c();
  auto s1_again = c.split(1);
  auto s1_copy = s1;
  CHECK(s1_copy() == s1_again());
  auto s2 = c.split(2);
  auto s1b = c.split(1);
  CHECK(s2() != s1b());
}

TEST_CASE("uniform, below and normal have the right moments") {
  core::Rng r(7);
  const int n = 200000;
  double su = 0, sn = 0, sn2 = 0;
  int counts[5] = {0};
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    CHECK((u >= 0 && u < 1));
    su += u;
    const double z = r.normal();
    sn += z;
    sn2 += z * z;
    counts[r.below(5)]++;
  }
  CHECK(su / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(std::abs(sn / n) < 0.01);
  CHECK(sn2 / n == doctest::Approx(1.0).epsilon(0.02));
  for (int k = 0; k < 5; ++k) CHECK(counts[k] / double(n) == doctest::Approx(0.2).epsilon(0.03));
}
