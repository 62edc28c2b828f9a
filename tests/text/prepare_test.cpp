// prepare(): text -> train/val shards; split sizes, sharding, decoding back to the input, stale shard
// removal, JSON Lines documents and the errors for bad inputs.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "byte_alphabet_encoder.hpp"
#include "common/errors.hpp"
#include "test_support.hpp"
#include "text/prepare.hpp"
#include "text/shard.hpp"
#include "text/tokenizer.hpp"

using namespace core::text;
namespace fs = std::filesystem;

namespace {

std::vector<std::int32_t> load_all(const std::vector<std::string>& files) {
  std::vector<std::int32_t> out;
  for (const auto& f : files)
    for (auto t : read_shard(f)) out.push_back(t);
  return out;
}

}  // namespace

TEST_CASE("prepare with the byte tokenizer: split, shards, and the text comes back") {
  const core::test::TempDir dir("text-prepare");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "line " + std::to_string(i) + " \xc3\xa9\xff\n";
  core::test::write_text(dir / "in.txt", text);
  // A stale shard from an earlier, larger run must disappear; unrelated files must stay.
  core::test::write_text(dir / "out/train_000009.bin", "old");
  core::test::write_text(dir / "out/notes.txt", "keep");

  PrepareOptions opt;
  opt.input = (dir / "in.txt").string();
  opt.out = (dir / "out").string();
  opt.val_fraction = 0.25;
  opt.shard_tokens = 500;
  const PrepareResult r = prepare(opt);

  const auto n = static_cast<std::int64_t>(text.size());
  CHECK(r.tokenizer == "bytes");
  CHECK(r.vocab_size == 256);
  CHECK(r.input_bytes == n);
  CHECK(r.val_tokens == n / 4);
  CHECK(r.train_tokens == n - n / 4);
  CHECK(r.train_files.size() == static_cast<std::size_t>((r.train_tokens + 499) / 500));
  CHECK(r.val_files.size() == static_cast<std::size_t>((r.val_tokens + 499) / 500));
  CHECK(fs::path(r.train_files[0]).filename() == "train_000000.bin");
  CHECK(fs::path(r.val_files[0]).filename() == "val_000000.bin");
  CHECK_FALSE(fs::exists(dir / "out/train_000009.bin"));
  CHECK(fs::exists(dir / "out/notes.txt"));

  auto tokens = load_all(r.train_files);
  const auto val = load_all(r.val_files);
  tokens.insert(tokens.end(), val.begin(), val.end());
  CHECK(ByteTokenizer().decode(tokens) == text);

  const auto json = nlohmann::json::parse(core::test::read_text(dir / "out/prepare.json"));
  CHECK(json == r.to_json());
  CHECK(json["train_tokens"] == r.train_tokens);
}

TEST_CASE("prepare with GPT-2 puts end-of-text first") {
  if (!core::test::have_dataset("tokenizers/gpt2/encoder.json")) {
    MESSAGE("skipped: no GPT-2 tokenizer files");
    return;
  }
  const core::test::TempDir dir("text-prepare-gpt2");
  core::test::write_text(dir / "in.txt", "hello world hello world hello world");
  PrepareOptions opt;
  opt.input = (dir / "in.txt").string();
  opt.out = (dir / "out").string();
  opt.tokenizer = "gpt2:" + (core::test::datasets_dir() / "tokenizers/gpt2").string();
  opt.val_fraction = 0.3;
  const PrepareResult r = prepare(opt);
  CHECK(r.vocab_size == 50257);
  CHECK(r.train_tokens + r.val_tokens == 7);  // EOT + 6
  CHECK(r.val_tokens == 2);
  CHECK(load_all(r.train_files) == std::vector<std::int32_t>{50256, 31373, 995, 23748, 995});
  CHECK(load_all(r.val_files) == std::vector<std::int32_t>{23748, 995});
}

