// Tokenizer tests: UTF-8 decoding and character classes, GPT-2 pre-tokenization splits and token ids
// against vectors computed by an independent Python implementation of OpenAI's encoder.py on the
// `regex` module, and byte-exact round trips of arbitrary (also invalid) UTF-8.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "common/errors.hpp"
#include "byte_alphabet_encoder.hpp"
#include "test_support.hpp"
#include "text/gpt2_bpe.hpp"
#include "text/llmc_tokenizer.hpp"
#include "text/pretokenize.hpp"
#include "text/tokenizer.hpp"
#include "text/unicode.hpp"

using namespace core::text;
using Ids = std::vector<std::int32_t>;

namespace {

const char* kGpt2Dir = "tokenizers/gpt2";

// The shared GPT-2 tokenizer, loaded once; nullptr (with a message) when the dataset is absent.
const Gpt2Tokenizer* gpt2() {
  static const std::unique_ptr<Gpt2Tokenizer> tok = []() -> std::unique_ptr<Gpt2Tokenizer> {
    if (!core::test::have_dataset(std::string(kGpt2Dir) + "/encoder.json")) return nullptr;
    return std::make_unique<Gpt2Tokenizer>(core::test::datasets_dir() / kGpt2Dir);
  }();
  if (!tok) MESSAGE("skipped: no GPT-2 tokenizer files under " << (core::test::datasets_dir() / kGpt2Dir));
  return tok.get();
}

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  for (auto p : gpt2_pretokenize(s)) out.emplace_back(p);
  return out;
}

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// Well-formed UTF-8 drawn from ASCII, Latin-1, Greek/Cyrillic, CJK, emoji and assorted spaces.
std::string random_utf8(std::mt19937_64& rng, std::size_t n_chars) {
  const char32_t pools[][2] = {{0x20, 0x7E}, {0xA0, 0xFF}, {0x370, 0x4FF}, {0x4E00, 0x4FFF},
                               {0x1F600, 0x1F64F}, {0x2000, 0x200A}, {0x9, 0xD}};
  std::string s;
  for (std::size_t i = 0; i < n_chars; ++i) {
    const auto& p = pools[rng() % std::size(pools)];
    append_utf8(s, p[0] + static_cast<char32_t>(rng() % (p[1] - p[0] + 1)));
  }
  return s;
}


}  // namespace

