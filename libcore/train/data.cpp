// Loading token splits (text + tokenizer, or llm.c shards) and cutting training/validation windows.
#include "train/data.hpp"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rng.hpp"
#include "text/prepare.hpp"
#include "text/shard.hpp"
#include "text/tokenizer.hpp"

namespace core::train {

namespace fs = std::filesystem;

void TokenSplit::push(Part part) {
  part.begin = size_;
  size_ += static_cast<std::int64_t>(part.tokens.size());
  parts_.push_back(std::move(part));
}

void TokenSplit::add(text::MappedShard shard) {
  auto owner = std::make_shared<const text::MappedShard>(std::move(shard));
  push(Part{owner->path().string(), true, owner, owner->tokens()});
}

void TokenSplit::add(std::shared_ptr<const io::MappedFile> tokens_file, std::int64_t begin, std::int64_t count,
                     std::string source) {
  const auto* all = reinterpret_cast<const std::uint16_t*>(tokens_file->bytes().data());
  push(Part{std::move(source), false, std::move(tokens_file),
            std::span<const std::uint16_t>(all + begin, static_cast<std::size_t>(count))});
}

void TokenSplit::copy(std::int64_t start, std::size_t n, std::int32_t* out) const {
  // The last part that begins at or before start, then on through the following parts.
  auto part = std::upper_bound(parts_.begin(), parts_.end(), start,
                               [](std::int64_t at, const Part& p) { return at < p.begin; });
  --part;
  for (std::size_t done = 0; done < n; ++part) {
    const auto from = static_cast<std::size_t>(start + static_cast<std::int64_t>(done) - part->begin);
    const std::size_t take = std::min(n - done, part->tokens.size() - from);
    std::copy_n(part->tokens.begin() + static_cast<std::ptrdiff_t>(from), take, out + done);
    done += take;
  }
}

std::vector<std::int64_t> TokenSplit::part_sizes() const {
  std::vector<std::int64_t> out;
  for (const Part& p : parts_) out.push_back(static_cast<std::int64_t>(p.tokens.size()));
  return out;
}

std::vector<std::int32_t> TokenSplit::tokens(std::int64_t start, std::size_t n) const {
  std::vector<std::int32_t> out(n);
  copy(start, n, out.data());
  return out;
}

std::int32_t TokenSplit::max_token() const {
  std::int32_t m = -1;
  for (const Part& p : parts_)
    for (const std::uint16_t t : p.tokens) m = std::max<std::int32_t>(m, t);
  return m;
}

void TokenSplit::check_vocabulary(std::int32_t vocab, const std::string& tokenizer) const {
  for (const Part& p : parts_) {
    const auto bad = std::find_if(p.tokens.begin(), p.tokens.end(), [vocab](std::uint16_t t) { return t >= vocab; });
    if (bad == p.tokens.end()) continue;
    const auto i = static_cast<std::size_t>(bad - p.tokens.begin());
    throw DataError((p.shard ? "token shard " : "") + p.source + ": token " + std::to_string(*bad) + " at index " +
                    std::to_string(i) +
                    (p.shard ? " (byte offset " + std::to_string(core::text::kShardHeaderBytes + 2 * i) + ")" : "") +
                    " is outside the vocabulary [0, " + std::to_string(vocab) + ") of " + tokenizer);
  }
}

namespace {

// Whether `word` is one of the '_'-separated words of the file's stem (fineweb_train_000001 has "train").
bool has_word(const fs::path& shard, const std::string& word) {
  return ("_" + shard.stem().string() + "_").find("_" + word + "_") != std::string::npos;
}

// The *.bin files of a split, in name order: those whose stem has `split` as one of its
// '_'-separated words, so both prepare's train_000000.bin and llm.c's tiny_shakespeare_val.bin or
// fineweb_train_000001.bin are found. A file so named that is no regular file (a dangling or looping
// link, a folder, a fifo) is an InputMissingError naming it: never silently left out of the split.
std::vector<fs::path> split_shards(const fs::path& dir, const std::string& split) {
  std::vector<fs::path> out;
  std::error_code ec;
  const auto cannot_list = [&] {
    return InputMissingError("data.input: cannot list folder '" + dir.string() + "': " + ec.message());
  };
  fs::directory_iterator it(dir, ec);
  if (ec) throw cannot_list();
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw cannot_list();
    const fs::path& path = it->path();
    if (path.extension() != ".bin") continue;
    if (!has_word(path, split)) continue;
    std::error_code st_ec;
    const fs::file_status st = fs::status(path, st_ec);
    if (!fs::is_regular_file(st))
      throw InputMissingError(
          "data.input: '" + path.string() + "' is named like a " + split + " shard but is " +
          (st.type() == fs::file_type::not_found ? "a dangling symbolic link"
           : st_ec                               ? "unreadable (" + st_ec.message() + ")"
           : fs::is_directory(st)                ? "a folder"
                                                 : "not a regular file (a fifo, socket or device)") +
          "; remove or rename it");
    out.push_back(path);
  }
  if (ec) throw cannot_list();
  std::sort(out.begin(), out.end());
  return out;
}

// Tokenizes a text input as `prepare` does (chunk by chunk, end-of-text token first) into a uint16
// file in the temporary folder and maps it. The file is unlinked as soon as it is open, before any
// token is written: the open descriptors, then the mapping, keep it until the last split using the
// tokens goes, and no file is left behind, however the process ends (Ctrl-C while tokenizing too).
std::shared_ptr<const io::MappedFile> tokenize_text(std::istream& in, const std::string& source,
                                                    const core::text::Tokenizer& tokenizer,
                                                    const core::text::InputFormat& format) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);  // TMPDIR (or /tmp); an error when it is no folder
  if (ec) {
    const char* env = std::getenv("TMPDIR");
    throw IoError("data.input '" + source + "': no temporary folder to tokenize it into: TMPDIR=" +
                  (env ? "'" + std::string(env) + "'" : std::string("(unset)")) + ": " + ec.message() +
                  ". hint: point TMPDIR at a writable folder, or run `zpp-train prepare` once and train on its folder");
  }
  const auto hint = [&] {
    return ". hint: tokenizing data.input needs 2 bytes per token in " + tmp.string() +
           " (TMPDIR); or run `zpp-train prepare` once and train on its folder";
  };
  const fs::path path = tmp / ("zpp-train-tokens-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".u16");
  std::ofstream out(path, std::ios::binary);
  const int fd = out ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC) : -1;
  const int open_errno = errno;
  fs::remove(path, ec);
  if (fd < 0) throw IoError("cannot create token file " + path.string() + ": " + std::strerror(open_errno) + hint());
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  try {
    core::text::tokenize_to_file(in, source, tokenizer, core::text::PrepareOptions{}.chunk_bytes, out, path.string(),
                                 0, format);
  } catch (const IoError& e) {
    if (in.bad()) throw;  // the text could not be read: no matter of room in TMPDIR
    throw IoError(std::string(e.what()) + hint());
  }
  out.close();
  if (!out) throw IoError("cannot write token file " + path.string() + " (disk full?)" + hint());
  return std::make_shared<const io::MappedFile>(fd, path.string());
}