TEST_CASE("prepare errors: missing input, too little text, bad options") {
  const core::test::TempDir dir("text-prepare-bad");
  PrepareOptions opt;
  opt.input = (dir / "absent.txt").string();
  opt.out = (dir / "out").string();
  CHECK_THROWS_AS(prepare(opt), core::InputMissingError);
  opt.input = dir.path().string();  // a folder without files: named as such, not "0 tokens"
  CHECK_THROWS_WITH_AS(prepare(opt), doctest::Contains("holds no files to tokenize"), core::DataError);

  core::test::write_text(dir / "empty.txt", "");
  opt.input = (dir / "empty.txt").string();
  CHECK_THROWS_AS(prepare(opt), core::DataError);

  core::test::write_text(dir / "tiny.txt", "ab");
  opt.input = (dir / "tiny.txt").string();
  opt.val_fraction = 0.1;  // floor(0.2) = 0 validation tokens
  CHECK_THROWS_AS(prepare(opt), core::DataError);
  CHECK_FALSE(fs::exists(dir / "out"));

  opt.val_fraction = 0.0;
  CHECK(prepare(opt).train_tokens == 2);

  opt.tokenizer = "sentencepiece";
  CHECK_THROWS_AS(prepare(opt), core::UsageError);
  opt.tokenizer = "bytes";
  opt.val_fraction = 0.9;
  CHECK_THROWS_AS(prepare(opt), core::UsageError);
}

// Chunked and threaded tokenization give the tokens of the whole text, against the tokenizer on the
// whole file.
namespace {

// `prose_bytes` of tinyshakespeare (or generated lines without the dataset), then lines whose
// whitespace would join across a careless cut (blanks, a no-break space, CR LF, blank lines).
std::string tricky_text(std::size_t prose_bytes) {
  std::string text;
  if (core::test::have_dataset("text/tinyshakespeare.txt")) {
    text = core::test::read_text(core::test::datasets_dir() / "text/tinyshakespeare.txt").substr(0, prose_bytes);
  } else {
    for (int i = 0; text.size() < prose_bytes; ++i) text += "Line " + std::to_string(i) + ": to be, or not to be.\n";
  }
  text += "a \nb\xc2\xa0\nc\r\nd\n\n\ne  \n 1\nx\ny'll\n";
  // Lines of CJK text (cut between non-ASCII characters), an ideographic space and a NEL (Unicode
  // whitespace) on either side of a newline, a lone continuation byte before one.
  for (int i = 0; i < 300; ++i) text += "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e " + std::to_string(i) + "\xe3\x80\x82\n";
  text += "x\n\xe3\x80\x80y\n\xe3\x80\x80\nz\n\xc2\x85w\xc2\x85\nq\x85\nr\n";
  // Windows line ends, with blanks and blank lines around some.
  for (int i = 0; i < 300; ++i) text += "Line " + std::to_string(i) + (i % 7 == 0 ? " \r\n" : i % 5 == 0 ? "\r\n\r\n" : "\r\n");
  text += "a\r\n b\r\r\nc\r\n\xe3\x80\x80" "d\r\n";
  return text;
}

// "bytes", and GPT-2 where its files are there.
std::vector<std::string> tokenizer_specs() {
  std::vector<std::string> specs = {"bytes"};
  if (core::test::have_dataset("tokenizers/gpt2/encoder.json"))
    specs.push_back("gpt2:" + (core::test::datasets_dir() / "tokenizers/gpt2").string());
  return specs;
}

// The tokens of prepare's shards, train then val.
std::vector<std::int32_t> prepared_tokens(const PrepareResult& r) {
  auto tokens = load_all(r.train_files);
  const auto val = load_all(r.val_files);
  tokens.insert(tokens.end(), val.begin(), val.end());
  return tokens;
}

// What prepare must give: end-of-text (when the tokenizer has one), then the text tokenized whole.
std::vector<std::int32_t> whole_tokens(const std::string& spec, const std::string& text) {
  const auto tokenizer = make_tokenizer(spec);
  std::vector<std::int32_t> whole;
  if (const auto eot = tokenizer->eot_token()) whole.push_back(*eot);
  const auto body = tokenizer->encode(text);
  whole.insert(whole.end(), body.begin(), body.end());
  return whole;
}

}  // namespace