TEST_CASE("UTF-8 decoding: well-formed sequences and invalid bytes") {
  std::string s;
  for (char32_t cp : {U'A', U'\u00e9', U'\u20ac', U'\U0001F600'}) append_utf8(s, cp);
  CHECK(s == "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  std::size_t pos = 0;
  for (auto [cp, len] : std::vector<std::pair<char32_t, int>>{{U'A', 1}, {0xE9, 2}, {0x20AC, 3}, {0x1F600, 4}}) {
    const CodeUnit u = decode_utf8(s, pos);
    CHECK(u.valid);
    CHECK(u.cp == cp);
    CHECK(u.len == len);
    pos += u.len;
  }
  // Stray continuation, overlong '/', encoded surrogate, > U+10FFFF, truncated sequence, 0xFF.
  for (std::string bad : {"\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\xff"}) {
    const CodeUnit u = decode_utf8(bad, 0);
    CHECK_FALSE(u.valid);
    CHECK(u.len == 1);
    CHECK(classify(u) == CharClass::other);
  }
}

TEST_CASE("character classes follow the regex module's \\p{L}, \\p{N}, \\s") {
  CHECK(classify(U'a') == CharClass::letter);
  CHECK(classify(U'\u00e9') == CharClass::letter);
  CHECK(classify(U'\u65e5') == CharClass::letter);   // CJK ideograph
  CHECK(classify(U'\u0627') == CharClass::letter);   // Arabic alef
  CHECK(classify(U'7') == CharClass::number);
  CHECK(classify(U'\u00b2') == CharClass::number);   // superscript two (No)
  CHECK(classify(U'\u0663') == CharClass::number);   // Arabic-Indic three (Nd)
  CHECK(classify(U'\u2167') == CharClass::number);   // Roman numeral eight (Nl)
  CHECK(classify(U'\u00a0') == CharClass::space);
  CHECK(classify(U'\u3000') == CharClass::space);
  CHECK(classify(U'\u2028') == CharClass::space);
  CHECK(classify(U'\x1c') == CharClass::other);      // str.isspace() but not regex \s
  CHECK(classify(U'\u00ad') == CharClass::other);    // soft hyphen (Cf)
  CHECK(classify(U'\U0001F600') == CharClass::other);
  CHECK(classify(U'!') == CharClass::other);
}

TEST_CASE("GPT-2 pre-tokenization splits as the reference regex") {
  // Expected splits from regex.findall with the GPT-2 pattern.
  CHECK(split("Hello, world!  How are you?\n\n") ==
        std::vector<std::string>{"Hello", ",", " world", "!", " ", " How", " are", " you", "?", "\n\n"});
  CHECK(split("it's  'quoted' 'll") ==
        std::vector<std::string>{"it", "'s", " ", " '", "quoted", "'", " '", "ll"});
  CHECK(split(" 123abc\t\t x") == std::vector<std::string>{" 123", "abc", "\t\t", " x"});
  CHECK(split("a \n b") == std::vector<std::string>{"a", " \n", " b"});
  CHECK(split("   ") == std::vector<std::string>{"   "});
  CHECK(split("").empty());
  // Invalid bytes are punctuation-like: they join runs of [^\s\p{L}\p{N}].
  CHECK(split("ab \xff\xfe!cd") == std::vector<std::string>{"ab", " \xff\xfe!", "cd"});
}

TEST_CASE("pre-tokenization pieces always concatenate back to the input") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::string s = trial % 2 ? random_bytes(rng, rng() % 300) : random_utf8(rng, rng() % 200);
    std::string joined;
    for (auto p : gpt2_pretokenize(s)) {
      CHECK_FALSE(p.empty());
      joined += p;
    }
    CHECK(joined == s);
  }
}

TEST_CASE("byte tokenizer: identity on bytes, rejects ids outside 0..255") {
  const ByteTokenizer tok;
  CHECK(tok.vocab_size() == 256);
  CHECK_FALSE(tok.eot_token().has_value());
  const std::string s("a\x00\xff\n", 4);
  CHECK(tok.encode(s) == Ids{97, 0, 255, 10});
  CHECK(tok.decode(tok.encode(s)) == s);
  CHECK_THROWS_AS(tok.decode(Ids{256}), core::DataError);
  CHECK_THROWS_AS(tok.decode(Ids{-1}), core::DataError);
  CHECK(make_tokenizer("bytes")->spec() == "bytes");
}

TEST_CASE("make_tokenizer rejects unknown specs and missing GPT-2 files") {
  CHECK_THROWS_AS(make_tokenizer("words"), core::UsageError);
  CHECK_THROWS_AS(make_tokenizer("gpt2:"), core::UsageError);
  const core::test::TempDir dir("text-tok");
  CHECK_THROWS_AS(make_tokenizer("gpt2:" + dir.path().string()), core::InputMissingError);
}

TEST_CASE("GPT-2 tokenizer files: malformed merges and vocab give DataError naming the file") {
  const core::test::TempDir dir("text-bad-gpt2");
  const std::string encoder = core::test::byte_alphabet_encoder();
  core::test::write_text(dir / "encoder.json", encoder + ", \"ab\": 256}");
  core::test::write_text(dir / "vocab.bpe", "#version: 0.2\na b\n");
  const Gpt2Tokenizer ok(dir.path());
  CHECK(ok.vocab_size() == 257);
  CHECK(ok.encode("abab") == Ids{256, 256});
  CHECK(ok.encode("xab a") == Ids{'x', 256, ' ', 'a'});  // pieces "xab", " a"
  CHECK(ok.decode(Ids{256, 'c'}) == "abc");
  core::test::write_text(dir / "vocab.bpe", "#version: 0.2\na b\nb c\n");  // "bc" not in vocab
  try {
    Gpt2Tokenizer bad(dir.path());
    FAIL("expected DataError");
  } catch (const core::DataError& e) {
    CHECK(std::string(e.what()).find("vocab.bpe:3") != std::string::npos);
  }
  // A merges file cut at a line boundary parses, but "ab" is then made by no merge.
  core::test::write_text(dir / "vocab.bpe", "#version: 0.2\n");
  CHECK_THROWS_WITH_AS(Gpt2Tokenizer(dir.path()), doctest::Contains("vocab.bpe: 0 merges leave 1 tokens"),
                       core::DataError);
  core::test::write_text(dir / "encoder.json", "{\"a\": 0,");
  CHECK_THROWS_AS(Gpt2Tokenizer(dir.path()), core::DataError);
  core::test::write_text(dir / "encoder.json", "{\"a\": 1e999}");  // out_of_range, not a parse_error
  CHECK_THROWS_AS(Gpt2Tokenizer(dir.path()), core::DataError);
}

