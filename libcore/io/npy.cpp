// NumPy .npy reading and writing. Format: numpy/doc/neps/nep-0001-npy-format.rst — magic
// "\x93NUMPY", major, minor, header length (u16 LE for 1.0, u32 LE for 2.0/3.0), a Python dict
// literal {'descr', 'fortran_order', 'shape'} padded with spaces to a 64-byte boundary and ended by
// '\n', then the raw data. Requires a little-endian host (checked at compile time).
#include "io/npy.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "io/input.hpp"

static_assert(std::endian::native == std::endian::little, "core::io npy assumes a little-endian host");

namespace core::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlign = 64;
constexpr std::size_t kGrowthAxisMaxDigits = 21;  // numpy's spare room for growing shape[0]

struct DType {
  std::string_view descr;
  std::size_t itemsize;
};
constexpr DType kNpyDTypes[] = {{"<f2", 2}, {"<f4", 4}, {"<f8", 8}, {"|i1", 1}, {"|u1", 1},
                             {"<u2", 2}, {"<i4", 4}, {"<i8", 8}, {"|b1", 1}};

const DType* find_dtype(std::string_view descr) {
  for (const DType& d : kNpyDTypes)
    if (d.descr == descr) return &d;
  return nullptr;
}

// Product of the dimensions times itemsize, or nullopt on overflow.
std::optional<std::size_t> byte_count(std::span<const std::size_t> shape, std::size_t itemsize) {
  std::size_t n = itemsize;
  for (std::size_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

std::string shape_repr(std::span<const std::size_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s.append(i ? ", " : "").append(std::to_string(shape[i]));
  return s + (shape.size() == 1 ? ",)" : ")");
}

// Parser of the header dict, a small subset of Python literal syntax.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& file) : s_(text), file_(file) {}

  void parse(std::string& descr, bool& fortran_order, std::vector<std::size_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_ws();
      if (consume('}')) break;
      const std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr'");
        if (peek() == '[') fail("structured dtypes are not supported");
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_order) fail("duplicate key 'fortran_order'");
        fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape'");
        shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      skip_ws();
      if (consume('}')) break;
      expect(',');
    }
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected text after the dict");
    if (!have_descr || !have_order || !have_shape) fail("missing key (needs 'descr', 'fortran_order', 'shape')");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(file_ + ": malformed npy header (" + what + ") in " + quote_excerpt(s_));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(char c) {
    if (peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    skip_ws();
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(pos_, 4) == "True") return pos_ += 4, true;
    if (s_.substr(pos_, 5) == "False") return pos_ += 5, false;
    fail("fortran_order must be True or False");
  }
  std::size_t integer() {
    std::size_t v = 0;
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const std::size_t digit = static_cast<std::size_t>(s_[pos_++] - '0');
      if (v > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("dimension too large");
      v = v * 10 + digit;
    }
    if (pos_ == start) fail("shape must hold non-negative integers");
    consume('L');  // Python 2 long literal
    return v;
  }
  std::vector<std::size_t> tuple() {
    std::vector<std::size_t> dims;
    if (!consume('(')) fail("shape must be a tuple");
    bool trailing_comma = false;
    for (;;) {
      skip_ws();
      if (consume(')')) break;
      dims.push_back(integer());
      skip_ws();
      trailing_comma = consume(',');
      if (!trailing_comma) {
        skip_ws();
        if (!consume(')')) fail("expected ',' or ')' in shape");
        break;
      }
    }
    if (dims.size() == 1 && !trailing_comma) fail("shape (n) is not a tuple, write (n,)");
    return dims;
  }

  std::string_view s_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

template <class T>
std::string_view type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, Float16>) return "Float16";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_signed_v<T>) return sizeof(T) == 1 ? "int8" : sizeof(T) == 2 ? "int16" : sizeof(T) == 4 ? "int32" : "int64";
  else return sizeof(T) == 1 ? "uint8" : sizeof(T) == 2 ? "uint16" : sizeof(T) == 4 ? "uint32" : "uint64";
}

// Integer (or 0/1 bool) value v as T, or nullopt when T cannot hold it exactly.
template <class T, class S>
std::optional<T> exact_from_integer(S v) {
  if constexpr (std::is_same_v<S, bool>) {
    return static_cast<T>(v ? 1 : 0);
  } else if constexpr (std::is_integral_v<T>) {
    if (!std::in_range<T>(v)) return std::nullopt;
    return static_cast<T>(v);
  } else {
    const T t = static_cast<T>(v);  // an integral value of T, possibly rounded
    const T limit = std::ldexp(T(1), std::numeric_limits<S>::digits);  // 2^digits: just past S's range
    if (!(t < limit) || t < -limit || static_cast<S>(t) != v) return std::nullopt;
    return t;
  }
}

