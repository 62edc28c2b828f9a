// load_token_data on shard folders: every token is checked against the vocabulary of the tokenizer
// that prepare.json (or, without it, data.tokenizer) names, with the file, index and byte offset of
// the first bad one; a folder with only one split says which is missing; llm.c's file names work;
// several shards read as one; a text input gives the tokens prepare writes for it.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <chrono>
#include <thread>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "test_support.hpp"
#include "text/prepare.hpp"
#include "text/shard.hpp"
#include "train/data.hpp"

using namespace core::train;
using core::test::TempDir;

namespace {

std::vector<std::int32_t> ramp(int n, int modulo) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i % modulo;
  return v;
}

// Options reading `input` (a shard folder or a text file) with windows of 8 tokens.
DataOptions input_at(const std::filesystem::path& input) {
  DataOptions o;
  o.input = input.string();
  o.seq_len = 8;
  return o;
}

}  // namespace

TEST_CASE("a shard token outside the vocabulary prepare.json names is a DataError naming file and offset") {
  TempDir dir("train_data_vocab");
  core::test::write_text(dir / "prepare.json", nlohmann::json{{"tokenizer", "bytes"}, {"vocab_size", 256}}.dump());
  core::text::write_shard(dir / "train_000000.bin", ramp(100, 256));
  auto val = ramp(50, 256);
  val[7] = 300;
  core::text::write_shard(dir / "val_000000.bin", val);
  try {
    load_token_data(input_at(dir.path()));
    FAIL("expected DataError");
  } catch (const core::DataError& e) {
    const std::string msg = e.what();
    CHECK(msg.find((dir / "val_000000.bin").string()) != std::string::npos);
    CHECK(msg.find("token 300 at index 7 (byte offset 1038)") != std::string::npos);  // 1024 + 2 * 7
    CHECK(msg.find("prepare.json") != std::string::npos);
  }
  core::test::write_text(dir / "prepare.json", nlohmann::json{{"tokenizer", "bytes"}, {"vocab_size", -3}}.dump());
  CHECK_THROWS_WITH_AS(load_token_data(input_at(dir.path())), doctest::Contains("prepare.json: vocab_size -3"),
                       core::DataError);
  core::test::write_text(dir / "prepare.json", nlohmann::json{{"tokenizer", "bytes"}, {"vocab_size", 256}}.dump());
  val[7] = 255;
  core::text::write_shard(dir / "val_000000.bin", val);
  const TokenData d = load_token_data(input_at(dir.path()));
  CHECK(d.vocab_size == 256);
  CHECK(d.val.size() == 50);
}

TEST_CASE("shards without prepare.json (llm.c's) take their tokenizer from data.tokenizer") {
  TempDir dir("train_data_llmc");
  core::text::write_shard(dir / "train_000000.bin", ramp(100, 256));
  core::text::write_shard(dir / "val_000000.bin", ramp(50, 256));
  TokenData d = load_token_data(input_at(dir.path()));
  CHECK(d.tokenizer == "bytes");
  CHECK(d.vocab_size == 256);
  // GPT-2 ids under the default byte tokenizer: refused with the key to set, not trained as "bytes"
  // (a checkpoint `sample` then could not decode).
  auto gpt2_ids = ramp(100, 256);
  gpt2_ids[0] = 50256;  // <|endoftext|>, which prepare puts first
  core::text::write_shard(dir / "train_000000.bin", gpt2_ids);
  CHECK_THROWS_WITH_AS(load_token_data(input_at(dir.path())), doctest::Contains("data.tokenizer=gpt2:DIR"), core::DataError);
}

TEST_CASE("a shard folder with one split names the missing one") {
  TempDir dir("train_data_nosplit");
  core::text::write_shard(dir / "train_000000.bin", ramp(100, 256));
  CHECK_THROWS_WITH_AS(load_token_data(input_at(dir.path())), doctest::Contains("no val shard"), core::DataError);
}

TEST_CASE("llm.c's shard names are found: NAME_train.bin, NAME_val_000000.bin, in name order") {
  TempDir dir("train_data_llmc_names");
  core::text::write_shard(dir / "tiny_shakespeare_train_000001.bin", std::vector<std::int32_t>(40, 2));
  core::text::write_shard(dir / "tiny_shakespeare_train_000000.bin", std::vector<std::int32_t>(30, 1));
  core::text::write_shard(dir / "tiny_shakespeare_val.bin", std::vector<std::int32_t>(20, 3));
  core::text::write_shard(dir / "trainer_notes.bin", std::vector<std::int32_t>(5, 9));  // not a split word
  const TokenData d = load_token_data(input_at(dir.path()));
  REQUIRE(d.train.size() == 70);
  CHECK(d.train.tokens(0, 1)[0] == 1);
  CHECK(d.train.tokens(69, 1)[0] == 2);
  CHECK(d.val.tokens(0, 20) == std::vector<std::int32_t>(20, 3));
}

