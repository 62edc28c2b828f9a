// GPT-2 byte-level BPE: vocabulary and merge loading, rank-ordered merging with a piece cache.
#include "text/gpt2_bpe.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "common/errors.hpp"
#include "text/pretokenize.hpp"
#include "text/unicode.hpp"

namespace core::text {
namespace fs = std::filesystem;

std::array<char32_t, 256> gpt2_byte_alphabet() {
  std::array<char32_t, 256> map{};
  char32_t extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    map[b] = printable ? static_cast<char32_t>(b) : extra++;
  }
  return map;
}

namespace {

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    if (!fs::exists(file)) throw InputMissingError("GPT-2 tokenizer file not found: " + file.string());
    throw IoError("cannot read " + file.string());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

// Maps a token string in GPT-2's printable alphabet back to its bytes; nullopt when a character
// lies outside the alphabet.
class AlphabetDecoder {
 public:
  AlphabetDecoder() {
    const auto alphabet = gpt2_byte_alphabet();
    for (int b = 0; b < 256; ++b) inverse_[alphabet[b]] = static_cast<char>(b);
  }
  std::optional<std::string> operator()(std::string_view s) const {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      const CodeUnit u = decode_utf8(s, i);
      const auto it = inverse_.find(u.cp);
      if (!u.valid || it == inverse_.end()) return std::nullopt;
      out += it->second;
      i += u.len;
    }
    return out;
  }

 private:
  std::unordered_map<char32_t, char> inverse_;
};

// dir/openai, or dir/hf when only that exists.
fs::path tokenizer_file(const fs::path& dir, const char* openai, const char* hf) {
  std::error_code ec;
  return !fs::exists(dir / openai, ec) && fs::exists(dir / hf, ec) ? dir / hf : dir / openai;
}

}  // namespace

Gpt2TokenizerFiles gpt2_tokenizer_files(const fs::path& dir) {
  return {tokenizer_file(dir, "encoder.json", "vocab.json"), tokenizer_file(dir, "vocab.bpe", "merges.txt")};
}

Gpt2Tokenizer::Gpt2Tokenizer(const fs::path& dir) : dir_(fs::absolute(dir).lexically_normal()) {
  static std::atomic<std::uint64_t> next_id{1};
  id_ = next_id++;
  if (!dir_.has_filename() && dir_.has_parent_path() && dir_ != dir_.root_path()) dir_ = dir_.parent_path();  // "tok/"
  const Gpt2TokenizerFiles files = gpt2_tokenizer_files(dir);
  read_encoder(files.vocab);
  read_merges(files.merges);
}

void Gpt2Tokenizer::read_encoder(const fs::path& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(file));
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    throw DataError(file.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object() || j.empty())
    throw DataError(file.string() + ": expected a JSON object mapping token strings to ids");
  const AlphabetDecoder to_bytes;
  id_to_bytes_.assign(j.size(), std::string());
  std::vector<bool> seen(j.size(), false);
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
        value.get<std::int64_t>() >= static_cast<std::int64_t>(j.size()))
      throw DataError(file.string() + ": key \"" + key + "\": id must be an integer in [0, " +
                      std::to_string(j.size()) + ")");
    const auto id = value.get<std::int32_t>();
    if (seen[id]) throw DataError(file.string() + ": key \"" + key + "\": id " + std::to_string(id) + " used twice");
    const auto bytes = to_bytes(key);
    if (!bytes || bytes->empty())
      throw DataError(file.string() + ": key \"" + key + "\" uses characters outside GPT-2's byte alphabet");
    seen[id] = true;
    id_to_bytes_[id] = *bytes;
    bytes_to_id_.emplace(*bytes, id);
  }
  const auto alphabet = gpt2_byte_alphabet();
  for (int b = 0; b < 256; ++b) {
    const auto it = bytes_to_id_.find(std::string(1, static_cast<char>(b)));
    if (it == bytes_to_id_.end()) {
      std::string key;
      append_utf8(key, alphabet[b]);
      throw DataError(file.string() + ": no token for byte " + std::to_string(b) + " (key \"" + key + "\")");
    }
    byte_id_[b] = it->second;
  }
  if (const auto it = bytes_to_id_.find("<|endoftext|>"); it != bytes_to_id_.end()) eot_ = it->second;
}

void Gpt2Tokenizer::read_merges(const fs::path& file) {
  const std::string text = read_file(file);
  const AlphabetDecoder to_bytes;
  std::istringstream in(text);
  std::string line;
  std::int32_t rank = 0;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto where = file.string() + ":" + std::to_string(line_no) + ": ";
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || line.find(' ', space + 1) != std::string::npos)
      throw DataError(where + "expected two tokens separated by one space, got '" + line + "'");
    const auto left = to_bytes(std::string_view(line).substr(0, space));
    const auto right = to_bytes(std::string_view(line).substr(space + 1));
    if (!left || !right || right->empty())
      throw DataError(where + "characters outside GPT-2's byte alphabet in '" + line + "'");
    const auto a = bytes_to_id_.find(*left), b = bytes_to_id_.find(*right), r = bytes_to_id_.find(*left + *right);
    if (a == bytes_to_id_.end() || b == bytes_to_id_.end() || r == bytes_to_id_.end())
      throw DataError(where + "merge '" + line + "' uses or makes a token missing from encoder.json");
    merges_[pair_key(a->second, b->second)] = Merge{rank++, r->second};
  }
  // Every token must be reachable: a byte, a special "<|...|>" token, or a merge's result. A
  // vocab.bpe cut at a line boundary (a partial download) parses, but leaves tokens no merge makes
  // and would tokenize differently from GPT-2 without a word.
  std::vector<bool> reachable(id_to_bytes_.size(), false);
  for (const auto id : byte_id_) reachable[static_cast<std::size_t>(id)] = true;
  for (const auto& [key, merge] : merges_) reachable[static_cast<std::size_t>(merge.result)] = true;
  std::size_t missing = 0, first = 0;
  for (std::size_t id = 0; id < reachable.size(); ++id) {
    const std::string& t = id_to_bytes_[id];
    if (reachable[id] || (t.size() > 4 && t.starts_with("<|") && t.ends_with("|>"))) continue;
    if (missing++ == 0) first = id;
  }
  if (missing > 0)
    throw DataError(file.string() + ": " + std::to_string(rank) + " merges leave " + std::to_string(missing) +
                    " tokens of encoder.json unreachable (the first: id " + std::to_string(first) +
                    "); truncated, or not the vocab.bpe of this encoder.json?");
}

