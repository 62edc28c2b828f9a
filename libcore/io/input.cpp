// Opening and reading input files with the conventions' errors (see input.hpp).
#include "io/input.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/errors.hpp"

namespace core::io {

std::ifstream open_input(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputMissingError(path.string() + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw InputMissingError(path.string() + ": is a directory, not a file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw InputMissingError(path.string() + ": cannot open: " + (err ? std::strerror(err) : "unknown error"));
  }
  return in;
}

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path) {
  std::ifstream in = open_input(path);
  std::vector<std::byte> bytes;
  constexpr std::size_t chunk = std::size_t{1} << 20;
  for (;;) {
    const std::size_t old = bytes.size();
    bytes.resize(old + chunk);
    in.read(reinterpret_cast<char*>(bytes.data() + old), static_cast<std::streamsize>(chunk));
    bytes.resize(old + static_cast<std::size_t>(in.gcount()));
    if (in.eof()) break;
    if (!in) throw IoError(path.string() + ": read failed");
  }
  if (in.bad()) throw IoError(path.string() + ": read failed");
  return bytes;
}

std::string quote_excerpt(std::string_view text) {
  constexpr std::size_t max_len = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < max_len; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += text.size() > max_len ? "...'" : "'";
  return out;
}

}  // namespace core::io