// The splits of a text: its tokens, the last val_fraction of them the validation split.
void split_text(TokenData& d, std::istream& text, const std::string& source, const DataOptions& o) {
  if (!(o.val_fraction > 0))
    throw UsageError("data.val_fraction = 0 leaves a text input no validation split (training evaluates on it)");
  const auto tok = core::text::make_tokenizer(o.tokenizer.empty() ? "bytes" : o.tokenizer);
  const auto file = tokenize_text(text, source, *tok, {o.format, o.text_key});
  const std::int64_t n = static_cast<std::int64_t>(file->bytes().size() / 2);
  const auto n_val = static_cast<std::int64_t>(std::floor(o.val_fraction * static_cast<double>(n)));
  d.train.add(file, 0, n - n_val, source + " (train split)");
  d.val.add(file, n - n_val, n_val, source + " (validation split)");
  d.vocab_size = tok->vocab_size();
  d.tokenizer = tok->spec();
}

// DataError unless both splits hold a window of seq_len + 1 tokens.
void check_split_sizes(const TokenData& d, const DataOptions& o, bool shard_folder) {
  const std::int64_t need = static_cast<std::int64_t>(o.seq_len) + 1;
  if (d.train.size() < need)
    throw DataError("data.input '" + d.source + "': the train split has " + std::to_string(d.train.size()) +
                    " tokens, fewer than data.seq_len + 1 = " + std::to_string(need));
  if (d.val.size() < need)
    throw DataError("data.input '" + d.source + "': the validation split has " + std::to_string(d.val.size()) +
                    " tokens, fewer than data.seq_len + 1 = " + std::to_string(need) +
                    (shard_folder ? " (prepare the folder with a larger val_fraction, or shorten data.seq_len)"
                                  : " (raise data.val_fraction or shorten data.seq_len)"));
}

