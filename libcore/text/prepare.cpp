// Tokenize a text file and write train/val shards (see prepare.hpp).
#include "text/prepare.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <string>

#include <signal.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"
#include "common/timer.hpp"
#include "text/shard.hpp"
#include "text/tokenizer.hpp"
#include "text/unicode.hpp"

namespace core::text {
namespace fs = std::filesystem;

namespace {

std::string shard_name(const std::string& split, std::size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s_%06zu.bin", split.c_str(), index);
  return buf;
}

std::ifstream open_input(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputMissingError("input text " + path.string() + " is a directory, not a file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (!fs::exists(path, ec) && !ec) throw InputMissingError("input text not found: " + path.string());
    throw IoError("cannot read input text " + path.string() + (err ? std::string(": ") + std::strerror(err) : ""));
  }
  return in;
}

// Pass 2: tokens [begin, begin + n) of the token file (read from `in`) as split_000000.bin, ... in dir (shards of at
// most shard_tokens, copied a block at a time); returns the file names.
std::vector<std::string> write_split(std::istream& in, const std::string& tokens_file, std::int64_t begin, std::int64_t n,
                                     const fs::path& dir, const std::string& split, std::int64_t shard_tokens) {
  in.clear();
  in.seekg(begin * 2);
  std::vector<std::string> names;
  std::vector<std::uint16_t> packed;
  for (std::int64_t start = 0; start < n; start += shard_tokens) {
    names.push_back(shard_name(split, names.size()));
    const std::int64_t count = std::min(shard_tokens, n - start);
    ShardWriter shard(dir / names.back(), count);
    for (std::int64_t done = 0; done < count;) {
      packed.resize(static_cast<std::size_t>(std::min<std::int64_t>(count - done, 1 << 20)));
      if (!in.read(reinterpret_cast<char*>(packed.data()), static_cast<std::streamsize>(packed.size() * 2)))
        throw IoError("prepare: cannot read back " + tokens_file);
      shard.append(packed);
      done += static_cast<std::int64_t>(packed.size());
    }
    shard.commit();
  }
  return names;
}

// Removes the split_NNNNNN.bin shards an earlier run left in dir.
void remove_shards(const fs::path& dir, const std::string& split) {
  const std::regex pattern(split + "_[0-9]{6}\\.bin");
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, pattern)) continue;
    std::error_code ec;
    fs::remove(entry.path(), ec);
    if (ec) throw IoError("prepare: cannot remove the earlier shard " + entry.path().string() + ": " + ec.message());
  }
}

// Moves the staged shards into out; returns their full paths.
std::vector<std::string> publish(const fs::path& staging, const fs::path& out, const std::vector<std::string>& names) {
  std::vector<std::string> paths;
  for (const auto& name : names) {
    std::error_code ec;
    fs::rename(staging / name, out / name, ec);
    if (ec) throw IoError("prepare: cannot move " + (staging / name).string() + " into " + out.string() + ": " + ec.message());
    paths.push_back((out / name).string());
  }
  return paths;
}

// The staging folder of this process: host and pid, so that a later prepare can tell an abandoned one
// (its process gone) from one another prepare is writing, also on a filesystem shared between nodes.
constexpr std::string_view kStagingPrefix = ".prepare-staging-";
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "host";
  return name;
}
fs::path staging_dir(const fs::path& out) {
  return out / (std::string(kStagingPrefix) + host_name() + "-" + std::to_string(::getpid()));
}

// Removes the staging folders that prepares killed while writing shards (SIGKILL, the OOM killer, a
// node failure) left in `out`: those of this host whose process no longer exists. Others are kept.
void remove_abandoned_staging(const fs::path& out) {
  const std::string mine = std::string(kStagingPrefix) + host_name() + "-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(mine)) continue;
    const std::string pid_text = name.substr(mine.size());
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code removed;
    const auto count = fs::remove_all(entry.path(), removed);
    if (removed)
      log::warn("prepare: cannot remove {}, left by a prepare that was killed: {}", entry.path().string(),
                removed.message());
    else
      log::info("prepare: removed {} ({} entries), left by a prepare that was killed", entry.path().string(), count);
  }
}

