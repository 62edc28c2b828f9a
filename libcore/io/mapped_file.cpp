// MappedFile (mapped_file.hpp): open (not waiting on a fifo), fstat (a regular file only), mmap(PROT_READ, MAP_PRIVATE), close; munmap on destruction.
// A file truncated while mapped makes a read past its new end raise SIGBUS; a handler turns that into
// a message naming the file and exit 74 (the registry below maps fault addresses to file names).
#include "io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>

#include "common/errors.hpp"
#include "io/input.hpp"

namespace core::io {
namespace {

// The live mappings, read by the SIGBUS handler (so: fixed storage, atomics, no locks there). A slot
// is free while `begin` is 0; a mapping beyond the slots is simply not named (the fault then keeps
// its default action).
struct MappedRegion {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  char name[480] = {};
};
constexpr std::size_t kMaxRegions = 1024;
MappedRegion g_regions[kMaxRegions];
std::mutex g_regions_mutex;  // between threads mapping and unmapping; the handler does not take it
struct sigaction g_previous_sigbus {};

void write_stderr(const char* text) {
  for (std::size_t left = std::strlen(text); left > 0;) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n, left -= static_cast<std::size_t>(n);
  }
}

void on_sigbus(int signal, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const MappedRegion& region : g_regions) {
    const std::uintptr_t begin = region.begin.load(std::memory_order_acquire);
    if (begin != 0 && address >= begin && address < region.end.load(std::memory_order_relaxed)) {
      write_stderr("[error] ");
      write_stderr(region.name);
      write_stderr(": the file shrank while it was being read (truncated or rewritten in place by another "
                   "program); write a changed input to a new file and rename it over the old one\n");
      ::_exit(static_cast<int>(ExitCode::io));
    }
  }
  // Not a mapped file: the previous action (for a fault, returning re-runs the faulting access).
  ::sigaction(SIGBUS, &g_previous_sigbus, nullptr);
  if (info->si_code <= 0) ::raise(signal);  // sent by kill or raise: deliver it again
}

void install_sigbus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_sigbus);
  });
}

void register_region(const void* data, std::size_t size, const std::string& name) {
  install_sigbus_handler();
  const std::lock_guard lock(g_regions_mutex);
  for (MappedRegion& region : g_regions) {
    if (region.begin.load(std::memory_order_relaxed) != 0) continue;
    const std::size_t n = std::min(name.size(), sizeof region.name - 1);
    std::memcpy(region.name, name.data(), n);
    region.name[n] = '\0';
    region.end.store(reinterpret_cast<std::uintptr_t>(data) + size, std::memory_order_relaxed);
    region.begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_release);
    return;
  }
}

void unregister_region(const void* data) {
  const std::lock_guard lock(g_regions_mutex);
  for (MappedRegion& region : g_regions)
    if (region.begin.load(std::memory_order_relaxed) == reinterpret_cast<std::uintptr_t>(data))
      return region.begin.store(0, std::memory_order_release);
}

void unmap(void* data, std::size_t size) {
  if (!data) return;
  unregister_region(data);
  ::munmap(data, size);
}

}  // namespace

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
  register_region(data_, size_, name);
}

MappedFile::~MappedFile() { unmap(data_, size_); }

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    unmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

}  // namespace core::io
