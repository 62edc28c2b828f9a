// Plans and compression ratios against values computed by hand.
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "nxm/plan.hpp"

using namespace core::nxm;

TEST_CASE("plan parsing: settings, every component once, bad keep/group/bits named") {
  const Plan p = parse_plan("qkv=2:4:8,ao=dense:16,ffn1=1:4:4,ffn2=4:8:32");
  CHECK(p[Component::qkv] == Setting{2, 4, 8});
  CHECK(p[Component::ao] == Setting{0, 0, 16});
  CHECK(p[Component::ffn1] == Setting{1, 4, 4});
  CHECK(p[Component::ffn2] == Setting{4, 8, 32});
  CHECK(parse_plan(p.to_string()) == p);
  CHECK(p[Component::ffn2].index_bits() == 3);
  CHECK(p[Component::qkv].index_bits() == 2);
  CHECK_THROWS_AS(parse_plan("qkv=2:4:8,ao=2:4:8,ffn1=2:4:8"), core::UsageError);  // ffn2 missing
  try {
    parse_plan("qkv=2:4:8,ao=2:4:8,ffn1=2:4:8");
  } catch (const core::UsageError& e) {
    CHECK(std::string(e.what()).find("ffn2") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_plan("qkv=4:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8"), core::UsageError);  // keep >= group
  CHECK_THROWS_AS(parse_plan("qkv=2:4:6,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8"), core::UsageError);  // bits
  CHECK_THROWS_AS(parse_plan("qkv=2:4:8,qkv=2:4:8,ffn1=2:4:8,ffn2=2:4:8"), core::UsageError);
  CHECK_THROWS_AS(parse_plan("qkv=2:4:8,attn=2:4:8,ffn1=2:4:8,ffn2=2:4:8"), core::UsageError);
}

TEST_CASE("compression ratios: the papers' counts and the hardware's, by hand") {
  // 2:4 with int4 everywhere: 1/2 * 4/32 of the bits -> 93.75 %.
  const auto r1 = compression_ratio(12, 768, 3072, parse_plan("qkv=2:4:4,ao=2:4:4,ffn1=2:4:4,ffn2=2:4:4"));
  CHECK(r1.cr_paper() == doctest::Approx(93.75));
  // Hardware: kept values carry 4 + 2 bits, plus 32 bits per row. Weights per layer: 12 H^2 = 7077888,
  // rows per layer: 3H + H + 4H + H = 9H = 6912.
  const double w = 12.0 * 768 * 768, rows = 9.0 * 768;
  CHECK(r1.cr_hardware() == doctest::Approx(100.0 * (1.0 - (0.5 * w * 6 + rows * 32) / (w * 32))));
  // 2:4 int8: 87.5 %; dense fp32: 0; dense fp16: 50 %.
  CHECK(compression_ratio(2, 64, 256, parse_plan("qkv=2:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8")).cr_paper() ==
        doctest::Approx(87.5));
  CHECK(compression_ratio(2, 64, 256, parse_plan("qkv=dense:32,ao=dense:32,ffn1=dense:32,ffn2=dense:32")).cr_hardware() ==
        doctest::Approx(0.0));
  // Mixed, one layer H = 4, F = 8: qkv 48 weights dense fp16 = 768 bits, ao 16 weights 2:4 int8 = 64 bits
  // (+ 8 x 2 index + 4 x 32 scale), ffn1 32 weights 1:4 int4 = 32 bits (+ 8 x 2 + 8 x 32), ffn2 32
  // weights fp32 = 1024 bits; dense 128 x 32 = 4096 bits.
  const auto r2 = compression_ratio(1, 4, 8, parse_plan("qkv=dense:16,ao=2:4:8,ffn1=1:4:4,ffn2=dense:32"));
  CHECK(r2.dense_bits == 4096.0);
  CHECK(r2.paper_bits == 768.0 + 64.0 + 32.0 + 1024.0);
  CHECK(r2.hardware_bits == 768.0 + 64.0 + 16.0 + 128.0 + 32.0 + 16.0 + 256.0 + 1024.0);
  CHECK(r2.cr_paper() == doctest::Approx(100.0 * (1.0 - 1888.0 / 4096.0)));
}