TEST_CASE("GPT-2 tokenizer reads Hugging Face's names for the same files (vocab.json, merges.txt)") {
  const core::test::TempDir dir("text-hf-gpt2");
  core::test::write_text(dir / "vocab.json", core::test::byte_alphabet_encoder() + ", \"ab\": 256}");
  core::test::write_text(dir / "merges.txt", "#version: 0.2\na b\n");
  const auto tok = make_tokenizer("gpt2:" + dir.path().string());
  CHECK(tok->encode("abab") == Ids{256, 256});
  // OpenAI's names win where both are present; errors name the file that was read.
  core::test::write_text(dir / "vocab.bpe", "a b c\n");
  CHECK_THROWS_WITH_AS(make_tokenizer("gpt2:" + dir.path().string()), doctest::Contains("vocab.bpe:1"),
                       core::DataError);
  core::test::write_text(dir / "merges.txt", "a b c\n");
  std::filesystem::remove(dir / "vocab.bpe");
  CHECK_THROWS_WITH_AS(make_tokenizer("gpt2:" + dir.path().string()), doctest::Contains("merges.txt:1"),
                       core::DataError);
}

namespace {

using MergeRanks = std::map<std::pair<std::string, std::string>, int>;

// OpenAI encoder.py's bpe() on strings, as written there: merge every occurrence of the lowest-ranked
// adjacent pair left to right, until no adjacent pair has a rank.
std::vector<std::string> reference_bpe(const std::string& piece, const MergeRanks& ranks) {
  std::vector<std::string> word;
  for (char c : piece) word.emplace_back(1, c);
  while (word.size() > 1) {
    const std::pair<std::string, std::string>* best = nullptr;
    int best_rank = 0;
    for (std::size_t i = 0; i + 1 < word.size(); ++i) {
      const auto it = ranks.find({word[i], word[i + 1]});
      if (it != ranks.end() && (!best || it->second < best_rank)) best = &it->first, best_rank = it->second;
    }
    if (!best) break;
    std::vector<std::string> merged;
    for (std::size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == best->first && word[i + 1] == best->second) {
        merged.push_back(word[i] + word[i + 1]);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word = std::move(merged);
  }
  return word;
}

}  // namespace

TEST_CASE("GPT-2 tokenizer: merges as encoder.py for random vocabularies and ranks in any order") {
  // Vocabularies over "abc" whose merge ranks are shuffled, so a pair containing a merged token can
  // rank before the merge that makes it (GPT-2's own file never does this; the semantics must not
  // depend on it), and one token can be made by several merges.
  std::mt19937_64 rng(5);
  for (int vocab_trial = 0; vocab_trial < 6; ++vocab_trial) {
    const core::test::TempDir dir("text-bpe-random");
    std::vector<std::string> tokens = {"a", "b", "c"};
    std::vector<std::pair<std::string, std::string>> merges;
    while (merges.size() < 40) {
      const auto& x = tokens[rng() % tokens.size()];
      const auto& y = tokens[rng() % tokens.size()];
      if (x.size() + y.size() > 6 || std::ranges::find(merges, std::pair{x, y}) != merges.end()) continue;
      merges.emplace_back(x, y);
      if (std::ranges::find(tokens, x + y) == tokens.end()) tokens.push_back(x + y);
    }
    std::ranges::shuffle(merges, rng);
    MergeRanks ranks;
    std::string vocab = "#version: 0.2\n", encoder = core::test::byte_alphabet_encoder();
    for (const auto& [x, y] : merges) {
      ranks[{x, y}] = static_cast<int>(ranks.size());
      vocab += x + " " + y + "\n";
    }
    std::map<std::string, std::int32_t> ids;
    for (const auto& t : tokens) {
      ids[t] = t.size() == 1 ? static_cast<unsigned char>(t[0]) : static_cast<std::int32_t>(256 + ids.size() - 3);
      if (t.size() > 1) encoder += ", \"" + t + "\": " + std::to_string(ids[t]);
    }
    core::test::write_text(dir / "encoder.json", encoder + "}");
    core::test::write_text(dir / "vocab.bpe", vocab);
    const Gpt2Tokenizer tok(dir.path());
    for (int trial = 0; trial < 200; ++trial) {
      std::string piece(trial == 0 ? 3000 : rng() % 60, 'a');  // letters only: one pre-token piece
      for (auto& c : piece) c = "abc"[rng() % (trial % 2 ? 3 : 2)];
      CAPTURE(piece);
      Ids expected;
      for (const auto& t : reference_bpe(piece, ranks)) expected.push_back(ids.at(t));
      REQUIRE(tok.encode(piece) == expected);
    }
  }
}

TEST_CASE("GPT-2 tokenizer: a long run of letters (one piece) is merged in O(n log n)") {
  const auto* tok = gpt2();
  if (!tok) return;
  std::mt19937_64 rng(3);
  std::string run(1 << 20, 'a');  // encoder.py's loop takes minutes on this (a scan per distinct merge)
  for (auto& c : run) c = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[rng() % 52];
  const auto t0 = std::chrono::steady_clock::now();
  const Ids ids = tok->encode(run);
  MESSAGE(run.size() << " letters -> " << ids.size() << " tokens in "
                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  CHECK(tok->decode(ids) == run);
}

TEST_CASE("GPT-2 tokenizer: each tokenizer's cache is its own, also when two take turns on one thread") {
  const core::test::TempDir dir("text-gpt2-two-caches");
  const std::string encoder = core::test::byte_alphabet_encoder();
  core::test::write_text(dir / "merge/encoder.json", encoder + ", \"ab\": 256}");
  core::test::write_text(dir / "merge/vocab.bpe", "#version: 0.2\na b\n");
  core::test::write_text(dir / "plain/encoder.json", encoder + "}");
  core::test::write_text(dir / "plain/vocab.bpe", "#version: 0.2\n");
  // The two swap places each round: a cache keyed by the object's address would answer for the other.
  std::optional<Gpt2Tokenizer> first, second;
  for (int round = 0; round < 4; ++round) {
    const bool swap = round % 2 == 1;
    first.emplace(dir / (swap ? "plain" : "merge"));
    second.emplace(dir / (swap ? "merge" : "plain"));
    const Gpt2Tokenizer& merging = swap ? *second : *first;
    const Gpt2Tokenizer& plain = swap ? *first : *second;
    for (int turn = 0; turn < 2; ++turn) {
      CHECK(merging.encode("ab") == Ids{256});
      CHECK(plain.encode("ab") == Ids{'a', 'b'});
    }
  }
}

TEST_CASE("GPT-2 tokenizer: encode from several threads at once gives the serial result") {
  const auto* tok = gpt2();
  if (!tok) return;
  std::mt19937_64 rng(21);
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) texts.push_back(random_utf8(rng, 400));
  std::vector<Ids> serial;
  for (const auto& t : texts) serial.push_back(tok->encode(t));
  std::vector<Ids> parallel(texts.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = t; i < texts.size(); i += 4) parallel[i] = tok->encode(texts[i]);
    });
  for (auto& t : threads) t.join();
  CHECK(parallel == serial);
}