TEST_CASE("a split of several shards reads like their concatenation: windows cross shard boundaries") {
  TempDir dir("train_data_concat");
  std::vector<std::int32_t> all;
  const int lengths[] = {5, 1, 13, 9};  // shards shorter than a window too
  for (int s = 0; s < 4; ++s) {
    std::vector<std::int32_t> part;
    for (int i = 0; i < lengths[s]; ++i) part.push_back(static_cast<std::int32_t>(all.size() + part.size()));
    all.insert(all.end(), part.begin(), part.end());
    core::text::write_shard(dir / ("train_00000" + std::to_string(s) + ".bin"), part);
  }
  core::text::write_shard(dir / "val_000000.bin", ramp(20, 7));
  DataOptions o = input_at(dir.path());
  const TokenData d = load_token_data(o);
  REQUIRE(d.train.size() == 28);
  CHECK(d.train.max_token() == 27);
  for (std::int64_t start = 0; start < 28; ++start)
    for (std::size_t n = 0; start + static_cast<std::int64_t>(n) <= 28; ++n)
      CHECK(d.train.tokens(start, n) == std::vector<std::int32_t>(all.begin() + start, all.begin() + start + n));
  // Training windows: targets are the inputs shifted by one, both read across the boundaries.
  std::vector<std::int32_t> tok, tgt;
  for (std::uint64_t stream = 0; stream < 20; ++stream) {
    sample_train_batch(d, 3, o.seq_len, 5, stream, tok, tgt);
    for (std::size_t i = 0; i < tok.size(); ++i) CHECK(tgt[i] == tok[i] + 1);  // all[k] == k
  }
}

TEST_CASE("batch streams are distinct for every (step, micro step), also beyond 1024 micro steps") {
  CHECK(batch_stream(3, 5, 8) == 3 * 1024 + 5);  // the streams of runs with accum <= 1024 are kept
  CHECK(batch_stream(3, 1023, 1024) == 3 * 1024 + 1023);
  // accum = 2048 (GPT-2's 0.5M-token batch from 256-token micro batches): step 0's micro step 1024
  // must not replay step 1's micro step 0.
  CHECK(batch_stream(0, 1024, 2048) != batch_stream(1, 0, 2048));
  CHECK(batch_stream(1, 0, 2048) == 2048);
  CHECK(batch_stream(0, 2047, 2048) < batch_stream(1, 0, 2048));
}

TEST_CASE("a text input with val_fraction 0 is a configuration error") {
  TempDir dir("train_data_noval");
  core::test::write_text(dir / "t.txt", std::string(500, 'x'));
  DataOptions o = input_at(dir / "t.txt");
  o.val_fraction = 0;
  CHECK_THROWS_WITH_AS(load_token_data(o), doctest::Contains("data.val_fraction = 0"), core::UsageError);
  o.val_fraction = 0.1;
  CHECK(load_token_data(o).val.size() == 50);
}

TEST_CASE("a text input trains on the tokens `prepare` writes for it, and leaves no file behind") {
  if (!core::test::have_dataset("tokenizers/gpt2/encoder.json")) return;
  TempDir dir("train_data_text_as_prepare");
  std::string text = core::test::read_text(core::test::datasets_dir() / "text/tinyshakespeare.txt").substr(0, 30000);
  core::test::write_text(dir / "t.txt", text);
  const auto temp_files = [] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
      n += e.path().filename().string().rfind("zpp-train-tokens-" + std::to_string(::getpid()), 0) == 0;
    return n;
  };
  for (const std::string& tokenizer :
       {std::string("bytes"), "gpt2:" + (core::test::datasets_dir() / "tokenizers/gpt2").string()}) {
    CAPTURE(tokenizer);
    core::text::PrepareOptions p;
    p.input = (dir / "t.txt").string();
    p.tokenizer = tokenizer;
    p.out = (dir / "shards").string();
    p.chunk_bytes = 1000;  // many chunks: the same tokens as one
    core::text::prepare(p);
    DataOptions o = input_at(p.input);
    o.tokenizer = tokenizer;
    const TokenData from_text = load_token_data(o);
    o.input = p.out;
    const TokenData from_shards = load_token_data(o);
    REQUIRE(from_text.train.size() == from_shards.train.size());
    REQUIRE(from_text.val.size() == from_shards.val.size());
    CHECK(from_text.train.tokens(0, static_cast<std::size_t>(from_text.train.size())) ==
          from_shards.train.tokens(0, static_cast<std::size_t>(from_shards.train.size())));
    CHECK(from_text.val.tokens(0, static_cast<std::size_t>(from_text.val.size())) ==
          from_shards.val.tokens(0, static_cast<std::size_t>(from_shards.val.size())));
    CHECK(from_text.vocab_size == from_shards.vocab_size);
    CHECK(temp_files() == 0);  // the token file was unlinked once mapped
  }
}

