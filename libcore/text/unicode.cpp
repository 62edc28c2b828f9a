// UTF-8 decoding (RFC 3629 well-formedness: no overlongs, no surrogates, <= U+10FFFF) and binary
// search over the generated code-point range tables of \p{L}, \p{N} and \s.
#include "text/unicode.hpp"

#include <algorithm>
#include <iterator>

namespace core::text {
namespace {

struct CodeRange {
  char32_t lo, hi;
};

#include "text/unicode_tables.inc"

template <std::size_t N>
bool in_table(const CodeRange (&table)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), cp,
                                    [](char32_t c, const CodeRange& r) { return c < r.lo; });
  return it != std::begin(table) && cp <= std::prev(it)->hi;
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

CodeUnit decode_utf8(std::string_view text, std::size_t pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  const CodeUnit invalid{b0, 1, false};
  if (b0 < 0x80) return {b0, 1, true};
  int len;
  char32_t cp;
  char32_t min_cp;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min_cp = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min_cp = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min_cp = 0x10000;
  } else {
    return invalid;
  }
  if (pos + len > text.size()) return invalid;
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(text[pos + k]);
    if (!is_continuation(b)) return invalid;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return invalid;
  return {cp, static_cast<std::uint8_t>(len), true};
}

CharClass classify(char32_t cp) {
  if (cp < 0x80) {  // fast path for ASCII
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CharClass::letter;
    if (cp >= '0' && cp <= '9') return CharClass::number;
    if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return CharClass::space;
    return CharClass::other;
  }
  if (in_table(kLetterRanges, cp)) return CharClass::letter;
  if (in_table(kNumberRanges, cp)) return CharClass::number;
  if (in_table(kSpaceRanges, cp)) return CharClass::space;
  return CharClass::other;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace core::text
