// Token shards in llm.c's layout, so shards written by either tool load in both: a header of 256
// little-endian int32 (magic 20240520, version 1, token count, the rest zero), then the tokens as
// little-endian uint16 (so vocabularies up to 65536 tokens).
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "common/rundir.hpp"
#include "io/mapped_file.hpp"

namespace core::text {

inline constexpr std::int32_t kShardMagic = 20240520;
inline constexpr std::int32_t kShardVersion = 1;
inline constexpr std::size_t kShardHeaderInts = 256;
inline constexpr std::size_t kShardHeaderBytes = kShardHeaderInts * sizeof(std::int32_t);

// Writes a shard of `count` tokens piece by piece (memory of one piece), atomically: the file appears
// at commit(), which checks that exactly `count` tokens came. Throws DataError for a count above
// 2^31 - 1, IoError when the file cannot be written.
class ShardWriter {
 public:
  ShardWriter(const std::filesystem::path& path, std::int64_t count);
  void append(std::span<const std::uint16_t> tokens);
  void commit();

 private:
  std::filesystem::path path_;
  std::int64_t count_, written_ = 0;
  AtomicFile file_;
};

// Writes a whole shard with ShardWriter (same errors, and DataError for a token outside [0, 65535]).
void write_shard(const std::filesystem::path& path, std::span<const std::int32_t> tokens);

// A shard mapped read-only (io::MappedFile), its header checked against the file size: the tokens
// are read in place, so a set of shards larger than memory loads. InputMissingError when the file is
// absent or unreadable; DataError naming the file for a bad magic or version, a negative count, or a
// size that is not header + 2 * count bytes (truncated or trailing data).
class MappedShard {
 public:
  explicit MappedShard(const std::filesystem::path& path);
  const std::filesystem::path& path() const { return path_; }
  std::span<const std::uint16_t> tokens() const { return tokens_; }

 private:
  std::filesystem::path path_;
  io::MappedFile file_;
  std::span<const std::uint16_t> tokens_;
};

// The token count of a shard, and a copy of its tokens (the checks and errors of MappedShard).
std::int64_t read_shard_header(const std::filesystem::path& path);
std::vector<std::uint16_t> read_shard(const std::filesystem::path& path);

}  // namespace core::text