TEST_CASE("GPT-2 tokenizer spec names its folder absolutely (checkpoints and prepare.json work from any cwd)") {
  const core::test::TempDir dir("text-gpt2-spec");
  const std::string encoder = core::test::byte_alphabet_encoder();
  core::test::write_text(dir / "tok/encoder.json", encoder + "}");
  core::test::write_text(dir / "tok/vocab.bpe", "#version: 0.2\n");
  const auto relative = std::filesystem::relative(dir / "tok");
  REQUIRE(relative.is_relative());
  const auto tok = make_tokenizer("gpt2:" + relative.string() + "/");
  CHECK(tok->spec() == "gpt2:" + std::filesystem::absolute(dir / "tok").lexically_normal().string());
  CHECK(make_tokenizer(tok->spec())->vocab_size() == 256);
}

TEST_CASE("GPT-2 tokenizer: known token ids") {
  const auto* tok = gpt2();
  if (!tok) return;
  CHECK(tok->vocab_size() == 50257);
  CHECK(tok->eot_token() == 50256);
  CHECK(tok->decode(Ids{50256}) == "<|endoftext|>");
  // Vectors from the reference implementation (regex module + encoder.py's bpe()).
  const std::vector<std::pair<std::string, Ids>> vectors = {
      {"hello world", {31373, 995}},
      {" hello", {23748}},
      {"Hello", {15496}},
      {"I'm don't we'll they've you're she's it'd", {40, 1101, 836, 470, 356, 1183, 484, 1053, 345, 821, 673, 338, 340, 1549}},
      {"  leading   spaces\n\n\nnewlines  ", {220, 3756, 220, 220, 9029, 628, 198, 3605, 6615, 220, 220}},
      {"Numbers 12345 and 3.14159, x=42!", {49601, 17031, 2231, 290, 513, 13, 1415, 19707, 11, 2124, 28, 3682, 0}},
      {"na\u00efve caf\u00e9 \u2014 \u201cquotes\u201d \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 "
       "\U0001F600\U0001F44D\U0001F3FD",
       {2616, 38776, 40304, 851, 564, 250, 421, 6421, 447, 251, 10545, 245, 98, 17312, 105, 45739, 252, 5641,
        24336, 25084, 43302, 30325, 222, 41840, 235, 8582, 237, 121}},
      {"<|endoftext|>", {27, 91, 437, 1659, 5239, 91, 29}},
      {"tab\there\r\nwindows", {8658, 197, 1456, 201, 198, 28457}},
      {"\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u043a\u0438\u0440\u0438\u043b\u043b\u0438\u0446\u0430 "
       "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
       {138, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105, 12466, 118, 18849, 21169, 18849, 30143,
        30143, 18849, 141, 228, 16142, 28981, 44690, 26897, 39848, 22654, 45632}},
      {"A\u00a0B\u2003C  \u3000D", {32, 1849, 33, 447, 225, 34, 220, 220, 5099, 222, 35}},
      {"''s 's", {7061, 82, 705, 82}},
      {"x'S", {87, 6, 50}},
  };
  for (const auto& [text, ids] : vectors) {
    CAPTURE(text);
    CHECK(tok->encode(text) == ids);
    CHECK(tok->decode(ids) == text);
  }
}

