// Numeric CSV: header detection, comments and blanks, exact round trips, and every error naming
// FILE:LINE with the right exception type; failed writes leave no file behind.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <numbers>

#include "common/errors.hpp"
#include "io/csv.hpp"
#include "io_test_util.hpp"
#include "test_support.hpp"

using core::io::read_numeric_csv;
using core::io::write_numeric_csv;

TEST_CASE("CSV with header, comments, blank lines, blanks around fields and CRLF") {
  core::test::TempDir dir("io-csv");
  const auto path = dir / "points.csv";
  core::test::write_text(path,
                         "# points of a test\n"
                         "\n"
                         " x , y\r\n"
                         "1, 2.5\r\n"
                         "  # a comment between rows\n"
                         "-3e2,+4\n"
                         "\n"
                         "0.125,-0\n");
  const auto t = read_numeric_csv(path, 2);
  CHECK(t.columns == std::vector<std::string>{"x", "y"});
  REQUIRE(t.rows == 3);
  REQUIRE(t.cols == 2);
  CHECK(t.values == std::vector<double>{1, 2.5, -300, 4, 0.125, 0});
  CHECK(t.at(1, 0) == -300);
  CHECK(t.source_lines == std::vector<std::size_t>{4, 6, 8});
}

TEST_CASE("CSV without header gets c0, c1, ... and single-column files work") {
  core::test::TempDir dir("io-csv");
  core::test::write_text(dir / "a.csv", "1,2,3\n4,5,6");  // no final newline
  const auto t = read_numeric_csv(dir / "a.csv");
  CHECK(t.columns == std::vector<std::string>{"c0", "c1", "c2"});
  CHECK(t.rows == 2);
  CHECK(t.at(1, 2) == 6);
  CHECK(t.source_lines == std::vector<std::size_t>{1, 2});

  core::test::write_text(dir / "b.csv", "value\n7\n8\n");
  const auto b = read_numeric_csv(dir / "b.csv", 1);
  CHECK(b.columns == std::vector<std::string>{"value"});
  CHECK(b.values == std::vector<double>{7, 8});
}

TEST_CASE("CSV errors name the file and the line") {
  core::test::TempDir dir("io-csv");
  const auto path = dir / "bad.csv";
  const std::string file = path.string();

  core::test::write_text(path, "x,y\n1,2\n# note\n3,abc\n");
  CHECK_THROWS_CONTAINING(core::DataError, file + ":4: field 2 'abc' is not a number", read_numeric_csv(path));

  core::test::write_text(path, "1,2\n3,4,5\n");
  CHECK_THROWS_CONTAINING(core::DataError, file + ":2: expected 2 fields, got 3", read_numeric_csv(path));
  CHECK_THROWS_CONTAINING(core::DataError, file + ":1: expected 3 fields, got 2", read_numeric_csv(path, 3));

  core::test::write_text(path, "a,b\n1,\n");
  CHECK_THROWS_CONTAINING(core::DataError, ":2: field 2 '' is not a number", read_numeric_csv(path));

  core::test::write_text(path, "1,2\n\n1,nan\n");
  CHECK_THROWS_CONTAINING(core::DataError, file + ":3: field 2 'nan' is a NaN/infinite value", read_numeric_csv(path));
  core::test::write_text(path, "x\n-inf\n");
  CHECK_THROWS_CONTAINING(core::DataError, ":2: field 1 '-inf' is a NaN/infinite value", read_numeric_csv(path));
  core::test::write_text(path, "x\n1e999\n");
  CHECK_THROWS_CONTAINING(core::DataError, ":2: field 1 '1e999' is a NaN/infinite value", read_numeric_csv(path));

  // Only the first line may be a header: a later text line is an error, not a second header.
  core::test::write_text(path, "1,2\nx,y\n");
  CHECK_THROWS_CONTAINING(core::DataError, ":2: field 1 'x' is not a number", read_numeric_csv(path));
  core::test::write_text(path, "1,2x\n2,3\n3,5\n");  // a typo in the first line is not a header
  CHECK_THROWS_CONTAINING(core::DataError, ":1: field 2 '2x' is not a number", read_numeric_csv(path));
  core::test::write_text(path, "1 2\n");  // not comma separated
  CHECK_THROWS_CONTAINING(core::DataError, "no data rows", read_numeric_csv(path));

  core::test::write_text(path, "# only a comment\nx,y\n\n");
  CHECK_THROWS_CONTAINING(core::DataError, file + ": no data rows", read_numeric_csv(path));
  core::test::write_text(path, "");
  CHECK_THROWS_CONTAINING(core::DataError, file + ": no data rows", read_numeric_csv(path));

  core::test::write_text(path, std::string("1,2\n3,\x01\x02zz\n"));
  CHECK_THROWS_CONTAINING(core::DataError, ":2: field 2 '\\x01\\x02zz' is not a number", read_numeric_csv(path));

  CHECK_THROWS_CONTAINING(core::InputMissingError, (dir / "absent.csv").string(), read_numeric_csv(dir / "absent.csv"));
  CHECK_THROWS_CONTAINING(core::InputMissingError, "directory", read_numeric_csv(dir.path()));
}