// A folder removed (with what it holds) when the scope ends, unless kept.
struct ScratchDir {
  fs::path path;
  bool keep = false;
  ~ScratchDir() {
    std::error_code ec;
    if (!keep) fs::remove_all(path, ec);
  }
};

}  // namespace

namespace {
// Whether the character that ends at buf[end - 1] is whole, well-formed and no whitespace. A unit
// that starts before a lead byte cannot cover it, so the pre-tokenizer decodes this character as one.
bool ends_in_non_space(std::string_view buf, std::size_t end) {
  for (std::size_t len = 1; len <= 4 && len <= end; ++len) {
    const CodeUnit u = decode_utf8(buf, end - len);
    if (u.valid && u.len == len) return classify(u.cp) != CharClass::space;
    if ((static_cast<unsigned char>(buf[end - len]) & 0xC0) != 0x80) return false;  // a lead byte or ASCII
  }
  return false;
}
}  // namespace

// GPT-2's pre-tokenizer (pretokenize.hpp) makes a newline between two characters that are no
// whitespace a piece of its own, whether or not the text goes on (a blank before it, even a Unicode
// one, would join it into a longer whitespace piece), and the piece after it starts there either way:
// any script may surround it (lines of CJK text cut too). A CR LF between two such characters is
// two pieces, CR and LF (the regex leaves a run's last blank to the next piece), so a cut between
// them is safe too, as CR alone at the end of a chunk (Windows line ends get cut points). The
// characters around must be whole and well-formed in buf. Byte tokens split anywhere.
std::size_t last_safe_cut(std::string_view buf) {
  const auto non_space_at = [&](std::size_t i) {
    if (i >= buf.size()) return false;
    const CodeUnit u = decode_utf8(buf, i);
    return u.valid && classify(u.cp) != CharClass::space;
  };
  for (std::size_t i = buf.size(); i-- > 2;) {
    if (buf[i - 1] == '\n' && ends_in_non_space(buf, i - 1) && non_space_at(i)) return i;
    if (buf[i - 1] == '\r' && buf[i] == '\n' && ends_in_non_space(buf, i - 1) && non_space_at(i + 1)) return i;
  }
  return std::string_view::npos;
}

namespace {

constexpr std::size_t kPartBytes = 1 << 20;  // text a thread tokenizes at a time

// Bounds of parts of `text` of about kPartBytes, cut where last_safe_cut allows: 0, cuts..., size.
// Each cut is looked for only after the previous one, so the scans cover the text once.
std::vector<std::size_t> part_bounds(std::string_view text) {
  std::vector<std::size_t> bounds = {0};
  for (std::size_t target = kPartBytes; target < text.size(); target += kPartBytes) {
    if (target <= bounds.back()) continue;
    const std::size_t cut = last_safe_cut(text.substr(bounds.back(), target - bounds.back()));
    if (cut != std::string_view::npos && cut > 0) bounds.push_back(bounds.back() + cut);
  }
  bounds.push_back(text.size());
  return bounds;
}

// The tokens of each text: the texts cut into parts (part_bounds) that `threads` threads encode (0:
// OpenMP's default); out[t] holds the tokens of texts[t].
std::vector<std::vector<std::int32_t>> encode_texts(const Tokenizer& tokenizer, const std::vector<std::string_view>& texts,
                                                    int threads) {
  struct Part {
    std::size_t text;
    std::string_view bytes;
  };
  std::vector<Part> parts;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    const std::vector<std::size_t> bounds = part_bounds(texts[t]);
    for (std::size_t p = 0; p + 1 < bounds.size(); ++p)
      parts.push_back({t, texts[t].substr(bounds[p], bounds[p + 1] - bounds[p])});
  }
  const int n = static_cast<int>(parts.size());
  std::vector<std::vector<std::int32_t>> ids(parts.size());
  std::vector<std::exception_ptr> failures(parts.size());
#ifdef _OPENMP
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (n > 1 && threads > 1)
#else
  (void)threads;  // a build without OpenMP tokenizes on one thread
#endif
  for (int p = 0; p < n; ++p) {
    try {  // nothing may leave an OpenMP region
      ids[p] = tokenizer.encode(parts[p].bytes);
    } catch (...) {
      failures[p] = std::current_exception();
    }
  }
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
  std::vector<std::vector<std::int32_t>> out(texts.size());
  for (std::size_t p = 0; p < parts.size(); ++p) out[parts[p].text].insert(out[parts[p].text].end(), ids[p].begin(), ids[p].end());
  return out;
}