const std::string& Gpt2Tokenizer::token_bytes(std::int32_t id) const {
  check_token_id(id, vocab_size());
  return id_to_bytes_[id];
}

// encoder.py's loop (merge every occurrence of the lowest-ranked adjacent pair, left to right, until
// no pair has a rank) costs a scan of the piece per distinct merge: minutes for a long run of letters
// (a DNA sequence, a minified blob). This does the same merges in O(n log n): the symbols form a linked
// list, a heap holds every adjacent pair that has a rank as (rank, left position), and all the pairs of
// the lowest rank are taken off together and merged left to right (an overlapping one, "a a a", is
// stale by its turn) before any pair the merges create is looked at; a merged pair can't recreate
// itself, since its result is a longer token than either side.
void Gpt2Tokenizer::merge_bytes(std::string_view piece, std::vector<std::int32_t>& symbols) const {
  if (piece.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw DataError("GPT-2 tokenizer: a piece of " + std::to_string(piece.size()) +
                    " bytes without a break (over 2 GiB of letters, digits or spaces)");
  const auto n = static_cast<std::int32_t>(piece.size());
  constexpr std::int32_t kNone = -1;  // an end of the list; a symbol merged into its left neighbour
  symbols.resize(piece.size());
  for (std::int32_t k = 0; k < n; ++k) symbols[k] = byte_id_[static_cast<unsigned char>(piece[k])];
  using Candidate = std::pair<std::int32_t, std::int32_t>;  // (rank, left position): lowest first
  struct Scratch {  // reused across pieces: most are a few bytes, and allocating dominated them
    std::vector<std::int32_t> prev, next, lefts;
    std::vector<Candidate> heap;
  };
  thread_local Scratch scratch;
  // Plain references, not a structured binding: clang before 16 cannot capture bindings in the lambdas below.
  auto &prev = scratch.prev, &next = scratch.next, &lefts = scratch.lefts;
  auto& heap = scratch.heap;
  prev.resize(piece.size());
  next.resize(piece.size());
  for (std::int32_t k = 0; k < n; ++k) prev[k] = k - 1, next[k] = k + 1 < n ? k + 1 : kNone;

  const auto merge_at = [&](std::int32_t left) -> const Merge* {  // the merge of the pair starting at `left`
    if (symbols[left] == kNone || next[left] == kNone) return nullptr;
    const auto it = merges_.find(pair_key(symbols[left], symbols[next[left]]));
    return it == merges_.end() ? nullptr : &it->second;
  };
  const auto push = [&](std::int32_t left) {
    if (const Merge* m = left == kNone ? nullptr : merge_at(left)) {
      heap.emplace_back(m->rank, left);
      std::ranges::push_heap(heap, std::greater<>());
    }
  };
  const auto pop = [&] {
    std::ranges::pop_heap(heap, std::greater<>());
    heap.pop_back();
  };
  heap.clear();
  for (std::int32_t k = 0; k + 1 < n; ++k) push(k);

  while (!heap.empty()) {  // lefts: the positions of the lowest-ranked pair, in order
    const std::int32_t rank = heap.front().first;
    lefts.clear();
    for (; !heap.empty() && heap.front().first == rank; pop()) lefts.push_back(heap.front().second);
    for (const std::int32_t left : lefts) {
      const Merge* m = merge_at(left);
      if (!m || m->rank != rank) continue;  // consumed or changed by an earlier merge
      const std::int32_t right = next[left];
      symbols[left] = m->result;
      symbols[right] = kNone;
      next[left] = next[right];
      if (next[right] != kNone) prev[next[right]] = left;
      push(prev[left]);
      push(left);
    }
  }
  std::erase(symbols, kNone);
  if (prev.capacity() > (1 << 16)) scratch = Scratch{};  // a long piece's ~20 bytes a byte is not kept
}

void Gpt2Tokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
  struct PieceCache {
    std::uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<std::int32_t>> pieces;
  };
  thread_local PieceCache cache;
  if (cache.owner != id_ || cache.pieces.size() >= kCacheLimit) {
    cache.pieces.clear();
    cache.owner = id_;
  }
  std::string key(piece);
  if (const auto it = cache.pieces.find(key); it != cache.pieces.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  std::vector<std::int32_t> symbols;
  merge_bytes(piece, symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  cache.pieces.emplace(std::move(key), std::move(symbols));
}

std::vector<std::int32_t> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3);
  for (std::size_t pos = 0, end; pos < text.size(); pos = end) {  // piece by piece: no list of all pieces
    end = gpt2_piece_end(text, pos);
    encode_piece(text.substr(pos, end - pos), ids);
  }
  return ids;
}

std::string Gpt2Tokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out;
  for (std::int32_t id : ids) out += token_bytes(id);
  return out;
}

}  // namespace core::text