TEST_CASE("GPT-2 tokenizer: byte-exact round trip of random UTF-8 and invalid bytes") {
  const auto* tok = gpt2();
  if (!tok) return;
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const std::string s = trial % 3 == 0 ? random_bytes(rng, rng() % 200) : random_utf8(rng, rng() % 150);
    const Ids ids = tok->encode(s);
    CHECK(tok->decode(ids) == s);
    for (auto id : ids) CHECK((id >= 0 && id < tok->vocab_size()));
  }
  CHECK_THROWS_AS(tok->decode(Ids{50257}), core::DataError);
}

TEST_CASE("GPT-2 tokenizer: tinyshakespeare matches the reference") {
  const auto* tok = gpt2();
  if (!tok) return;
  if (!core::test::have_dataset("text/tinyshakespeare.txt")) {
    MESSAGE("skipped: no text/tinyshakespeare.txt");
    return;
  }
  const std::string text = core::test::read_text(core::test::datasets_dir() / "text/tinyshakespeare.txt");
  const auto t0 = std::chrono::steady_clock::now();
  const Ids ids = tok->encode(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("tinyshakespeare: " << text.size() << " bytes -> " << ids.size() << " tokens in " << seconds << " s");
  // Count, ends and FNV-1a 64 of the ids (as little-endian uint32) from the reference implementation.
  CHECK(ids.size() == 338025);
  CHECK(Ids(ids.begin(), ids.begin() + 10) == Ids{5962, 22307, 25, 198, 8421, 356, 5120, 597, 2252, 11});
  CHECK(Ids(ids.end() - 5, ids.end()) == Ids{14210, 1242, 23137, 13, 198});
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (auto id : ids)
    for (int k = 0; k < 4; ++k) h = (h ^ ((static_cast<std::uint32_t>(id) >> (8 * k)) & 0xFF)) * 0x100000001b3ULL;
  CHECK(h == 0xe22fcd868ca90167ULL);
  CHECK(tok->decode(ids) == text);
}

TEST_CASE("llm.c tokenizer file: llm.c's header and table, read back; a tokenizer without end-of-text refused") {
  const core::test::TempDir dir("text-llmc-tokenizer");
  core::test::write_text(dir / "encoder.json", core::test::byte_alphabet_encoder() + ", \"ab\": 256, \"<|endoftext|>\": 257}");
  core::test::write_text(dir / "vocab.bpe", "#version: 0.2\na b\n");
  const Gpt2Tokenizer tok(dir.path());
  write_llmc_tokenizer(dir / "t.bin", tok);
  // The bytes as llm.c's write_tokenizer lays them out: 256 int32 (magic, version 2, count, eot), then length + bytes.
  const std::string raw = core::test::read_text(dir / "t.bin");
  const auto i32 = [&](std::size_t at) {
    std::int32_t v;
    std::memcpy(&v, raw.data() + at, 4);
    return v;
  };
  CHECK(i32(0) == 20240328);
  CHECK(i32(4) == 2);
  CHECK(i32(8) == 258);
  CHECK(i32(12) == 257);
  for (std::size_t at = 16; at < 1024; at += 4) CHECK(i32(at) == 0);
  REQUIRE(raw.size() == 1024 + 258 + 256 + 2 + 13);  // a length byte per token; bytes 1 x 256, "ab", "<|endoftext|>"
  CHECK(raw.substr(1024, 2) == std::string("\x01\x00", 2));  // token 0: the byte 0
  CHECK(raw.substr(raw.size() - 17, 3) == std::string("\x02") + "ab");
  CHECK(raw.substr(raw.size() - 14) == std::string("\x0d") + "<|endoftext|>");
  const LlmcTokenizerFile back = read_llmc_tokenizer(dir / "t.bin");
  CHECK(back.eot_token == 257);
  REQUIRE(back.tokens.size() == 258);
  for (std::int32_t id = 0; id < 258; ++id) CHECK(back.tokens[std::size_t(id)] == tok.token_bytes(id));

  CHECK_THROWS_WITH_AS(write_llmc_tokenizer(dir / "b.bin", ByteTokenizer()), doctest::Contains("end-of-text"),
                       core::UsageError);
  CHECK(!std::filesystem::exists(dir / "b.bin"));
  core::test::write_text(dir / "cut.bin", raw.substr(0, raw.size() - 5));
  CHECK_THROWS_WITH_AS(read_llmc_tokenizer(dir / "cut.bin"), doctest::Contains("ends inside token 257"), core::DataError);
  if (const Gpt2Tokenizer* real = gpt2()) {  // GPT-2's 50,257 tokens, as llm.c's gpt2_tokenizer.bin holds them
    write_llmc_tokenizer(dir / "gpt2.bin", *real);
    const LlmcTokenizerFile f = read_llmc_tokenizer(dir / "gpt2.bin");
    CHECK(f.eot_token == 50256);
    REQUIRE(f.tokens.size() == 50257);
    CHECK(f.tokens[50256] == "<|endoftext|>");
    CHECK(f.tokens[0] == "!");
    CHECK(f.tokens[real->encode(" the")[0]] == " the");
  }
}
