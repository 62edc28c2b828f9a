// Hand-written matcher for GPT-2's pre-tokenization regex (see pretokenize.hpp). At each position the
// alternatives are tried in the regex's order; each returns the end of its match or 0 for none.
#include "text/pretokenize.hpp"

#include "text/unicode.hpp"

namespace core::text {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  // End of the match starting at `pos` (< size); always > pos since \s+ and the class
  // alternatives cover every character between them.
  std::size_t match(std::size_t pos) const {
    if (std::size_t end = contraction(pos)) return end;
    if (std::size_t end = class_run(pos)) return end;
    return whitespace(pos);
  }

 private:
  CharClass class_at(std::size_t pos) const { return classify(decode_utf8(text_, pos)); }
  std::size_t next(std::size_t pos) const { return pos + decode_utf8(text_, pos).len; }

  // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive, ASCII apostrophe only, as in the reference).
  std::size_t contraction(std::size_t pos) const {
    if (text_[pos] != '\'' || pos + 1 >= text_.size()) return 0;
    const char c = text_[pos + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return pos + 2;
    if (pos + 2 < text_.size()) {
      const char d = text_[pos + 2];
      if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return pos + 3;
    }
    return 0;
  }

  //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ : an optional U+0020, then a maximal run of one class.
  std::size_t class_run(std::size_t pos) const {
    std::size_t start = pos;
    if (text_[start] == ' ') ++start;
    if (start >= text_.size()) return 0;
    const CharClass cls = class_at(start);
    if (cls == CharClass::space) return 0;
    std::size_t end = next(start);
    while (end < text_.size() && class_at(end) == cls) end = next(end);
    return end;
  }

  // \s+(?!\S) | \s+ : a whitespace run; when a non-space follows it, the run's last character is left
  // to prefix the next piece (the lookahead backtracks one character), unless the run is one long.
  std::size_t whitespace(std::size_t pos) const {
    std::size_t last = pos;
    std::size_t end = next(pos);
    while (end < text_.size() && class_at(end) == CharClass::space) {
      last = end;
      end = next(end);
    }
    if (end == text_.size() || last == pos) return end;
    return last;
  }

  std::string_view text_;
};

}  // namespace

std::size_t gpt2_piece_end(std::string_view text, std::size_t pos) { return Scanner(text).match(pos); }

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  for (std::size_t pos = 0, end; pos < text.size(); pos = end) {
    end = gpt2_piece_end(text, pos);
    pieces.push_back(text.substr(pos, end - pos));
  }
  return pieces;
}

}  // namespace core::text