TEST_CASE("a text input with TMPDIR missing or not a folder is an IoError naming TMPDIR, not an internal error") {
  TempDir dir("train_data_tmpdir");
  core::test::write_text(dir / "t.txt", std::string(500, 'a'));
  DataOptions o = input_at(dir / "t.txt");
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  for (const std::string& tmpdir : {(dir / "missing").string(), (dir / "t.txt").string()}) {
    CAPTURE(tmpdir);
    ::setenv("TMPDIR", tmpdir.c_str(), 1);
    CHECK_THROWS_WITH_AS(load_token_data(o), doctest::Contains(("TMPDIR='" + tmpdir + "'").c_str()), core::IoError);
  }
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  CHECK(load_token_data(o).train.size() == 450);
}

TEST_CASE("a shard-named entry that is no regular file is an InputMissingError naming it, never skipped") {
  TempDir dir("train_data_odd_entries");
  core::text::write_shard(dir / "train_000000.bin", ramp(100, 256));
  core::text::write_shard(dir / "val_000000.bin", ramp(50, 256));
  namespace fs = std::filesystem;
  const auto refused = [&](const fs::path& odd, const char* what) {
    CAPTURE(odd);
    CHECK_THROWS_WITH_AS(load_token_data(input_at(dir.path())), doctest::Contains(what), core::InputMissingError);
    CHECK_THROWS_WITH_AS(load_token_data(input_at(dir.path())), doctest::Contains(odd.string().c_str()),
                         core::InputMissingError);
    fs::remove(odd);
    CHECK(load_token_data(input_at(dir.path())).train.size() == 100);
  };
  fs::create_symlink(dir / "absent.bin", dir / "train_000001.bin");
  refused(dir / "train_000001.bin", "a dangling symbolic link");
  fs::create_symlink("val_loop.bin", dir / "val_loop.bin");  // a link to itself: ELOOP
  refused(dir / "val_loop.bin", "unreadable");
  fs::create_directory(dir / "train_000002.bin");
  refused(dir / "train_000002.bin", "a folder");
  REQUIRE(::mkfifo((dir / "val_000001.bin").c_str(), 0600) == 0);
  refused(dir / "val_000001.bin", "not a regular file");
  fs::create_symlink(dir / "train_000000.bin", dir / "train_000003.bin");  // a link to a shard is a shard
  CHECK(load_token_data(input_at(dir.path())).train.size() == 200);
}

TEST_CASE("a prepared folder's splits are the shards prepare.json lists, not other shard-named files beside them") {
  TempDir dir("train_data_listed");
  core::test::write_text(dir / "t.txt", std::string(1000, 'a'));
  core::text::PrepareOptions p;
  p.input = (dir / "t.txt").string();
  p.out = (dir / "shards").string();
  p.shard_tokens = 300;
  const auto prepared = core::text::prepare(p);
  // An llm.c download left in the same folder: its names match the split patterns.
  core::text::write_shard(dir / "shards" / "tiny_shakespeare_val.bin", ramp(500, 256));
  core::text::write_shard(dir / "shards" / "fineweb_train_000001.bin", ramp(700, 256));
  const TokenData d = load_token_data(input_at(dir / "shards"));
  CHECK(d.train.size() == prepared.train_tokens);
  CHECK(d.val.size() == prepared.val_tokens);
  CHECK(d.val.tokens(0, 5) == std::vector<std::int32_t>(5, 'a'));
  // A listed shard that went missing is named, with the prepare.json that lists it.
  std::filesystem::remove(dir / "shards" / "train_000002.bin");
  try {
    load_token_data(input_at(dir / "shards"));
    FAIL("expected InputMissingError");
  } catch (const core::InputMissingError& e) {
    CHECK(std::string(e.what()).find("train_000002.bin") != std::string::npos);
    CHECK(std::string(e.what()).find("prepare.json") != std::string::npos);
  }
}