// Writes tokens to the token file as uint16 and counts them.
class TokenSink {
 public:
  TokenSink(const Tokenizer& tokenizer, std::ostream& out) : eot_(tokenizer.eot_token()), out_(out) {
    if (tokenizer.vocab_size() > 65536)
      throw UsageError("tokenizer '" + tokenizer.spec() + "' has " + std::to_string(tokenizer.vocab_size()) +
                       " tokens; uint16 token files hold at most 65536");
  }
  void emit(const std::vector<std::int32_t>& ids) {
    std::vector<std::uint16_t> packed(ids.begin(), ids.end());  // vocab_size <= 65536 checked above
    out_.write(reinterpret_cast<const char*>(packed.data()), static_cast<std::streamsize>(packed.size() * 2));
    tokens_ += static_cast<std::int64_t>(ids.size());
  }
  // The separator before a document: the end-of-text token, when the tokenizer has one.
  void document_start() {
    ++documents_;
    if (eot_) emit({*eot_});
  }
  std::int64_t tokens() const { return tokens_; }
  std::int64_t documents() const { return documents_; }

 private:
  std::optional<std::int32_t> eot_;
  std::ostream& out_;
  std::int64_t tokens_ = 0, documents_ = 0;
};

// The whole input is one document, read about chunk_bytes at a time and cut where safe.
std::int64_t tokenize_text(std::istream& in, const Tokenizer& tokenizer, std::int64_t chunk_bytes, TokenSink& sink,
                           int threads) {
  std::int64_t input_bytes = 0;
  sink.document_start();
  std::string pending;
  std::vector<char> block(static_cast<std::size_t>(chunk_bytes));
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    pending.append(block.data(), static_cast<std::size_t>(in.gcount()));
    input_bytes += in.gcount();
    const std::size_t cut = in ? last_safe_cut(pending) : pending.size();  // at the end: everything
    if (cut == std::string::npos || cut == 0) continue;
    sink.emit(encode_texts(tokenizer, {std::string_view(pending).substr(0, cut)}, threads)[0]);
    pending.erase(0, cut);
  }
  return input_bytes;
}

// One JSON object per line, its `text_key` string a document; documents are gathered up to
// chunk_bytes and tokenized together.
std::int64_t tokenize_jsonl(std::istream& in, const std::string& source, const Tokenizer& tokenizer,
                            const std::string& text_key, std::int64_t chunk_bytes, TokenSink& sink, int threads) {
  std::int64_t input_bytes = 0, gathered = 0, line_no = 0;
  std::vector<std::string> docs;
  const auto flush = [&] {
    const std::vector<std::string_view> views(docs.begin(), docs.end());
    for (const auto& ids : encode_texts(tokenizer, views, threads)) {
      sink.document_start();
      sink.emit(ids);
    }
    docs.clear();
    gathered = 0;
  };
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    input_bytes += static_cast<std::int64_t>(line.size()) + (in.eof() ? 0 : 1);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto where = [&] { return source + ":" + std::to_string(line_no); };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
      throw DataError(where() + ": not a JSON object (" + e.what() + ")");
    }
    const auto text = j.is_object() ? j.find(text_key) : j.end();
    if (text == j.end() || !text->is_string())
      throw DataError(where() + ": expected an object with a string \"" + text_key + "\" (text_key)");
    docs.push_back(std::move(text->get_ref<std::string&>()));
    gathered += static_cast<std::int64_t>(docs.back().size());
    if (gathered >= chunk_bytes) flush();
  }
  if (!in.bad()) flush();  // a read error is thrown by the caller
  return input_bytes;
}

