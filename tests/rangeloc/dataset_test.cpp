// range-certify's dataset folder: round trip through sim's writer, and the bad-input rules
// (missing files: InputMissingError / exit 66; malformed rows: DataError / exit 65 naming FILE:LINE).
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "rangeloc/dataset.hpp"
#include "rangeloc/simulate.hpp"
#include "rangeloc/starloc.hpp"
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
  write_folder(dir, kAnchors, "t,anchor,range\n0,1,1\n0,1e300,2\n");  // no integer (undefined as a cast)
  CHECK(data_error(dir).find("ranges.csv:3: anchor 1") != std::string::npos);
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

// Found by fuzz_starloc (tests/fuzz): a dataset_params.json that is no list of run objects threw nlohmann's
// type_error (exit 1), and ids too large for an integer or a missing tag_pos_y/z column were undefined behaviour.
TEST_CASE("STAR-loc: malformed run tables, ids and columns are DataErrors naming the file") {
  TempDir dir("rangeloc-starloc-bad");
  const std::string uwb_header = "time_s,range,from_id,to_id,tag_pos_x,tag_pos_y,tag_pos_z\n";
  std::string rows;
  for (int i = 0; i < 8; ++i)
    rows += std::to_string(0.1 * i) + ",2.0,1," + std::to_string(10 + i % 4) + ",0.5,0.5,1.0\n";
  const std::string markers = ",x,y,z\n10,0,0,0\n11,4,0,0\n12,0,4,0\n13,0,0,3\n";
  const auto read = [&](const std::string& params, const std::string& uwb) {
    write_text(dir / "dataset_params.json", params);
    write_text(dir / "uwb_markers_v1.csv", markers);
    write_text(dir / "run" / "uwb.csv", uwb);
    try {
      read_starloc((dir / "run").string(), {});
    } catch (const core::DataError& e) {
      return std::string(e.what());
    }
    return std::string("no DataError");
  };
  const std::string ok_params = R"([{"name": "run", "landmarks": "v1"}])";
  write_text(dir / "dataset_params.json", ok_params);
  write_text(dir / "uwb_markers_v1.csv", markers);
  write_text(dir / "run" / "uwb.csv", uwb_header + rows);
  CHECK(read_starloc((dir / "run").string(), {}).num_measurements() == 8);  // the well-formed folder reads
  CHECK(read("42", uwb_header + rows).find("expected a JSON array of runs") != std::string::npos);
  CHECK(read(R"([3, "run", {"name": 5}, {"name": "run", "landmarks": 1}])", uwb_header + rows)
            .find("run 'run' has no \"landmarks\" string") != std::string::npos);
  CHECK(read(R"([3, {"name": "other", "landmarks": "v1"}])", uwb_header + rows).find("no run named 'run'") !=
        std::string::npos);
  CHECK(read(ok_params, uwb_header + "0.9,2.0,1,1e300,0.5,0.5,1.0\n" + rows).find("uwb.csv:2: to_id is not an integer id") !=
        std::string::npos);
  CHECK(read(ok_params, "time_s,range,from_id,to_id,tag_pos_x\n0,2,1,10,0.5\n").find("no column 'tag_pos_y'") !=
        std::string::npos);
  write_text(dir / "run" / "uwb.csv", uwb_header + rows);
  write_text(dir / "uwb_markers_v1.csv", ",x,y,z\n1e20,0,0,0\n");
  try {
    read_starloc((dir / "run").string(), {});
    FAIL("expected DataError");
  } catch (const core::DataError& e) {
    CHECK(std::string(e.what()).find("uwb_markers_v1.csv:2: anchor id is not an integer id") != std::string::npos);
  }
}
