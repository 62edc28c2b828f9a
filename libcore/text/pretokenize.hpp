// GPT-2's pre-tokenization: the split of text into the pieces that BPE encodes independently, by the
// regex of OpenAI's encoder.py,
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented by hand (leftmost alternative wins at each position, as in a backtracking regex).
// Character classes come from the Python `regex` module's tables (see unicode.hpp), so real text
// splits exactly as the reference does; the one approximation is the Unicode version: the tables are
// those of the regex release they were generated from (see unicode_tables.inc), which can class a
// few code points assigned after OpenAI's 2019 environment differently. Where the reference cannot go, this extends it: bytes that
// are not well-formed UTF-8 (Python's encoder only ever sees decoded str) each count as one character
// of the class [^\s\p{L}\p{N}], so every byte string splits into pieces that concatenate back to it.
#pragma once
#include <string_view>
#include <vector>

namespace core::text {

// The end of the piece of `text` that starts at `pos` (< text.size()); always > pos. Pieces can be
// taken one at a time with it, without a list of all of them.
std::size_t gpt2_piece_end(std::string_view text, std::size_t pos);

// The pieces of `text`, in order; their concatenation is `text`.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace core::text
