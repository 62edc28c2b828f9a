// llm.c token shard reader (a read-only mapping) and writer (layout in shard.hpp).
#include "text/shard.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "common/errors.hpp"
#include "common/rundir.hpp"

namespace core::text {
namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little, "shards are little-endian; add byte swaps");

namespace {

// Validates the header of a shard of `file` bytes; returns the token count.
std::int64_t check_header(std::span<const std::byte> file, const fs::path& path) {
  const std::string where = "token shard " + path.string() + ": ";
  const std::uint64_t size = file.size();
  if (size < kShardHeaderBytes)
    throw DataError(where + "truncated: " + std::to_string(size) + " bytes, shorter than the " +
                    std::to_string(kShardHeaderBytes) + "-byte header");
  std::array<std::int32_t, kShardHeaderInts> header{};
  std::memcpy(header.data(), file.data(), kShardHeaderBytes);
  if (header[0] != kShardMagic)
    throw DataError(where + "bad magic " + std::to_string(header[0]) + " (expected " +
                    std::to_string(kShardMagic) + "): not an llm.c token shard");
  if (header[1] != kShardVersion)
    throw DataError(where + "unsupported version " + std::to_string(header[1]) + " (expected " +
                    std::to_string(kShardVersion) + ")");
  const std::int64_t count = header[2];
  const auto expected = kShardHeaderBytes + 2 * static_cast<std::uint64_t>(count < 0 ? 0 : count);
  if (count < 0 || size != expected)
    throw DataError(where + "header says " + std::to_string(count) + " tokens (" + std::to_string(expected) +
                    " bytes) but the file has " + std::to_string(size) + " bytes" +
                    (size < expected ? " (truncated)" : ""));
  return count;
}

}  // namespace

ShardWriter::ShardWriter(const fs::path& path, std::int64_t count) : path_(path), count_(count), file_(path) {
  if (count < 0 || count > std::numeric_limits<std::int32_t>::max())
    throw DataError("token shard " + path.string() + ": " + std::to_string(count) +
                    " tokens exceed the format's int32 count");
  std::array<std::int32_t, kShardHeaderInts> header{};
  header[0] = kShardMagic;
  header[1] = kShardVersion;
  header[2] = static_cast<std::int32_t>(count);
  file_.stream().write(reinterpret_cast<const char*>(header.data()), kShardHeaderBytes);
}

void ShardWriter::append(std::span<const std::uint16_t> tokens) {
  file_.stream().write(reinterpret_cast<const char*>(tokens.data()),
                       static_cast<std::streamsize>(tokens.size() * sizeof(std::uint16_t)));
  written_ += static_cast<std::int64_t>(tokens.size());
}

void ShardWriter::commit() {
  if (written_ != count_)
    throw Error(ExitCode::internal, "token shard " + path_.string() + ": " + std::to_string(written_) +
                                        " tokens written, the header says " + std::to_string(count_));
  file_.commit();
}

void write_shard(const fs::path& path, std::span<const std::int32_t> tokens) {
  std::vector<std::uint16_t> packed(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > 0xFFFF)
      throw DataError("token shard " + path.string() + ": token " + std::to_string(tokens[i]) + " at index " +
                      std::to_string(i) + " does not fit in uint16");
    packed[i] = static_cast<std::uint16_t>(tokens[i]);
  }
  ShardWriter w(path, static_cast<std::int64_t>(tokens.size()));
  w.append(packed);
  w.commit();
}

MappedShard::MappedShard(const fs::path& path) : path_(path), file_(path) {
  const std::int64_t count = check_header(file_.bytes(), path);
  tokens_ = {reinterpret_cast<const std::uint16_t*>(file_.bytes().data() + kShardHeaderBytes),
             static_cast<std::size_t>(count)};
}

std::int64_t read_shard_header(const fs::path& path) {
  return static_cast<std::int64_t>(MappedShard(path).tokens().size());
}

std::vector<std::uint16_t> read_shard(const fs::path& path) {
  const MappedShard shard(path);
  return {shard.tokens().begin(), shard.tokens().end()};
}

}  // namespace core::text