// prepare.json beside shards: sets d.tokenizer and d.vocab_size from it (a data.tokenizer the user gave of
// another kind is not used, with a warning) and returns it. DataError naming the file when malformed.
nlohmann::json read_prepare_json(const fs::path& meta, TokenData& d, const DataOptions& o) {
  std::ifstream f(meta);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
    d.tokenizer = j.value("tokenizer", std::string("bytes"));
    d.vocab_size = j.value("vocab_size", 0);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(meta.string() + ": " + e.what());
  }
  if (d.vocab_size < 0 || d.vocab_size > 65536)
    throw DataError(meta.string() + ": vocab_size " + std::to_string(d.vocab_size) + " is outside [1, 65536] (uint16 shards)");
  const auto kind = [](const std::string& spec) { return spec.substr(0, spec.find(':')); };
  if (!o.tokenizer.empty() && kind(o.tokenizer) != kind(d.tokenizer))  // only a tokenizer the user gave
    log::warn("data.tokenizer={} is not used: the shards of {} were made with {} (named by {})", o.tokenizer, o.input,
              d.tokenizer, meta.string());
  return j;
}

bool is_shard_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::int32_t magic = 0;
  return f.read(reinterpret_cast<char*>(&magic), sizeof magic) && magic == core::text::kShardMagic;
}

// The files a glob pattern matches (glob(3): sorted); InputMissingError when none.
std::vector<fs::path> glob_files(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<fs::path> out;
  for (std::size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  if (out.empty()) throw InputMissingError("data.input: no file matches '" + pattern + "'");
  return out;
}

// Shards named one by one (a shard file or a glob, as llm.c's -i): those named "val" are the validation split,
// the others the train split; without a val shard among them, the val shards beside the first one are (llm.c's
// tiny_shakespeare_train.bin finds tiny_shakespeare_val.bin). The tokenizer as in a folder: its prepare.json's,
// else data.tokenizer.
void load_shard_list(TokenData& d, const DataOptions& o, const std::vector<fs::path>& files) {
  std::vector<fs::path> train, val;
  for (const auto& f : files) (has_word(f, "val") ? val : train).push_back(f);
  const fs::path folder = files.front().has_parent_path() ? files.front().parent_path() : fs::path(".");
  if (train.empty())
    throw DataError("data.input '" + o.input + "' names only validation shards (a \"val\" word in their names)");
  if (val.empty()) {
    val = split_shards(folder, "val");
    if (val.empty())
      throw DataError("data.input '" + o.input + "': no validation shard among the files it names nor beside them in " +
                      folder.string() + " (a *val*.bin)");
    log::info("data.input: validation split from {} ({} shard(s) beside the train shards)", folder.string(), val.size());
  }
  std::string named_by = "(data.tokenizer)";
  if (fs::exists(folder / "prepare.json")) {
    read_prepare_json(folder / "prepare.json", d, o);
    named_by = "(named by " + (folder / "prepare.json").string() + ")";
  } else {
    const auto tok = core::text::make_tokenizer(o.tokenizer.empty() ? "bytes" : o.tokenizer);
    d.tokenizer = tok->spec();
    d.vocab_size = tok->vocab_size();
  }
  for (const auto& f : train) d.train.add(core::text::MappedShard(f));
  for (const auto& f : val) d.val.add(core::text::MappedShard(f));
  if (d.vocab_size == 0) d.vocab_size = std::max(d.train.max_token(), d.val.max_token()) + 1;
  d.train.check_vocabulary(d.vocab_size, d.tokenizer + " " + named_by);
  d.val.check_vocabulary(d.vocab_size, d.tokenizer + " " + named_by);
}

}  // namespace