TEST_CASE("CSV write then read is bit-exact") {
  core::test::TempDir dir("io-csv");
  const std::vector<double> v = {0.1, 1.0 / 3.0, -1e-300, DBL_MAX, DBL_TRUE_MIN, -0.0, 123456789.0, std::numbers::pi};
  write_numeric_csv(dir / "r.csv", {"a", "b"}, v, 4, 2);
  const auto t = read_numeric_csv(dir / "r.csv", 2);
  CHECK(t.columns == std::vector<std::string>{"a", "b"});
  REQUIRE(t.values.size() == v.size());
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(std::memcmp(&t.values[i], &v[i], sizeof(double)) == 0);
  CHECK(core::test::read_text(dir / "r.csv").substr(0, 24) == "a,b\n0.10000000000000001,");

  write_numeric_csv(dir / "n.csv", {}, {1, 2}, 1, 2);  // no header
  CHECK(core::test::read_text(dir / "n.csv") == "1,2\n");
  CHECK(io_test::listing(dir.path()).size() == 2);  // no temporary files left
}

TEST_CASE("CSV write failures throw and leave no file") {
  core::test::TempDir dir("io-csv");
  CHECK_THROWS_CONTAINING(core::IoError, "", write_numeric_csv(dir / "no" / "such" / "dir.csv", {"a"}, {1}, 1, 1));
  CHECK_FALSE(std::filesystem::exists(dir / "no"));

  std::filesystem::create_directory(dir / "taken");  // the target name is a folder: rename fails
  CHECK_THROWS_CONTAINING(core::IoError, "", write_numeric_csv(dir / "taken", {"a"}, {1}, 1, 1));
  CHECK(io_test::listing(dir.path()) == std::vector<std::string>{"taken"});

  CHECK_THROWS_CONTAINING(core::DataError, "NaN/infinite", write_numeric_csv(dir / "x.csv", {"a"}, {NAN}, 1, 1));
  CHECK_THROWS_CONTAINING(core::DataError, "'a,b'", write_numeric_csv(dir / "x.csv", {"a,b"}, {1}, 1, 1));
  CHECK_THROWS_CONTAINING(core::DataError, "comment", write_numeric_csv(dir / "x.csv", {"#a", "b"}, {1, 2}, 1, 2));
  CHECK_THROWS_CONTAINING(core::DataError, "is a number", write_numeric_csv(dir / "x.csv", {"1", "2"}, {1, 2}, 1, 2));
  CHECK_THROWS_CONTAINING(core::DataError, "is a number", write_numeric_csv(dir / "x.csv", {"x", "2"}, {1, 2}, 1, 2));
  CHECK_THROWS_AS(write_numeric_csv(dir / "x.csv", {"a"}, {1, 2}, 1, 1), std::invalid_argument);
  CHECK_FALSE(std::filesystem::exists(dir / "x.csv"));
}
