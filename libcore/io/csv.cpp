// Numeric CSV reading and writing (see csv.hpp). Numbers are parsed with std::from_chars (locale
// independent, exact round trip with the 17-digit output of the writer).
#include "io/csv.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "io/input.hpp"

namespace core::io {
namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (;;) {
    const std::size_t comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

// The whole field as a double (NaN and inf included), or false when it is not a number.
bool parse_number(std::string_view field, double& out) {
  if (field.size() > 1 && field.front() == '+' && field[1] != '-' && field[1] != '+') field.remove_prefix(1);
  if (field.empty()) return false;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  if (ec == std::errc::result_out_of_range) {  // beyond double range: report it as infinite
    out = field.front() == '-' ? -HUGE_VAL : HUGE_VAL;
    return end == field.data() + field.size();
  }
  return ec == std::errc() && end == field.data() + field.size();
}

bool any_number(const std::vector<std::string_view>& fields) {
  double ignored;
  for (auto f : fields)
    if (parse_number(f, ignored)) return true;
  return false;
}

}  // namespace

NumericTable read_numeric_csv(const std::filesystem::path& path, std::size_t expected_cols) {
  std::ifstream in = open_input(path);
  const std::string file = path.string();
  NumericTable table;
  bool have_shape = false;
  std::string raw;
  std::size_t line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = raw;
    if (line_no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // UTF-8 BOM
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> fields = split_fields(line);
    const std::string where = file + ":" + std::to_string(line_no) + ": ";
    if (!have_shape) {
      have_shape = true;
      table.cols = fields.size();
      if (expected_cols > 0 && fields.size() != expected_cols)
        throw DataError(where + "expected " + std::to_string(expected_cols) + " fields, got " + std::to_string(fields.size()));
      if (!any_number(fields)) {  // a first line with a number in it is data (a typo is an error, not a header)
        for (auto f : fields) table.columns.emplace_back(f);
        continue;
      }
      for (std::size_t c = 0; c < fields.size(); ++c) table.columns.push_back(std::string("c").append(std::to_string(c)));
    }
    if (fields.size() != table.cols)
      throw DataError(where + "expected " + std::to_string(table.cols) + " fields, got " + std::to_string(fields.size()));
    for (std::size_t c = 0; c < fields.size(); ++c) {
      double v;
      if (!parse_number(fields[c], v))
        throw DataError(where + "field " + std::to_string(c + 1) + " " + quote_excerpt(fields[c]) + " is not a number");
      if (!std::isfinite(v))
        throw DataError(where + "field " + std::to_string(c + 1) + " " + quote_excerpt(fields[c]) + " is a NaN/infinite value");
      table.values.push_back(v);
    }
    table.source_lines.push_back(line_no);
    ++table.rows;
  }
  if (in.bad()) throw IoError(file + ": read failed after line " + std::to_string(line_no));
  if (table.rows == 0) throw DataError(file + ": no data rows");
  return table;
}

void write_numeric_csv(const std::filesystem::path& path, const std::vector<std::string>& columns,
                       const std::vector<double>& values, std::size_t rows, std::size_t cols) {
  const std::string file = path.string();
  if (cols == 0 || values.size() != rows * cols || (!columns.empty() && columns.size() != cols))
    throw std::invalid_argument("write_numeric_csv(" + file + "): " + std::to_string(values.size()) + " values, " +
                                std::to_string(columns.size()) + " column names for " + std::to_string(rows) +
                                " rows x " + std::to_string(cols) + " columns");
  for (const std::string& name : columns) {
    if (name.empty() || trim(name) != name || name.find_first_of(",\r\n") != std::string::npos)
      throw DataError(file + ": column name " + quote_excerpt(name) +
                      " cannot be written (empty, surrounding blanks, ',' or a line break)");
  }
  if (!columns.empty()) {
    if (columns.front().front() == '#')
      throw DataError(file + ": first column name " + quote_excerpt(columns.front()) + " would read as a comment");
    if (any_number({columns.begin(), columns.end()}))
      throw DataError(file + ": a column name is a number, so the header would read back as a data row");
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]))
      throw DataError(file + ": value at row " + std::to_string(i / cols) + ", column " + std::to_string(i % cols) +
                      " is NaN/infinite and cannot be read back");
  }

  AtomicFile out(path);
  std::ostream& os = out.stream();
  for (std::size_t c = 0; c < columns.size(); ++c) os << (c ? "," : "") << columns[c];
  if (!columns.empty()) os << '\n';
  char buf[32];
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      std::snprintf(buf, sizeof buf, "%.17g", values[r * cols + c]);
      if (c) os << ',';
      os << buf;
    }
    os << '\n';
  }
  out.commit();
}

}  // namespace core::io
