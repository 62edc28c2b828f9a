// JSON Lines (https://jsonlines.org): one JSON value per line, UTF-8, '\n' separated.
#pragma once
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace core::io {

// A JSON value for an error message without recursing into it: a string as io::quote_excerpt, another scalar as
// its JSON text, an array or object by its kind and size (a value nested 100,000 deep must not overflow the stack
// in a dump). Invalid UTF-8 in a string is left to the writers of JSON output, which replace it.
std::string json_excerpt(const nlohmann::json& value);

// Calls fn(value, line) for each non-blank line in order (line is 1-based). Throws
// InputMissingError, IoError, or DataError "FILE:LINE: invalid JSON: ..." (a truncated last line
// included). Exceptions from fn propagate.
void for_each_jsonl(const std::filesystem::path& path,
                    const std::function<void(const nlohmann::json&, std::size_t)>& fn);

// All values of the file (see for_each_jsonl).
std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path);

// Appends one compact JSON value per line, flushed after each line, so a reader (or a crash) sees
// only whole lines written so far. Creates the file when absent.
class JsonlWriter {
 public:
  explicit JsonlWriter(const std::filesystem::path& path);  // throws IoError when it cannot open
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  // Throws IoError when writing fails, std::invalid_argument when a string is not valid UTF-8.
  void write(const nlohmann::json& value);

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace core::io