std::string prepared_tokenizer(const std::string& input) {
  if (input.empty() || input == "-") return "";
  std::error_code ec;
  fs::path folder = input;
  if (!fs::is_directory(folder, ec)) {
    if (input.find_first_of("*?[") != std::string::npos && !fs::exists(folder, ec)) {
      glob_t g{};
      if (::glob(input.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) folder = fs::path(g.gl_pathv[0]);
      ::globfree(&g);
    }
    if (!is_shard_file(folder)) return "";  // a text (or nothing): no shards to have been prepared
    folder = folder.has_parent_path() ? folder.parent_path() : fs::path(".");
  }
  std::ifstream f(folder / "prepare.json");
  if (!f) return "";
  try {
    return nlohmann::json::parse(f).value("tokenizer", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw DataError((folder / "prepare.json").string() + ": " + e.what());
  }
}

TokenData load_token_data(const DataOptions& o) {
  TokenData d;
  d.source = o.input == "-" ? "standard input" : o.input;
  if (o.input == "-") {  // `zstd -dc corpus.zst | zpp-train train data.input=-`
    split_text(d, std::cin, d.source, o);
    check_split_sizes(d, o, false);
    return d;
  }
  const fs::path in(o.input);
  if (o.input.empty()) throw UsageError("data.input: empty path");
  std::error_code exists_ec;
  if (o.input.find_first_of("*?[") != std::string::npos && !fs::exists(in, exists_ec)) {
    load_shard_list(d, o, glob_files(o.input));
    check_split_sizes(d, o, true);
    return d;
  }
  if (fs::is_regular_file(in, exists_ec) && is_shard_file(in)) {
    load_shard_list(d, o, {in});
    check_split_sizes(d, o, true);
    return d;
  }
  std::error_code status_ec;
  const fs::file_status status = fs::status(in, status_ec);
  if (status.type() == fs::file_type::not_found)
    throw InputMissingError("data.input: '" + o.input + "' does not exist");
  if (status_ec)  // a looping link, a folder on the way that may not be searched
    throw InputMissingError("data.input: '" + o.input + "' cannot be reached: " + status_ec.message());
  if (fs::is_directory(status)) {
    auto train_files = split_shards(in, "train"), val_files = split_shards(in, "val");
    // The tokenizer is the one prepare.json names; shards without it (llm.c's) use data.tokenizer.
    // prepare.json also lists the shards prepare wrote: the splits are those, not whatever other
    // shard-named files (an llm.c download, say) share the folder.
    const fs::path meta = in / "prepare.json";
    std::string named_by;
    if (fs::exists(meta)) {
      const nlohmann::json j = read_prepare_json(meta, d, o);
      try {
        const auto listed = [&](const char* key, std::vector<fs::path>& files) {
          if (!j.contains(key)) return;
          std::vector<fs::path> names;
          for (const auto& name : j.at(key)) {
            names.push_back(in / fs::path(name.get<std::string>()).filename());
            if (!fs::exists(names.back()))
              throw InputMissingError("data.input: shard " + names.back().string() + ", listed in " + meta.string() +
                                      ", does not exist (prepare the folder again)");
          }
          for (const auto& file : files)
            if (std::find(names.begin(), names.end(), file) == names.end())
              log::warn("data.input: {} is not among the shards {} lists; left out", file.string(), meta.string());
          files = std::move(names);
        };
        listed("train_files", train_files);
        listed("val_files", val_files);
      } catch (const nlohmann::json::exception& e) {
        throw DataError(meta.string() + ": " + e.what());
      }
      named_by = "(named by " + meta.string() + ")";
    } else {
      const auto tok = core::text::make_tokenizer(o.tokenizer.empty() ? "bytes" : o.tokenizer);
      d.tokenizer = tok->spec();
      d.vocab_size = tok->vocab_size();
      named_by = "(data.tokenizer: no prepare.json beside the shards; GPT-2 shards need data.tokenizer=gpt2:DIR)";
    }
    if (train_files.empty() && val_files.empty())
      throw DataError("data.input: folder '" + o.input + "' has no train and val shards (*train*.bin, *val*.bin; run `zpp-train prepare`)");
    if (train_files.empty() || val_files.empty())
      throw DataError("data.input: folder '" + o.input + "' has " + (train_files.empty() ? "val" : "train") +
                      " shards but no " + (train_files.empty() ? "train" : "val") +
                      " shard (`zpp-train prepare val_fraction=0.1` makes both)");
    for (const auto& f : train_files) d.train.add(core::text::MappedShard(f));
    for (const auto& f : val_files) d.val.add(core::text::MappedShard(f));
    if (d.vocab_size > 0) {
      d.train.check_vocabulary(d.vocab_size, d.tokenizer + " " + named_by);
      d.val.check_vocabulary(d.vocab_size, d.tokenizer + " " + named_by);
    } else {
      d.vocab_size = std::max(d.train.max_token(), d.val.max_token()) + 1;
    }
  } else {
    std::ifstream f(in, std::ios::binary);
    if (!f) throw InputMissingError("data.input: cannot open '" + o.input + "'");
    split_text(d, f, o.input, o);
  }
  check_split_sizes(d, o, fs::is_directory(in));
  return d;
}

namespace {
// tok = split[start, start + T), tgt = split[start + 1, start + T + 1).
void window(const TokenSplit& split, std::int64_t start, int T, std::int32_t* tok, std::int32_t* tgt) {
  split.copy(start, static_cast<std::size_t>(T), tok);
  std::copy(tok + 1, tok + T, tgt);
  split.copy(start + T, 1, tgt + T - 1);
}
}  // namespace

void check_model_vocabulary(const TokenData& data, const ModelConfig& model) {
  if (model.architecture() == Arch::bert && data.vocab_size >= model.vocab_size)
    throw UsageError("model.vocab_size = " + std::to_string(model.vocab_size) + " leaves no id for [MASK] after the " +
                     std::to_string(data.vocab_size) + " ids of " + data.tokenizer + " (bert needs at least " +
                     std::to_string(data.vocab_size + 1) + ")");
  if (data.vocab_size > model.vocab_size)
    throw UsageError("model.vocab_size = " + std::to_string(model.vocab_size) + " is smaller than the vocabulary of " +
                     data.tokenizer + " (" + std::to_string(data.vocab_size) + ")");
}

std::uint64_t batch_stream(std::int64_t step, int micro, int accum) {
  const std::uint64_t per_step = std::max<std::uint64_t>(1024, static_cast<std::uint64_t>(accum));
  return static_cast<std::uint64_t>(step) * per_step + static_cast<std::uint64_t>(micro);
}

void sample_train_batch(const TokenData& data, int B, int T, std::uint64_t seed, std::uint64_t stream,
                        std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets) {
  tokens.resize(std::size_t(B) * T);
  targets.resize(std::size_t(B) * T);
  Rng rng = Rng(seed).split(stream);
  const auto n_starts = static_cast<std::uint64_t>(data.train.size() - T);  // start + T is the last target
  for (int b = 0; b < B; ++b)
    window(data.train, static_cast<std::int64_t>(rng.below(n_starts)), T, tokens.data() + std::size_t(b) * T,
           targets.data() + std::size_t(b) * T);
}

BatchOrder::BatchOrder(const TokenSplit& split, int B, int T, bool shuffle, int rank, int ranks)
    : chunk_tokens_(std::int64_t(ranks) * B * T), rank_offset_(std::int64_t(rank) * B * T), shuffle_(shuffle),
      rng_(42u + static_cast<unsigned>(rank)) {
  std::int64_t begin = 0;
  const auto sizes = split.part_sizes();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < chunk_tokens_ + 1)
      throw DataError("data.order=" + std::string(shuffle ? "llmc" : "sequential") + ": " + split.part_source(i) +
                      " has " + std::to_string(sizes[i]) + " tokens, fewer than ranks x B x T + 1 = " +
                      std::to_string(chunk_tokens_ + 1) + " (llm.c's loader needs a batch per shard; use data.order=random)");
    begin_.push_back(begin);
    chunks_.push_back((sizes[i] - 1) / chunk_tokens_);
    shard_order_.push_back(static_cast<int>(i));
    begin += sizes[i];
  }
  if (begin_.empty()) throw DataError("data.order: the train split has no tokens");
  reset();
}

