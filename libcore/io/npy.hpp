// NumPy .npy arrays (format versions 1.0, 2.0, 3.0 read; 1.0 written, 2.0 when the header needs
// it), little-endian, C order. Element types: <f2 <f4 <f8 |i1 |u1 <u2 <i4 <i8 |b1, mapped to
// Float16, float, double, int8_t, uint8_t, uint16_t, int32_t, int64_t, bool.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "io/half.hpp"

namespace core::io {

// The numpy descr string of an element type (compile error for an unsupported one).
template <class T>
constexpr std::string_view npy_descr() {
  if constexpr (std::is_same_v<T, float>) return "<f4";
  else if constexpr (std::is_same_v<T, double>) return "<f8";
  else if constexpr (std::is_same_v<T, Float16>) return "<f2";
  else if constexpr (std::is_same_v<T, std::int8_t>) return "|i1";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "|u1";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "<u2";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "<i4";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "<i8";
  else if constexpr (std::is_same_v<T, bool>) return "|b1";
  else static_assert(!sizeof(T), "npy: unsupported element type");
}

struct NpyArray {
  std::string source;                // the file it was read from (for error messages)
  std::string dtype;                 // numpy descr, e.g. "<f4"
  std::vector<std::size_t> shape;    // empty for a 0-d array (one element)
  std::vector<std::byte> bytes;      // raw little-endian element data, C order
  std::size_t size() const;          // number of elements (product of shape)

  // The elements converted to T. Allowed when every value converts exactly: float dtypes to an
  // equal or wider float type; integer and bool dtypes to any integer or float type whose range
  // holds every stored value (checked value by value); bool only from |b1; Float16 only from <f2.
  // Throws DataError naming the file, the dtype and T otherwise (e.g. <f8 as float, <f4 as int).
  template <class T>
  std::vector<T> as() const;
};

// The bytes of an .npy header (magic, version, length, dict, padding) for `descr` and `shape`,
// laid out exactly as numpy >= 1.24 writes it.
std::string npy_header(std::string_view descr, std::span<const std::size_t> shape);

// Writes header + raw data atomically. Throws std::invalid_argument when data_bytes does not match
// the shape, IoError when writing fails.
void write_npy_raw(const std::filesystem::path& path, std::string_view descr, std::span<const std::size_t> shape,
                   std::span<const std::byte> data_bytes);

template <class T>
void write_npy(const std::filesystem::path& path, const T* data, const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  write_npy_raw(path, npy_descr<T>(), shape, std::as_bytes(std::span<const T>(data, n)));
}

// Reads and validates an .npy file. Throws InputMissingError, IoError, or DataError naming the file
// for a bad magic, unsupported version, malformed header dict, fortran_order True, big-endian or
// unsupported dtype, invalid bool bytes, truncated data or trailing bytes.
NpyArray read_npy(const std::filesystem::path& path);

// Parses the bytes of a whole .npy file already in memory, as read_npy; `source` names it in errors.
NpyArray parse_npy(std::span<const std::byte> file, const std::string& source);

}  // namespace core::io
