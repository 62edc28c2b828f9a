// MappedFile (mapped_file.hpp): open (not waiting on a fifo), fstat (a regular file only), mmap(PROT_READ, MAP_PRIVATE), close; munmap on destruction.
#include "io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/errors.hpp"
#include "io/input.hpp"

namespace core::io {

MappedFile::MappedFile(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a fifo must not wait for a writer (it is refused below); nothing is read from fd.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    (void)open_input(path);  // the conventions' errors for a missing or unreadable input
    throw InputMissingError(path.string() + ": cannot open: " + std::strerror(err));
  }
  try {
    map(fd, path.string());
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);  // the mapping stays
}

MappedFile::MappedFile(int fd, const std::string& name) { map(fd, name); }

void MappedFile::map(int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw IoError(name + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw InputMissingError(name + (S_ISDIR(st.st_mode) ? ": is a directory, not a file"
                                                        : ": not a regular file (a fifo, socket or device)"));
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) return;
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) throw IoError(name + ": mmap failed: " + std::strerror(errno));
  data_ = p;
  size_ = size;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace core::io
