// io::MappedFile: a file's bytes in place; a missing file, a folder and a fifo are InputMissingError
// naming the path, and a fifo is refused at once (no wait for a writer that never comes).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "common/errors.hpp"
#include "io/mapped_file.hpp"
#include "test_support.hpp"

using core::io::MappedFile;
using core::test::TempDir;

TEST_CASE("MappedFile maps a file's bytes; an empty file maps to no bytes") {
  TempDir dir("io_mapped_file");
  core::test::write_text(dir / "a.bin", "hello");
  const MappedFile f(dir / "a.bin");
  REQUIRE(f.bytes().size() == 5);
  CHECK(std::string(reinterpret_cast<const char*>(f.bytes().data()), 5) == "hello");
  core::test::write_text(dir / "empty.bin", "");
  CHECK(MappedFile(dir / "empty.bin").bytes().empty());
}

TEST_CASE("MappedFile refuses a missing file, a folder and a fifo with InputMissingError naming it, at once") {
  TempDir dir("io_mapped_file_bad");
  CHECK_THROWS_WITH_AS(MappedFile(dir / "absent.bin"), doctest::Contains("absent.bin: no such file"),
                       core::InputMissingError);
  CHECK_THROWS_WITH_AS(MappedFile(dir.path()), doctest::Contains("is a directory"), core::InputMissingError);
  REQUIRE(::mkfifo((dir / "fifo.bin").c_str(), 0600) == 0);
  ::alarm(10);  // a blocking open would wait forever for a writer: fail the test instead
  CHECK_THROWS_WITH_AS(MappedFile(dir / "fifo.bin"), doctest::Contains("fifo.bin: not a regular file"),
                       core::InputMissingError);
  ::alarm(0);
}
