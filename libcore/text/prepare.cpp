// Tokenize a text file and write train/val shards (see prepare.hpp).
#include "text/prepare.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <unistd.h>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"
#include "common/timer.hpp"
#include "text/shard.hpp"
#include "text/tokenizer.hpp"

namespace core::text {
namespace fs = std::filesystem;

namespace {

std::string read_input(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputMissingError("input text " + path.string() + " is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!fs::exists(path)) throw InputMissingError("input text not found: " + path.string());
    throw IoError("cannot read input text " + path.string());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IoError("error reading input text " + path.string());
  return ss.str();
}

std::string shard_name(const std::string& split, std::size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s_%06zu.bin", split.c_str(), index);
  return buf;
}

// Writes tokens as split_000000.bin, ... into dir; returns the file names.
std::vector<std::string> write_split(const fs::path& dir, const std::string& split,
                                     std::span<const std::int32_t> tokens, std::int64_t shard_tokens) {
  std::vector<std::string> names;
  const auto per = static_cast<std::size_t>(shard_tokens);
  for (std::size_t start = 0; start < tokens.size(); start += per) {
    names.push_back(shard_name(split, names.size()));
    write_shard(dir / names.back(), tokens.subspan(start, std::min(per, tokens.size() - start)));
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

// A folder removed (with what it holds) when the scope ends.
struct ScratchDir {
  fs::path path;
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

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
  const Timer timer;
  const auto tokenizer = make_tokenizer(options.tokenizer);
  if (tokenizer->vocab_size() > 65536)
    throw UsageError("prepare: tokenizer '" + options.tokenizer + "' has " +
                     std::to_string(tokenizer->vocab_size()) + " tokens; shards hold at most 65536");
  const std::string text = read_input(options.input);

  std::vector<std::int32_t> tokens;
  if (const auto eot = tokenizer->eot_token()) tokens.push_back(*eot);
  const auto body = tokenizer->encode(text);
  tokens.insert(tokens.end(), body.begin(), body.end());

  const auto n = static_cast<std::int64_t>(tokens.size());
  const auto n_val = static_cast<std::int64_t>(std::floor(options.val_fraction * static_cast<double>(n)));
  if (body.empty() || n - n_val < 1 || (options.val_fraction > 0 && n_val < 1))
    throw DataError("prepare: " + options.input + " gives " + std::to_string(n) +
                    " tokens, too few for a train split" + (options.val_fraction > 0 ? " and a val split" : "") +
                    " at val_fraction " + std::to_string(options.val_fraction));

  const fs::path out(options.out);
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw IoError("prepare: cannot create output folder " + out.string() + ": " + ec.message());

  PrepareResult result;
  result.tokenizer = tokenizer->spec();
  result.vocab_size = tokenizer->vocab_size();
  result.input_bytes = static_cast<std::int64_t>(text.size());
  result.train_tokens = n - n_val;
  result.val_tokens = n_val;
  // The shards are written beside the folder's earlier ones (a staging folder inside it) and replace
  // them only once all are written; prepare.json goes first and comes back last, so a failed or
  // killed prepare never leaves a prepare.json describing shards that are not all there.
  const ScratchDir staging{out / (".prepare-staging-" + std::to_string(::getpid()))};
  fs::remove_all(staging.path, ec);
  fs::create_directories(staging.path, ec);
  if (ec) throw IoError("prepare: cannot create " + staging.path.string() + ": " + ec.message());
  const std::span<const std::int32_t> all(tokens);
  const auto train_names = write_split(staging.path, "train", all.first(n - n_val), options.shard_tokens);
  const auto val_names = write_split(staging.path, "val", all.subspan(n - n_val), options.shard_tokens);
  fs::remove(out / "prepare.json", ec);
  remove_shards(out, "train");
  remove_shards(out, "val");
  result.train_files = publish(staging.path, out, train_names);
  result.val_files = publish(staging.path, out, val_names);
  result.seconds = timer.seconds();
  write_file_atomic(out / "prepare.json", result.to_json().dump(2) + "\n");
  log::info("prepare: {} bytes -> {} train + {} val tokens ({}) in {:.2f} s", text.size(), result.train_tokens,
            result.val_tokens, result.tokenizer, result.seconds);
  return result;
}

}  // namespace core::text