// Chunks of 100 bytes cut the text at every safe point it has.
TEST_CASE("prepare tokenizes in chunks exactly as in one piece") {
  const core::test::TempDir dir("text-prepare-chunks");
  const std::string text = tricky_text(200000);
  core::test::write_text(dir / "in.txt", text);
  for (const auto& spec : tokenizer_specs()) {
    CAPTURE(spec);
    PrepareOptions opt;
    opt.input = (dir / "in.txt").string();
    opt.out = (dir / "out").string();
    opt.tokenizer = spec;
    opt.val_fraction = 0.1;
    opt.shard_tokens = 7000;
    opt.chunk_bytes = 100;
    const PrepareResult r = prepare(opt);
    CHECK(prepared_tokens(r) == whole_tokens(spec, text));
    CHECK(r.train_files.size() > 1);
  }
}

// A chunk of a few MiB is cut into parts of about 1 MiB that threads tokenize: the tokens do not
// depend on the thread count.
TEST_CASE("prepare tokenizes a chunk's parts on several threads exactly as in one piece") {
  const core::test::TempDir dir("text-prepare-threads");
  std::string text = tricky_text(1 << 20);
  while (text.size() < (3u << 20) + 12345) text += tricky_text(300000);
  core::test::write_text(dir / "in.txt", text);
  for (const auto& spec : tokenizer_specs()) {
    CAPTURE(spec);
    const auto whole = whole_tokens(spec, text);
    for (int threads : {1, 2, 3}) {
      CAPTURE(threads);
      PrepareOptions opt;
      opt.input = (dir / "in.txt").string();
      opt.out = (dir / ("out" + std::to_string(threads))).string();
      opt.tokenizer = spec;
      opt.threads = threads;
      CHECK(prepared_tokens(prepare(opt)) == whole);
    }
  }
}

TEST_CASE("prepare's token file is never visible in the output folder, even while the text is being tokenized") {
  // A prepare killed while tokenizing (Ctrl-C on a large corpus) must leave no token file (2 bytes
  // per token) behind. The text comes through a fifo, so tokenizing waits half-way while the folder
  // is looked at.
  core::test::TempDir dir("prepare_tokens_unlinked");
  REQUIRE(::mkfifo((dir / "text").c_str(), 0600) == 0);
  PrepareOptions o;
  o.input = (dir / "text").string();
  o.out = (dir / "out").string();
  PrepareResult result;
  std::string failure;
  std::thread preparing([&] {
    try {
      result = prepare(o);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  {
    std::ofstream fifo(dir / "text", std::ios::binary);  // opens once prepare has opened its end
    fifo << std::string(500, 'a') << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // prepare waits for the rest
    std::vector<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir / "out")) names.push_back(e.path().string());
    CHECK(names.empty());
    fifo << std::string(500, 'b');
  }
  preparing.join();
  REQUIRE(failure == "");
  CHECK(result.train_tokens == 900);
  CHECK(load_all(result.val_files) == std::vector<std::int32_t>(100, 'b'));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "out")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"prepare.json", "train_000000.bin", "val_000000.bin"});
}

TEST_CASE("prepare removes the staging folders of killed prepares on this host, and no others") {
  core::test::TempDir dir("prepare_abandoned_staging");
  core::test::write_text(dir / "t.txt", std::string(1000, 'a'));
  char host[256] = {};
  REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  const pid_t gone = ::fork();  // a pid whose process has ended
  REQUIRE(gone >= 0);
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string prefix = std::string(".prepare-staging-") + host + "-";
  const auto abandoned = dir / "out" / (prefix + std::to_string(gone));
  const auto running = dir / "out" / (prefix + "1");  // pid 1 always exists
  const auto other_host = dir / "out" / (".prepare-staging-elsewhere-" + std::to_string(gone));
  for (const auto& staging : {abandoned, running, other_host}) core::test::write_text(staging / "train_000000.bin", "x");
  PrepareOptions o;
  o.input = (dir / "t.txt").string();
  o.out = (dir / "out").string();
  prepare(o);
  CHECK(!fs::exists(abandoned));
  CHECK(fs::exists(running / "train_000000.bin"));
  CHECK(fs::exists(other_host / "train_000000.bin"));
}

