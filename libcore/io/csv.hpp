// Numeric CSV tables: every data field a finite double, an optional header, '#' comments.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace core::io {

struct NumericTable {
  std::vector<std::string> columns;       // header names, or "c0","c1",... when the file has no header
  std::vector<double> values;             // row-major, rows*cols
  std::size_t rows = 0, cols = 0;
  std::vector<std::size_t> source_lines;  // 1-based file line of each row
  double at(std::size_t r, std::size_t c) const { return values[r * cols + c]; }
};

// Reads a comma-separated table of finite numbers. Fields are whitespace-trimmed; blank lines and
// lines whose first non-blank character is '#' are skipped. The first remaining line is the header
// when none of its fields is a number (so "1,2x" is a data line with a bad field, not a header). Every row must have as many fields as the first row (or
// the header), and exactly expected_cols when that is > 0.
// Throws InputMissingError when the file cannot be opened, IoError when reading fails, DataError
// ("FILE:LINE: field 2 'abc' is not a number", "FILE:LINE: expected 2 fields, got 3",
// "FILE:LINE: field 1 is NaN/infinite", "FILE: no data rows") for bad content.
NumericTable read_numeric_csv(const std::filesystem::path& path, std::size_t expected_cols = 0);

// Writes an optional header line (none when `columns` is empty) and the rows, each value with 17
// significant digits (reads back bit-exact), atomically: the file appears whole or not at all.
// Throws std::invalid_argument when the sizes disagree, DataError for a value that is not finite
// or a column name the reader could not read back (empty, contains ',' or a line break, starts
// with '#', or a header with a name that is a number), IoError when writing fails.
void write_numeric_csv(const std::filesystem::path& path, const std::vector<std::string>& columns,
                       const std::vector<double>& values, std::size_t rows, std::size_t cols);

}  // namespace core::io
