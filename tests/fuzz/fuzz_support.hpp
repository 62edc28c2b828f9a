// Shared pieces of the libFuzzer targets (scripts/fuzz.sh builds and runs them). The rule every parser keeps:
// any bytes end in a result or in core::Error (DataError, UsageError, ...: exit 65/2/66/74 in the tools), never
// another exception (libFuzzer reports it as an uncaught exception), a crash, a sanitizer report or a hang.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.hpp"
#include "common/log.hpp"

namespace fuzz {

// Parsers warn about what they skip (g2o's unknown tags, ...): millions of lines that slow the run and bury its
// report. Only errors are logged.
inline const bool quiet_logs = [] {
  core::log::set_level(core::log::level::err);
  return true;
}();

// The input as text.
inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A private temporary folder for this process (removed at exit): parsers that take paths read files in it.
inline const std::filesystem::path& scratch() {
  static const struct Dir {
    std::filesystem::path path;
    Dir() : path(std::filesystem::temp_directory_path() / ("toolkit-fuzz-" + std::to_string(::getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

// Writes `bytes` to scratch()/name and returns the path.
inline std::filesystem::path file(const std::string& name, std::string_view bytes) {
  const auto path = scratch() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A folder scratch()/name (created) for parsers that read several files of one folder.
inline std::filesystem::path folder(const std::string& name) {
  const auto path = scratch() / name;
  std::filesystem::create_directories(path);
  return path;
}

// The input cut at NUL bytes into at most `max_parts` pieces (the last keeps any further NULs): one fuzz
// input feeds the several files of a dataset.
inline std::vector<std::string_view> split(std::string_view input, std::size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const auto cut = input.find('\0');
    if (cut == std::string_view::npos) break;
    parts.push_back(input.substr(0, cut));
    input.remove_prefix(cut + 1);
  }
  parts.push_back(input);
  return parts;
}

// Runs the parser; a core::Error is the expected answer to bad bytes, anything else propagates.
template <class F>
int expect_clean(F&& parse) {
  try {
    parse();
  } catch (const core::Error&) {
  }
  return 0;
}

}  // namespace fuzz
