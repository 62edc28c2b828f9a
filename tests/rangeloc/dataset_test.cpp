// range-certify's dataset folder: round trip through sim's writer, and the bad-input rules
// (missing files: InputMissingError / exit 66; malformed rows: DataError / exit 65 naming FILE:LINE).
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "rangeloc/dataset.hpp"
#include "rangeloc/simulate.hpp"
#include "test_support.hpp"

using namespace core::rangeloc;
using namespace core::test;

namespace {

void write_folder(const TempDir& dir, const std::string& anchors, const std::string& ranges) {
  write_text(dir / "anchors.csv", anchors);
  write_text(dir / "ranges.csv", ranges);
}

std::string data_error(const TempDir& dir) {
  try {
    read_dataset(dir.path());
  } catch (const core::DataError& e) {
    return e.what();
  }
  return "no DataError";
}

const char* kAnchors = "id,x,y\n1,0,0\n2,4,0\n3,0,4\n";

}  // namespace

TEST_CASE("sim writes a folder that reads back to the same problem") {
  TempDir dir("rangeloc-roundtrip");
  SimOptions o;
  o.n = 20;
  o.dim = 3;
  o.anchors = 5;
  o.ranges = "2";
  o.seed = 4;
  const Dataset a = simulate(o);
  write_dataset(a, dir.path());
  const Dataset b = read_dataset(dir.path());
  CHECK(b.dim == 3);
  CHECK(b.num_states() == 20);
  CHECK(b.num_measurements() == 40);
  CHECK(b.times == a.times);
  CHECK((b.anchors - a.anchors).norm() == 0.0);
  for (int i = 0; i < 40; ++i) {
    CHECK(b.measurements[i].anchor == a.measurements[i].anchor);
    CHECK(b.measurements[i].range == a.measurements[i].range);
  }
  CHECK((b.groundtruth.positions - a.groundtruth.positions).norm() == 0.0);
  CHECK(b.groundtruth.has_velocities());  // by finite differences
}

TEST_CASE("bad input: 66 for missing files, 65 with FILE:LINE for malformed rows") {
  TempDir dir("rangeloc-bad");
  CHECK_THROWS_AS(read_dataset(dir / "nope"), core::InputMissingError);
  write_text(dir / "anchors.csv", kAnchors);
  CHECK_THROWS_AS(read_dataset(dir.path()), core::InputMissingError);  // no ranges.csv

  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n0,9,2\n");
  CHECK(data_error(dir).find("ranges.csv:3: anchor 9") != std::string::npos);
  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n0,2,nan\n");
  CHECK(data_error(dir).find("ranges.csv:3") != std::string::npos);
  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n0,2,-2\n");
  CHECK(data_error(dir).find("ranges.csv:3: negative range") != std::string::npos);
  write_folder(dir, kAnchors, "t,anchor,range\n1,1,1\n0,2,2\n");
  CHECK(data_error(dir).find("ranges.csv:3: time") != std::string::npos);
  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n0,1,2\n");
  CHECK(data_error(dir).find("ranges.csv:3: a second range to anchor 1") != std::string::npos);
  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n1,2,2\n2,1,1\n");
  CHECK(data_error(dir).find("only 2 distinct anchors") != std::string::npos);
  write_folder(dir, "id,x,y\n1,0,0\n1,4,0\n", "t,anchor,range\n0,1,1\n");
  CHECK(data_error(dir).find("anchors.csv:3: anchor id 1 appears twice") != std::string::npos);
  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n0,2,1\n0,3,1\n");
  write_text(dir / "groundtruth.csv", "t,x,y\n0,1,1\n0,1,2\n");
  CHECK(data_error(dir).find("groundtruth.csv:3: time") != std::string::npos);
  write_text(dir / "groundtruth.csv", "t,x,y\n0,1,1\n1,1,2\n");
  CHECK(read_dataset(dir.path()).num_states() == 1);
}
