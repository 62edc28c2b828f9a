// Mapped memory for PopulatedVector (see populated.hpp): own huge-page mappings from 1 MiB, a pool of
// 64 KiB blocks in 2 MiB huge pages below that.
#include "graph/populated.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace core::graph::populated_detail {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kBlock = kPoolBytes;

std::size_t round_up(std::size_t bytes, std::size_t unit) { return (bytes + unit - 1) / unit * unit; }

// A kHugePage-aligned mapping of round_up(bytes, kHugePage), advised and populated: mapped one huge page
// longer, the ends trimmed.
void* map_huge(std::size_t bytes) {
  const std::size_t len = round_up(bytes, kHugePage);
  void* p = ::mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = round_up(base, kHugePage);
  if (aligned > base) ::munmap(p, aligned - base);
  if (const std::uintptr_t tail = base + kHugePage - aligned) ::munmap(reinterpret_cast<void*>(aligned + len), tail);
  void* a = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  ::madvise(a, len, MADV_HUGEPAGE);
#endif
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels refuse it (EINVAL): pages fault lazily
#endif
  ::madvise(a, len, MADV_POPULATE_WRITE);
  return a;
}

// Blocks carved from huge pages in order; released blocks are kept by length and reused by the smallest
// fit (split when longer). Nothing is unmapped: the pool is as large as the most ever used at once.
class Pool {
 public:
  void* take(std::size_t len) {
    std::lock_guard lock(mu_);
    if (auto it = free_.lower_bound(len); it != free_.end()) {
      const auto [have, p] = *it;
      free_.erase(it);
      if (have > len) free_.emplace(have - len, static_cast<char*>(p) + len);
      return p;
    }
    if (static_cast<std::size_t>(end_ - next_) < len) add_page();
    void* p = next_;
    next_ += len;
    return p;
  }
  void reserve() {
    std::lock_guard lock(mu_);
    if (end_ == next_ && free_.empty()) add_page();
  }
  void give(void* p, std::size_t len) {
    std::lock_guard lock(mu_);
    free_.emplace(len, p);
  }
  std::size_t mapped() {
    std::lock_guard lock(mu_);
    return mapped_;
  }

 private:
  // A fresh huge page to carve from (mu_ held); the old one's rest is kept as a free block.
  void add_page() {
    if (end_ > next_) free_.emplace(end_ - next_, next_);
    next_ = static_cast<char*>(map_huge(kHugePage));
    end_ = next_ + kHugePage;
    mapped_ += kHugePage;
  }

  std::mutex mu_;
  std::multimap<std::size_t, void*> free_;
  char* next_ = nullptr;
  char* end_ = nullptr;
  std::size_t mapped_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: vectors may be released during static destruction
  return *p;
}

}  // namespace

void* allocate(std::size_t bytes) {
  if (bytes >= kOwnMapBytes) return map_huge(bytes);
  return pool().take(round_up(bytes, kBlock));
}

void release(void* p, std::size_t bytes) {
  if (bytes >= kOwnMapBytes) ::munmap(p, round_up(bytes, kHugePage));
  else pool().give(p, round_up(bytes, kBlock));
}

std::size_t pool_mapped_bytes() { return pool().mapped(); }

void reserve_pool_page() { pool().reserve(); }

}  // namespace core::graph::populated_detail
