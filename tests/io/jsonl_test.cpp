// JSON Lines: the append writer's exact output, reading back with line numbers, and errors naming
// FILE:LINE for bad or truncated lines.
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "io/jsonl.hpp"
#include "io_test_util.hpp"
#include "test_support.hpp"

using namespace core::io;
using nlohmann::json;

TEST_CASE("JSONL writer appends whole flushed lines; reader returns them in order") {
  core::test::TempDir dir("io-jsonl");
  const auto path = dir / "log.jsonl";
  {
    JsonlWriter w(path);
    w.write({{"step", 1}, {"loss", 0.5}});
    // Flushed per line: visible before the writer is closed.
    CHECK(core::test::read_text(path) == "{\"loss\":0.5,\"step\":1}\n");
    w.write(json::array({1, "two"}));
  }
  {
    JsonlWriter w(path);  // reopening appends
    w.write("text with \"quotes\"\nand a newline");
  }
  CHECK(core::test::read_text(path) ==
        "{\"loss\":0.5,\"step\":1}\n[1,\"two\"]\n\"text with \\\"quotes\\\"\\nand a newline\"\n");
  const std::vector<json> values = read_jsonl(path);
  REQUIRE(values.size() == 3);
  CHECK(values[0]["step"] == 1);
  CHECK(values[1][1] == "two");
  CHECK(values[2] == "text with \"quotes\"\nand a newline");
}

TEST_CASE("JSONL reader skips blank lines and reports line numbers") {
  core::test::TempDir dir("io-jsonl");
  const auto path = dir / "a.jsonl";
  core::test::write_text(path, "{\"a\":1}\n\n  \r\n{\"a\":2}\r\n");
  std::vector<std::size_t> lines;
  for_each_jsonl(path, [&](const json& v, std::size_t line) {
    lines.push_back(line);
    CHECK(v.contains("a"));
  });
  CHECK(lines == std::vector<std::size_t>{1, 4});
}

TEST_CASE("json_excerpt quotes scalars and describes containers without recursing") {
  CHECK(json_excerpt(nlohmann::json("gpt2")) == "'gpt2'");
  CHECK(json_excerpt(nlohmann::json(7)) == "7");
  CHECK(json_excerpt(nlohmann::json(nullptr)) == "null");
  CHECK(json_excerpt(nlohmann::json::array({1, 2})) == "an array of 2 values");
  CHECK(json_excerpt(nlohmann::json::object()) == "an object of 0 keys");
  CHECK(json_excerpt(nlohmann::json(std::string(100, 'x'))).size() < 60);
  // 100,000 levels: a recursive dump overflowed the stack here.
  const nlohmann::json deep = nlohmann::json::parse(std::string(100000, '[') + std::string(100000, ']'));
  CHECK(json_excerpt(deep) == "an array of 1 values");
}

TEST_CASE("JSONL errors name the file and line") {
  core::test::TempDir dir("io-jsonl");
  const auto path = dir / "bad.jsonl";
  const std::string file = path.string();
  core::test::write_text(path, "{\"a\":1}\n{\"a\":2}\n{\"a\":\n");
  CHECK_THROWS_CONTAINING(core::DataError, file + ":3: invalid JSON", read_jsonl(path));
  core::test::write_text(path, "{\"a\":1}\n{\"a\": 2, \"b\"");  // truncated last line, no newline
  CHECK_THROWS_CONTAINING(core::DataError, file + ":2: invalid JSON", read_jsonl(path));
  core::test::write_text(path, "{\"a\":1} {\"b\":2}\n");  // two values on one line
  CHECK_THROWS_CONTAINING(core::DataError, file + ":1: invalid JSON", read_jsonl(path));
  core::test::write_text(path, "{\"a\":1}\n{\"a\": 1e999}\n");  // out of double's range: out_of_range, not parse_error
  CHECK_THROWS_CONTAINING(core::DataError, file + ":2: invalid JSON", read_jsonl(path));
  CHECK_THROWS_CONTAINING(core::InputMissingError, "absent.jsonl", read_jsonl(dir / "absent.jsonl"));
  CHECK_THROWS_CONTAINING(core::IoError, "", JsonlWriter w(dir / "no" / "dir.jsonl"));
  CHECK_FALSE(std::filesystem::exists(dir / "no"));
  JsonlWriter w(dir / "u.jsonl");
  CHECK_THROWS_AS(w.write(std::string("\xFF\xFE")), std::invalid_argument);  // not UTF-8
  CHECK(core::test::read_text(dir / "u.jsonl").empty());
}