TEST_CASE("data.input as a shard file or a glob (llm.c's -i): val-named files validate, else the val shards beside") {
  TempDir dir("train_data_shard_list");
  core::text::write_shard(dir / "tiny_train.bin", ramp(100, 256));
  core::text::write_shard(dir / "tiny_val.bin", ramp(40, 7));
  core::text::write_shard(dir / "fw_train_000001.bin", ramp(30, 5));
  core::text::write_shard(dir / "fw_train_000002.bin", ramp(20, 3));
  // One train shard: the val shard beside it validates (a shard's bytes never train as a text).
  TokenData d = load_token_data(input_at(dir / "tiny_train.bin"));
  CHECK(d.train.size() == 100);
  CHECK(d.val.size() == 40);
  CHECK(d.tokenizer == "bytes");
  // A glob: its matches in name order; the val-named match validates.
  d = load_token_data(input_at(dir / "fw_train_*.bin"));
  CHECK(d.train.size() == 50);
  CHECK(d.train.tokens(29, 2) == std::vector<std::int32_t>{4, 0});  // shard 1 then shard 2
  CHECK(d.val.size() == 40);
  d = load_token_data(input_at(dir / "tiny_*.bin"));
  CHECK(d.train.size() == 100);
  CHECK(d.val.tokens(0, 8) == ramp(8, 7));
  CHECK_THROWS_AS(load_token_data(input_at(dir / "nothing_*.bin")), core::InputMissingError);
  CHECK_THROWS_WITH_AS(load_token_data(input_at(dir / "tiny_val.bin")), doctest::Contains("only validation shards"),
                       core::DataError);
  // The prepare.json of their folder names the tokenizer (and bounds the tokens) as for a folder.
  core::test::write_text(dir / "prepare.json", nlohmann::json{{"tokenizer", "bytes"}, {"vocab_size", 50}}.dump());
  CHECK_THROWS_WITH_AS(load_token_data(input_at(dir / "tiny_train.bin")), doctest::Contains("token 50 at index 50"),
                       core::DataError);
  CHECK(prepared_tokenizer((dir / "tiny_train.bin").string()) == "bytes");
  CHECK(prepared_tokenizer((dir / "fw_*.bin").string()) == "bytes");
  CHECK(prepared_tokenizer(dir.path().string()) == "bytes");
  std::filesystem::remove(dir / "prepare.json");
  CHECK(prepared_tokenizer(dir.path().string()).empty());
  // Without a val shard anywhere: the message says where it looked.
  TempDir lone("train_data_shard_lone");
  core::text::write_shard(lone / "a_train.bin", ramp(100, 256));
  CHECK_THROWS_WITH_AS(load_token_data(input_at(lone / "a_train.bin")), doctest::Contains("no validation shard"),
                       core::DataError);
  // A text is still read from its first byte on.
  core::test::write_text(dir / "t.txt", "0123456789abcdefghij");
  DataOptions o = input_at(dir / "t.txt");
  o.val_fraction = 0.5;
  CHECK(load_token_data(o).train.tokens(0, 3) == std::vector<std::int32_t>{'0', '1', '2'});
}