template <class T, class S>
std::vector<T> convert(const NpyArray& a) {
  const std::size_t n = a.size();
  std::vector<T> out(n);
  if constexpr (std::is_same_v<T, bool> && std::is_same_v<S, bool>) {  // std::vector<bool> has no data()
    for (std::size_t i = 0; i < n; ++i) out[i] = a.bytes[i] != std::byte{0};
    return out;
  } else if constexpr (std::is_same_v<T, S>) {
    if (n) std::memcpy(out.data(), a.bytes.data(), n * sizeof(T));
    return out;
  } else {
    const auto mismatch = [&]() -> std::vector<T> {
      throw DataError(a.source + ": npy dtype " + a.dtype + " cannot be read as " + std::string(type_name<T>()) +
                      " without loss");
    };
    constexpr bool s_float = std::is_floating_point_v<S> || std::is_same_v<S, Float16>;
    constexpr bool t_float = std::is_floating_point_v<T>;
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, Float16> || (s_float && !t_float)) {
      return mismatch();
    } else if constexpr (std::is_same_v<S, Float16>) {
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, a.bytes.data() + i * 2, 2);
        out[i] = static_cast<T>(f16_to_float(h));
      }
      return out;
    } else if constexpr (s_float) {
      if (sizeof(T) < sizeof(S)) return mismatch();
      for (std::size_t i = 0; i < n; ++i) {
        S v;
        std::memcpy(&v, a.bytes.data() + i * sizeof(S), sizeof(S));
        out[i] = static_cast<T>(v);
      }
      return out;
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        S v;
        std::memcpy(&v, a.bytes.data() + i * sizeof(S), sizeof(S));
        const std::optional<T> t = exact_from_integer<T>(v);
        if (!t)
          throw DataError(a.source + ": element " + std::to_string(i) + " (value " + std::to_string(v) + ") of npy " +
                          a.dtype + " array does not fit " + std::string(type_name<T>()) + " exactly");
        out[i] = *t;
      }
      return out;
    }
  }
}

}  // namespace

std::size_t NpyArray::size() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

template <class T>
std::vector<T> NpyArray::as() const {
  if (dtype == "<f2") return convert<T, Float16>(*this);
  if (dtype == "<f4") return convert<T, float>(*this);
  if (dtype == "<f8") return convert<T, double>(*this);
  if (dtype == "|i1") return convert<T, std::int8_t>(*this);
  if (dtype == "|u1") return convert<T, std::uint8_t>(*this);
  if (dtype == "<u2") return convert<T, std::uint16_t>(*this);
  if (dtype == "<i4") return convert<T, std::int32_t>(*this);
  if (dtype == "<i8") return convert<T, std::int64_t>(*this);
  if (dtype == "|b1") return convert<T, bool>(*this);
  throw DataError(source + ": unsupported npy dtype " + quote_excerpt(dtype));
}

template std::vector<float> NpyArray::as<float>() const;
template std::vector<double> NpyArray::as<double>() const;
template std::vector<Float16> NpyArray::as<Float16>() const;
template std::vector<bool> NpyArray::as<bool>() const;
template std::vector<std::int8_t> NpyArray::as<std::int8_t>() const;
template std::vector<std::uint8_t> NpyArray::as<std::uint8_t>() const;
template std::vector<std::int16_t> NpyArray::as<std::int16_t>() const;
template std::vector<std::uint16_t> NpyArray::as<std::uint16_t>() const;
template std::vector<std::int32_t> NpyArray::as<std::int32_t>() const;
template std::vector<std::uint32_t> NpyArray::as<std::uint32_t>() const;
template std::vector<std::int64_t> NpyArray::as<std::int64_t>() const;
template std::vector<std::uint64_t> NpyArray::as<std::uint64_t>() const;

std::string npy_header(std::string_view descr, std::span<const std::size_t> shape) {
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shape_repr(shape) + ", }";
  if (!shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(shape[0]).size(), ' ');
  const std::size_t hlen = dict.size() + 1;  // + '\n'
  for (const int major : {1, 2}) {
    const std::size_t prefix = kMagic.size() + 2 + (major == 1 ? 2 : 4);
    const std::size_t padlen = kAlign - (prefix + hlen) % kAlign;  // 1..64, as numpy
    const std::size_t total = hlen + padlen;
    if (major == 1 && total > 0xFFFF) continue;
    std::string out(kMagic);
    out += static_cast<char>(major);
    out += '\0';
    for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((total >> (8 * i)) & 0xFF);
    out += dict;
    out.append(padlen, ' ');
    out += '\n';
    return out;
  }
  throw std::invalid_argument("npy header too long");  // unreachable: version 2.0 holds 4 GiB
}