// The documents of one input into the sink; returns the bytes read.
std::int64_t tokenize_stream(std::istream& in, const std::string& source, const Tokenizer& tokenizer,
                             std::int64_t chunk_bytes, TokenSink& sink, int threads, const InputFormat& format) {
  const std::int64_t bytes = format.format == "jsonl"
                                 ? tokenize_jsonl(in, source, tokenizer, format.text_key, chunk_bytes, sink, threads)
                                 : tokenize_text(in, tokenizer, chunk_bytes, sink, threads);
  if (in.bad()) throw IoError("error reading input text " + source);
  return bytes;
}

TokenFileResult finish(const TokenSink& sink, std::ostream& out, const std::string& out_name, std::int64_t input_bytes) {
  if (!out.flush()) throw IoError("cannot write token file " + out_name + " (disk full?)");
  return {input_bytes, sink.tokens(), sink.documents()};
}

}  // namespace

TokenFileResult tokenize_to_file(std::istream& in, const std::string& source, const Tokenizer& tokenizer,
                                 std::int64_t chunk_bytes, std::ostream& out, const std::string& out_name,
                                 int threads, const InputFormat& format) {
  TokenSink sink(tokenizer, out);
  const std::int64_t bytes = tokenize_stream(in, source, tokenizer, chunk_bytes, sink, threads, format);
  return finish(sink, out, out_name, bytes);
}

TokenFileResult tokenize_files_to_file(const std::vector<fs::path>& files, const Tokenizer& tokenizer,
                                       std::int64_t chunk_bytes, std::ostream& out, const std::string& out_name,
                                       int threads, const InputFormat& format) {
  TokenSink sink(tokenizer, out);
  std::int64_t bytes = 0;
  for (const auto& file : files) {
    std::ifstream in = open_input(file);
    bytes += tokenize_stream(in, file.string(), tokenizer, chunk_bytes, sink, threads, format);
  }
  return finish(sink, out, out_name, bytes);
}

std::vector<fs::path> input_folder_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && !e.path().filename().string().starts_with(".")) files.push_back(e.path());
  if (ec) throw IoError("cannot list input folder " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw DataError("input folder " + dir.string() + " holds no files to tokenize");
  return files;
}

nlohmann::json PrepareResult::to_json() const {
  return {{"tokenizer", tokenizer},       {"vocab_size", vocab_size},   {"input_bytes", input_bytes},
          {"train_tokens", train_tokens}, {"val_tokens", val_tokens},   {"train_files", train_files},
          {"val_files", val_files},       {"seconds", seconds}};
}