// The batch starts of llm.c's DataLoader over train shards of 25, 20 and 33 tokens with B = 2, T = 4 (3, 2 and 4
// chunks of 8 tokens) and over 33, 20, 33 tokens for rank 1 of 2, as tests/train/llmc_loader_order.py (a Python
// transcription of llm.c's dataloader.h and rand.h with a MT19937 of its own) prints them.
TEST_CASE("data.order sequential / llmc: llm.c's loader order, batch for batch, also across epochs and ranks") {
  const auto split_of = [](const std::vector<int>& sizes) {
    TempDir dir("train_data_order");
    for (std::size_t i = 0; i < sizes.size(); ++i)
      core::text::write_shard(dir / ("s_train_00000" + std::to_string(i) + ".bin"), ramp(sizes[i], 256));
    core::text::write_shard(dir / "s_val.bin", ramp(40, 256));
    DataOptions o = input_at(dir / "s_train_*.bin");
    o.seq_len = 4;
    return load_token_data(o);  // the mappings outlive the folder
  };
  const auto starts = [](BatchOrder order, int n) {
    std::vector<std::int64_t> out;
    for (int i = 0; i < n; ++i) out.push_back(order.next());
    return out;
  };
  const TokenData d = split_of({25, 20, 33});
  CHECK(starts(BatchOrder(d.train, 2, 4, false), 12) == std::vector<std::int64_t>{0, 8, 16, 25, 33, 45, 53, 61, 69, 0, 8, 16});
  CHECK(starts(BatchOrder(d.train, 2, 4, true), 20) ==
        std::vector<std::int64_t>{61, 69, 53, 45, 25, 33, 16, 0, 8, 69, 45, 53, 61, 16, 8, 0, 33, 25, 45, 61});
  const TokenData d2 = split_of({33, 20, 33});
  CHECK(starts(BatchOrder(d2.train, 2, 4, true, 1, 2), 12) ==
        std::vector<std::int64_t>{61, 77, 8, 24, 41, 41, 77, 61, 8, 24, 41, 8});
  // skip(n) then next() is the (n+1)-th batch: a resumed run continues the order.
  BatchOrder resumed(d.train, 2, 4, true);
  resumed.skip(11);
  CHECK(resumed.next() == 53);
  // A batch is the B x T + 1 tokens from its start: rows of T inputs, targets shifted by one.
  std::vector<std::int32_t> tok, tgt;
  chunk_batch(d, 2, 4, 25, tok, tgt);
  CHECK(tok == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7});  // shard 1 starts at 25 with token 0
  CHECK(tgt == std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8});
  // A shard without a whole batch (+1 token) is refused, as llm.c asserts.
  CHECK_THROWS_WITH_AS(BatchOrder(d.train, 4, 8, false), doctest::Contains("has 25 tokens, fewer than ranks x B x T + 1 = 33"),
                       core::DataError);
}

TEST_CASE("a shard folder's too short validation split is not blamed on data.val_fraction (a text-only key)") {
  TempDir dir("train_data_short_val");
  core::text::write_shard(dir / "train_000000.bin", ramp(100, 256));
  core::text::write_shard(dir / "val_000000.bin", ramp(5, 256));
  try {
    load_token_data(input_at(dir.path()));
    FAIL("expected DataError");
  } catch (const core::DataError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("validation split has 5 tokens") != std::string::npos);
    CHECK(msg.find("prepare the folder with a larger val_fraction") != std::string::npos);
    CHECK(msg.find("raise data.val_fraction") == std::string::npos);
  }
}

TEST_CASE("a text input that cannot be read is an IoError without the hint about room in TMPDIR") {
  DataOptions o = input_at("/proc/self/mem");  // opens, and reading offset 0 fails (EIO)
  try {
    load_token_data(o);
    FAIL("expected IoError");
  } catch (const core::IoError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("error reading input text /proc/self/mem") != std::string::npos);
    CHECK(msg.find("TMPDIR") == std::string::npos);
  }
}

TEST_CASE("a text input's token file is never visible in TMPDIR, even while the text is being tokenized") {
  // A process killed while tokenizing (Ctrl-C on a large text) must leave no token file behind: it
  // is unlinked before the first token is written. The text comes through a fifo, so tokenizing
  // waits half-way while the folder is looked at.
  TempDir dir("train_data_tmp_unlinked");
  std::filesystem::create_directory(dir / "tmp");
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", (dir / "tmp").c_str(), 1);
  REQUIRE(::mkfifo((dir / "text").c_str(), 0600) == 0);
  DataOptions o = input_at(dir / "text");
  std::int64_t train_tokens = -1;
  std::string failure;
  std::thread loader([&] {
    try {
      train_tokens = load_token_data(o).train.size();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  {
    std::ofstream fifo(dir / "text", std::ios::binary);  // opens once the loader has opened its end
    fifo << std::string(500, 'a') << std::flush;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the loader waits for the rest
    CHECK(std::filesystem::is_empty(dir / "tmp"));
    fifo << std::string(500, 'b');
  }
  loader.join();
  if (old) ::setenv("TMPDIR", saved.c_str(), 1);
  else ::unsetenv("TMPDIR");
  CHECK(failure == "");
  CHECK(train_tokens == 900);
  CHECK(std::filesystem::is_empty(dir / "tmp"));
}
