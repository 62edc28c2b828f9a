// llm.c token shard tests: the exact byte layout, round trips, and every kind of corruption giving a
// DataError that names the file.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>

#include "common/errors.hpp"
#include "test_support.hpp"
#include "text/shard.hpp"

using namespace core::text;

namespace {

std::string read_bytes(const std::filesystem::path& p) { return core::test::read_text(p); }

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::int32_t header_int(const std::string& bytes, int index) {
  std::int32_t v;
  std::memcpy(&v, bytes.data() + 4 * index, 4);
  return v;
}

void set_header_int(std::string& bytes, int index, std::int32_t v) { std::memcpy(bytes.data() + 4 * index, &v, 4); }

// Expects a DataError whose message names the file and contains `what`.
void check_data_error(const std::filesystem::path& p, const std::string& what) {
  CAPTURE(what);
  try {
    read_shard(p);
    FAIL("expected DataError");
  } catch (const core::DataError& e) {
    const std::string msg = e.what();
    CHECK(msg.find(p.string()) != std::string::npos);
    CHECK(msg.find(what) != std::string::npos);
  }
  CHECK_THROWS_AS(read_shard_header(p), core::DataError);
}

}  // namespace

TEST_CASE("shard layout is llm.c's: 256 int32 header then uint16 tokens") {
  const core::test::TempDir dir("text-shard");
  const std::vector<std::int32_t> tokens = {0, 1, 50256, 65535, 42};
  write_shard(dir / "a.bin", tokens);
  const std::string bytes = read_bytes(dir / "a.bin");
  REQUIRE(bytes.size() == 1024 + 2 * tokens.size());
  CHECK(header_int(bytes, 0) == 20240520);
  CHECK(header_int(bytes, 1) == 1);
  CHECK(header_int(bytes, 2) == 5);
  for (int i = 3; i < 256; ++i) CHECK(header_int(bytes, i) == 0);
  std::uint16_t third;
  std::memcpy(&third, bytes.data() + 1024 + 4, 2);
  CHECK(third == 50256);
  CHECK(read_shard_header(dir / "a.bin") == 5);
  CHECK(read_shard(dir / "a.bin") == std::vector<std::uint16_t>{0, 1, 50256, 65535, 42});
  write_shard(dir / "empty.bin", {});
  CHECK(read_shard(dir / "empty.bin").empty());
  CHECK_FALSE(std::filesystem::exists(dir / "a.bin.tmp"));
}

TEST_CASE("tokens that do not fit uint16 are refused and no file appears") {
  const core::test::TempDir dir("text-shard-range");
  CHECK_THROWS_AS(write_shard(dir / "x.bin", std::vector<std::int32_t>{1, 65536}), core::DataError);
  CHECK_THROWS_AS(write_shard(dir / "x.bin", std::vector<std::int32_t>{-1}), core::DataError);
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("corrupt or truncated shards give DataError naming the file") {
  const core::test::TempDir dir("text-shard-bad");
  write_shard(dir / "good.bin", std::vector<std::int32_t>{1, 2, 3, 4});
  const std::string good = read_bytes(dir / "good.bin");

  std::string bad_magic = good;
  set_header_int(bad_magic, 0, 20240326);
  write_bytes(dir / "magic.bin", bad_magic);
  check_data_error(dir / "magic.bin", "bad magic");

  std::string bad_version = good;
  set_header_int(bad_version, 1, 2);
  write_bytes(dir / "version.bin", bad_version);
  check_data_error(dir / "version.bin", "unsupported version 2");

  write_bytes(dir / "truncated.bin", good.substr(0, good.size() - 1));
  check_data_error(dir / "truncated.bin", "truncated");

  write_bytes(dir / "trailing.bin", good + "xx");
  check_data_error(dir / "trailing.bin", "header says 4 tokens");

  write_bytes(dir / "short.bin", good.substr(0, 100));
  check_data_error(dir / "short.bin", "shorter than the 1024-byte header");

  std::string negative = good;
  set_header_int(negative, 2, -4);
  write_bytes(dir / "negative.bin", negative);
  check_data_error(dir / "negative.bin", "header says -4 tokens");

  CHECK_THROWS_AS(read_shard(dir / "absent.bin"), core::InputMissingError);
}