PrepareResult prepare(const PrepareOptions& options) {
  if (options.input.empty()) throw UsageError("prepare: input: a text file is required");
  if (options.out.empty()) throw UsageError("prepare: out: an output folder is required");
  if (!(options.val_fraction >= 0.0 && options.val_fraction <= 0.5))
    throw UsageError("prepare: val_fraction must be in [0, 0.5] (got " + std::to_string(options.val_fraction) + ")");
  if (options.shard_tokens <= 0) throw UsageError("prepare: shard_tokens must be > 0");
  if (options.chunk_bytes <= 0) throw UsageError("prepare: chunk_bytes must be > 0");
  const Timer timer;
  const auto tokenizer = make_tokenizer(options.tokenizer);
  // "-" reads standard input (`zstd -dc corpus.zst | zpp-train prepare --input - ...`): the text is
  // streamed anyway. A missing input fails before anything is created.
  // A folder: each of its files, in name order, is one input.
  const bool from_stdin = options.input == "-";
  std::error_code ec;
  const bool folder = !from_stdin && fs::is_directory(options.input, ec);
  const std::string source = from_stdin ? "standard input" : options.input;
  const std::vector<fs::path> files = folder ? input_folder_files(options.input) : std::vector<fs::path>{};
  std::ifstream file;
  if (!from_stdin && !folder) file = open_input(options.input);
  std::istream& input = from_stdin ? std::cin : file;
  const fs::path out(options.out);
  ScratchDir created_out{out, fs::exists(out, ec)};  // a folder this run creates goes again if it fails
  fs::create_directories(out, ec);
  if (ec) throw IoError("prepare: cannot create output folder " + out.string() + ": " + ec.message());
  // Pass 1 writes the tokens into a file beside the output, unlinked as soon as it is open (and read
  // back through a second descriptor): a prepare killed while tokenizing leaves nothing behind.
  const fs::path tokens_file = out / (".prepare-tokens-" + std::to_string(::getpid()) + ".u16");
  std::ofstream tokens_out(tokens_file, std::ios::binary);
  std::ifstream tokens_in(tokens_file, std::ios::binary);
  fs::remove(tokens_file, ec);
  if (!tokens_out || !tokens_in) throw IoError("prepare: cannot create token file " + tokens_file.string());
  const InputFormat format{options.format, options.text_key};
  const auto [input_bytes, n, documents] =
      folder ? tokenize_files_to_file(files, *tokenizer, options.chunk_bytes, tokens_out, tokens_file.string(),
                                      options.threads, format)
             : tokenize_to_file(input, source, *tokenizer, options.chunk_bytes, tokens_out, tokens_file.string(),
                                options.threads, format);
  tokens_out.close();
  if (!tokens_out) throw IoError("prepare: cannot write token file " + tokens_file.string() + " (disk full?)");
  const std::int64_t body = n - (tokenizer->eot_token() ? documents : 0);
  const auto n_val = static_cast<std::int64_t>(std::floor(options.val_fraction * static_cast<double>(n)));
  if (body == 0 || n - n_val < 1 || (options.val_fraction > 0 && n_val < 1))
    throw DataError("prepare: " + source + " gives " + std::to_string(n) +
                    " tokens, too few for a train split" + (options.val_fraction > 0 ? " and a val split" : "") +
                    " at val_fraction " + std::to_string(options.val_fraction));

  PrepareResult result;
  result.tokenizer = tokenizer->spec();
  result.vocab_size = tokenizer->vocab_size();
  result.input_bytes = input_bytes;
  result.train_tokens = n - n_val;
  result.val_tokens = n_val;
  // The shards are written beside the folder's earlier ones (a staging folder inside it) and replace
  // them only once all are written; prepare.json goes first and comes back last, so a failed or
  // killed prepare never leaves a prepare.json describing shards that are not all there.
  remove_abandoned_staging(out);
  const ScratchDir staging{staging_dir(out)};
  fs::remove_all(staging.path, ec);
  fs::create_directories(staging.path, ec);
  if (ec) throw IoError("prepare: cannot create " + staging.path.string() + ": " + ec.message());
  const auto train_names =
      write_split(tokens_in, tokens_file.string(), 0, n - n_val, staging.path, "train", options.shard_tokens);
  const auto val_names =
      write_split(tokens_in, tokens_file.string(), n - n_val, n_val, staging.path, "val", options.shard_tokens);
  fs::remove(out / "prepare.json", ec);
  remove_shards(out, "train");
  remove_shards(out, "val");
  result.train_files = publish(staging.path, out, train_names);
  result.val_files = publish(staging.path, out, val_names);
  result.seconds = timer.seconds();
  write_file_atomic(out / "prepare.json", result.to_json().dump(2) + "\n");
  created_out.keep = true;
  log::info("prepare: {} bytes -> {} train + {} val tokens ({}) in {:.2f} s", input_bytes, result.train_tokens,
            result.val_tokens, result.tokenizer, result.seconds);
  return result;
}

}  // namespace core::text