TEST_CASE("last_safe_cut: after a newline between two whole characters that are no whitespace, any script") {
  CHECK(last_safe_cut("ab\ncd") == 3);
  CHECK(last_safe_cut("\xe3\x80\x82\n\xe6\x97\xa5") == 4);  // 。\n日: CJK lines have cut points too
  CHECK(last_safe_cut("a \nb") == std::string_view::npos);        // the newline joins the blank before it
  CHECK(last_safe_cut("a\n b") == std::string_view::npos);
  CHECK(last_safe_cut("a\xc2\xa0\nb") == std::string_view::npos);  // no-break space
  CHECK(last_safe_cut("a\n\xe3\x80\x80") == std::string_view::npos);  // ideographic space
  CHECK(last_safe_cut("a\n\xe3\x80") == std::string_view::npos);  // a character cut short by the buffer
  CHECK(last_safe_cut("a\x85\nb") == std::string_view::npos);      // a lone continuation byte (read as NEL)
  CHECK(last_safe_cut("ab\ncd\n\xe3\x80") == 3);                  // the last cut that is safe
  CHECK(last_safe_cut("ab\r\ncd") == 3);                         // CR | LF: Windows line ends cut too
  CHECK(last_safe_cut("a \r\nb") == std::string_view::npos);
  CHECK(last_safe_cut("a\r\n b") == std::string_view::npos);
  CHECK(last_safe_cut("a\r\r\nb") == std::string_view::npos);
  CHECK(last_safe_cut("a\r\n") == std::string_view::npos);          // what follows is not known yet
}

