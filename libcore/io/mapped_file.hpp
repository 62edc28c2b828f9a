// A whole file mapped read-only into memory (mmap), for inputs larger than memory that are read in
// place: token shards, safetensors weights. Pages come from the page cache on first touch and can be
// dropped by the kernel at any time (they are clean), so the mapping costs no anonymous memory.
// A file truncated by another program while mapped would end the process with SIGBUS at the next read
// past its new end; that read instead prints an error naming the file and exits with 74 (I/O error).
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace core::io {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws InputMissingError (absent, a directory, a fifo or device, unreadable) or IoError (stat or
  // mmap failed), naming the file. Never blocks (a fifo is refused at once, not waited on).
  explicit MappedFile(const std::filesystem::path& path);
  // The file open as `fd` (left open, the caller's), `name` in messages: maps a file already unlinked.
  MappedFile(int fd, const std::string& name);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), size_}; }

 private:
  void map(int fd, const std::string& name);  // fstat (a regular file only), mmap
  void* data_ = nullptr;  // null for an empty file
  std::size_t size_ = 0;
};

}  // namespace core::io