namespace {
// llm.c's random_permutation (llmc/rand.h): Fisher-Yates from the back, j = randint32 % (i + 1).
void permute(std::vector<int>& v, std::mt19937& rng) {
  for (std::size_t i = v.size(); i-- > 1;) std::swap(v[i], v[rng() % (i + 1)]);
}
}  // namespace

void BatchOrder::reset() {  // llm.c's dataloader_reset: a new epoch
  shard_ = 0;
  if (shuffle_) permute(shard_order_, rng_);
  enter_shard();
}

void BatchOrder::enter_shard() {  // llm.c's dataloader_load_shard_ + prepare_intra_shard_indices_
  chunk_ = 0;
  if (!shuffle_) return;
  chunk_order_.resize(static_cast<std::size_t>(chunks_[shard_order_[shard_]]));
  for (std::size_t i = 0; i < chunk_order_.size(); ++i) chunk_order_[i] = static_cast<int>(i);
  permute(chunk_order_, rng_);
}

std::int64_t BatchOrder::next() {  // llm.c's dataloader_next_batch
  if (chunk_ >= chunks_[shard_order_[shard_]]) {
    if (shard_ + 1 == shard_order_.size()) {
      reset();
    } else {
      ++shard_;
      enter_shard();
    }
  }
  const int s = shard_order_[shard_];
  const std::int64_t chunk = shuffle_ ? chunk_order_[static_cast<std::size_t>(chunk_)] : chunk_;
  ++chunk_;
  return begin_[s] + chunk * chunk_tokens_ + rank_offset_;
}

