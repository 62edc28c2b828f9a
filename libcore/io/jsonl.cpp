// JSON Lines reading (errors name FILE:LINE) and an append writer that flushes every line.
#include "io/jsonl.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"
#include "io/input.hpp"

namespace core::io {

std::string json_excerpt(const nlohmann::json& value) {
  if (value.is_array()) return "an array of " + std::to_string(value.size()) + " values";
  if (value.is_object()) return "an object of " + std::to_string(value.size()) + " keys";
  if (value.is_string()) return quote_excerpt(value.get_ref<const std::string&>());
  return value.dump();  // a number, boolean or null: short
}

void for_each_jsonl(const std::filesystem::path& path,
                    const std::function<void(const nlohmann::json&, std::size_t)>& fn) {
  std::ifstream in = open_input(path);
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
      throw DataError(path.string() + ":" + std::to_string(line_no) + ": invalid JSON: " + e.what());
    }
    fn(value, line_no);
  }
  if (in.bad()) throw IoError(path.string() + ": read failed after line " + std::to_string(line_no));
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::vector<nlohmann::json> values;
  for_each_jsonl(path, [&](const nlohmann::json& v, std::size_t) { values.push_back(v); });
  return values;
}

JsonlWriter::JsonlWriter(const std::filesystem::path& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "ab");
  if (!file_) throw IoError(path.string() + ": cannot open for appending: " + std::strerror(errno));
}

JsonlWriter::~JsonlWriter() {
  if (file_) std::fclose(file_);
}

void JsonlWriter::write(const nlohmann::json& value) {
  std::string line;
  try {
    line = value.dump();
  } catch (const nlohmann::json::type_error& e) {
    throw std::invalid_argument(path_.string() + ": value cannot be written as JSON: " + e.what());
  }
  line += '\n';
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw IoError(path_.string() + ": write failed: " + std::strerror(errno));
}

}  // namespace core::io