void write_npy_raw(const std::filesystem::path& path, std::string_view descr, std::span<const std::size_t> shape,
                   std::span<const std::byte> data_bytes) {
  const DType* dt = find_dtype(descr);
  if (!dt) throw std::invalid_argument("write_npy(" + path.string() + "): unsupported dtype " + std::string(descr));
  const std::optional<std::size_t> expected = byte_count(shape, dt->itemsize);
  if (!expected || *expected != data_bytes.size())
    throw std::invalid_argument("write_npy(" + path.string() + "): " + std::to_string(data_bytes.size()) +
                                " data bytes do not match shape " + shape_repr(shape) + " of " + std::string(descr));
  AtomicFile out(path);
  const std::string header = npy_header(descr, shape);
  out.stream().write(header.data(), static_cast<std::streamsize>(header.size()));
  out.stream().write(reinterpret_cast<const char*>(data_bytes.data()), static_cast<std::streamsize>(data_bytes.size()));
  out.commit();
}

NpyArray read_npy(const std::filesystem::path& path) { return parse_npy(read_file_bytes(path), path.string()); }

NpyArray parse_npy(std::span<const std::byte> file, const std::string& source) {
  NpyArray a;
  a.source = source;
  const auto fail = [&](const std::string& what) { throw DataError(a.source + ": " + what); };
  const auto byte_at = [&](std::size_t i) { return static_cast<unsigned char>(file[i]); };

  if (file.size() < kMagic.size() + 2 || std::memcmp(file.data(), kMagic.data(), kMagic.size()) != 0)
    fail("not an npy file (bad magic, expected \\x93NUMPY)");
  const unsigned major = byte_at(6), minor = byte_at(7);
  if (major < 1 || major > 3 || minor != 0)
    fail("unsupported npy format version " + std::to_string(major) + "." + std::to_string(minor));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagic.size() + 2 + len_bytes;
  if (file.size() < prefix) fail("truncated npy header (file has " + std::to_string(file.size()) + " bytes)");
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) header_len |= std::size_t{byte_at(8 + i)} << (8 * i);
  if (file.size() - prefix < header_len)
    fail("truncated npy header (header length " + std::to_string(header_len) + ", file has " +
         std::to_string(file.size()) + " bytes)");
  const std::string_view header(reinterpret_cast<const char*>(file.data()) + prefix, header_len);
  if (header.empty() || header.back() != '\n') fail("malformed npy header (does not end with a newline)");
  for (unsigned char c : header)
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t' && c != '\r'))
      fail("malformed npy header (non-ASCII or control byte)");

  bool fortran_order = false;
  HeaderParser(header, a.source).parse(a.dtype, fortran_order, a.shape);
  if (fortran_order) fail("fortran_order True (column-major) npy arrays are not supported; save a C-order array");
  const DType* dt = find_dtype(a.dtype);
  if (!dt) {
    if (!a.dtype.empty() && a.dtype[0] == '>') fail("big-endian npy dtype '" + a.dtype + "' is not supported");
    fail("unsupported npy dtype " + quote_excerpt(a.dtype) + " (supported: <f2 <f4 <f8 |i1 |u1 <u2 <i4 <i8 |b1)");
  }
  const std::optional<std::size_t> data_size = byte_count(a.shape, dt->itemsize);
  if (!data_size) fail("npy shape " + shape_repr(a.shape) + " overflows");
  const std::size_t offset = prefix + header_len, have = file.size() - offset;
  if (have < *data_size)
    fail("truncated npy data: shape " + shape_repr(a.shape) + " of " + a.dtype + " needs " + std::to_string(*data_size) +
         " bytes, file has " + std::to_string(have));
  if (have > *data_size)
    fail(std::to_string(have - *data_size) + " unexpected bytes after the npy data (shape " + shape_repr(a.shape) + ")");
  a.bytes.assign(file.begin() + static_cast<std::ptrdiff_t>(offset), file.end());
  if (a.dtype == "|b1") {
    for (std::size_t i = 0; i < a.bytes.size(); ++i)
      if (static_cast<unsigned char>(a.bytes[i]) > 1)
        fail("bool element " + std::to_string(i) + " is byte " + std::to_string(static_cast<unsigned>(a.bytes[i])) +
             ", not 0 or 1");
  }
  return a;
}

}  // namespace core::io