void BatchOrder::skip(std::int64_t batches) {
  for (std::int64_t i = 0; i < batches; ++i) next();
}

void chunk_batch(const TokenData& data, int B, int T, std::int64_t start, std::vector<std::int32_t>& tokens,
                 std::vector<std::int32_t>& targets) {
  tokens.resize(std::size_t(B) * T);
  targets.resize(std::size_t(B) * T);
  for (int b = 0; b < B; ++b)
    window(data.train, start + std::int64_t(b) * T, T, tokens.data() + std::size_t(b) * T,
           targets.data() + std::size_t(b) * T);
}

void val_batch(const TokenData& data, int B, int T, int i, std::vector<std::int32_t>& tokens,
               std::vector<std::int32_t>& targets) {
  tokens.resize(std::size_t(B) * T);
  targets.resize(std::size_t(B) * T);
  const auto windows = static_cast<std::size_t>((data.val.size() - 1) / T);
  for (int b = 0; b < B; ++b) {
    const std::size_t w = (std::size_t(i) * B + b) % windows;
    window(data.val, static_cast<std::int64_t>(w) * T, T, tokens.data() + std::size_t(b) * T,
           targets.data() + std::size_t(b) * T);
  }
}

void apply_mlm_mask(std::vector<std::int32_t>& tokens, std::vector<std::int32_t>& targets, std::int32_t mask_id,
                    std::int32_t vocab, double prob, std::uint64_t seed, std::uint64_t stream) {
  Rng rng = Rng(seed ^ 0x6d6c6d5f6d61736bULL).split(stream);
  bool any = false;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    targets[i] = -1;
    if (rng.uniform() >= prob) continue;
    any = true;
    targets[i] = tokens[i];
    const double r = rng.uniform();
    if (r < 0.8) tokens[i] = mask_id;
    else if (r < 0.9) tokens[i] = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(vocab)));
  }
  if (!any && !tokens.empty()) {
    targets[0] = tokens[0];
    tokens[0] = mask_id;
  }
}

}  // namespace core::train