TEST_CASE("prepare format=jsonl: a document per line, end-of-text before each, at any chunk size and thread count") {
  const core::test::TempDir dir("text-prepare-jsonl");
  // A GPT-2-format tokenizer of the 256 bytes and an end-of-text token (id 256), no merges.
  core::test::write_text(dir / "tok/encoder.json", core::test::byte_alphabet_encoder() + ", \"<|endoftext|>\": 256}");
  core::test::write_text(dir / "tok/vocab.bpe", "#version: 0.2\n");
  std::vector<std::string> specs = tokenizer_specs();
  specs.push_back("gpt2:" + (dir / "tok").string());
  // Escapes, an empty document, one over 1 MiB (tokenized in parts), CR LF line ends, a blank line.
  std::string big;  // valid UTF-8 (JSON strings are), prose and CJK lines
  for (int i = 0; big.size() < (1u << 20) + 5000; ++i)
    big += "Line " + std::to_string(i) + (i % 3 ? ": to be, or not to be.\n" : " \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\r\n");
  const std::vector<std::string> docs = {"First \"doc\"\nwith lines.", "", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac", big,
                                         "last"};
  std::string jsonl;
  for (std::size_t i = 0; i < docs.size(); ++i)
    jsonl += nlohmann::json{{"id", i}, {"text", docs[i]}}.dump() + (i == 2 ? "\r\n\n" : "\n");
  core::test::write_text(dir / "docs.jsonl", jsonl);
  for (const auto& spec : specs) {
    CAPTURE(spec);
    const auto tokenizer = make_tokenizer(spec);
    std::vector<std::int32_t> want;
    for (const auto& doc : docs) {
      if (const auto eot = tokenizer->eot_token()) want.push_back(*eot);
      const auto ids = tokenizer->encode(doc);
      want.insert(want.end(), ids.begin(), ids.end());
    }
    for (const auto& [chunk, threads] : {std::pair{std::int64_t(64) << 20, 2}, std::pair{std::int64_t(10), 1}}) {
      CAPTURE(chunk);
      PrepareOptions opt;
      opt.input = (dir / "docs.jsonl").string();
      opt.format = "jsonl";
      opt.out = (dir / "out").string();
      opt.tokenizer = spec;
      opt.chunk_bytes = chunk;
      opt.threads = threads;
      const PrepareResult r = prepare(opt);
      CHECK(prepared_tokens(r) == want);
      CHECK(r.input_bytes == static_cast<std::int64_t>(jsonl.size()));
    }
  }
  // Another field name; lines that are no object with a string text, named by file and line.
  core::test::write_text(dir / "content.jsonl", "{\"content\": \"abc\"}\n{\"content\": \"de\"}\n");
  PrepareOptions opt;
  opt.input = (dir / "content.jsonl").string();
  opt.format = "jsonl";
  opt.text_key = "content";
  opt.out = (dir / "out_content").string();
  opt.val_fraction = 0.2;
  CHECK(prepared_tokens(prepare(opt)) == std::vector<std::int32_t>{'a', 'b', 'c', 'd', 'e'});
  opt.text_key = "text";
  CHECK_THROWS_WITH_AS(prepare(opt), doctest::Contains("content.jsonl:1: expected an object with a string \"text\""),
                       core::DataError);
  for (const char* bad : {"{\"text\": \"ok\"}\n{\"text\": 5}\n", "{\"text\": \"ok\"}\nnot json\n"}) {
    core::test::write_text(dir / "bad.jsonl", bad);
    opt.input = (dir / "bad.jsonl").string();
    CHECK_THROWS_WITH_AS(prepare(opt), doctest::Contains("bad.jsonl:2:"), core::DataError);
  }
}

TEST_CASE("prepare of a folder: each file a document in name order, end-of-text before each; hidden files and subfolders left out") {
  const core::test::TempDir dir("text-prepare-folder");
  core::test::write_text(dir / "tok/encoder.json", core::test::byte_alphabet_encoder() + ", \"<|endoftext|>\": 256}");
  core::test::write_text(dir / "tok/vocab.bpe", "#version: 0.2\n");
  core::test::write_text(dir / "docs/b.txt", "second document\n");
  core::test::write_text(dir / "docs/a.txt", "first\nline two\n");
  core::test::write_text(dir / "docs/.hidden", "never");
  core::test::write_text(dir / "docs/sub/c.txt", "never either");
  PrepareOptions opt;
  opt.input = (dir / "docs").string();
  opt.out = (dir / "out").string();
  opt.tokenizer = "gpt2:" + (dir / "tok").string();
  opt.val_fraction = 0.2;
  const PrepareResult r = prepare(opt);
  std::vector<std::int32_t> want = {256};
  for (char c : std::string("first\nline two\n")) want.push_back(static_cast<unsigned char>(c));
  want.push_back(256);
  for (char c : std::string("second document\n")) want.push_back(static_cast<unsigned char>(c));
  CHECK(prepared_tokens(r) == want);
  CHECK(r.input_bytes == 31);
  // A folder of JSON Lines files: their documents, file after file.
  core::test::write_text(dir / "jl/1.jsonl", "{\"text\": \"ab\"}\n");
  core::test::write_text(dir / "jl/2.jsonl", "{\"text\": \"c\"}\n{\"text\": \"de\"}\n");
  opt.input = (dir / "jl").string();
  opt.format = "jsonl";
  CHECK(prepared_tokens(prepare(opt)) == std::vector<std::int32_t>{256, 'a', 'b', 256, 'c', 256, 'd', 'e'});
  core::test::write_text(dir / "jl/3.jsonl", "{\"text\": 1}\n");
  CHECK_THROWS_WITH_AS(prepare(opt), doctest::Contains("3.jsonl:1"), core::DataError);
}
