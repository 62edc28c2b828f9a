// One array of a CSR graph: either its own std::vector, or a view of a memory-mapped cache file
// (graph_io.hpp) kept alive by a shared handle, with the read interface of a vector. A mapped view is
// private copy-on-write memory, so writing through it never changes the file. Copies are owned deep
// copies (a graph copied from a mapped cache can be edited alone); moves keep the mapping.
#pragma once
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace core::graph {

template <class T>
class CsrArray {
 public:
  CsrArray() = default;
  CsrArray(std::initializer_list<T> values) : own_(values) { point_at_own(); }
  CsrArray(std::vector<T> values) : own_(std::move(values)) { point_at_own(); }  // NOLINT: builders assign vectors
  // A view of `size` elements at `data`, valid while `keep` lives.
  static CsrArray view(T* data, std::size_t size, std::shared_ptr<const void> keep) {
    CsrArray a;
    a.data_ = data;
    a.size_ = size;
    a.keep_ = std::move(keep);
    return a;
  }

  CsrArray(const CsrArray& o) : own_(o.begin(), o.end()) { point_at_own(); }
  CsrArray(CsrArray&& o) noexcept { take(std::move(o)); }
  CsrArray& operator=(const CsrArray& o) { return *this = CsrArray(o); }
  CsrArray& operator=(CsrArray&& o) noexcept {
    if (this != &o) take(std::move(o));
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool mapped() const { return keep_ != nullptr; }
  // Elements its own allocation has room for (a mapped view: its size).
  std::size_t capacity() const { return mapped() ? size_ : own_.capacity(); }
  const T* data() const { return data_; }
  T* data() { return data_; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }

  // The elements as a vector (its own, moved out; a mapped view's, copied), leaving the array empty: a builder
  // that makes many small graphs reuses their allocations.
  std::vector<T> release() {
    std::vector<T> out = mapped() ? std::vector<T>(begin(), end()) : std::move(own_);
    own_.clear();
    point_at_own();
    return out;
  }

  friend bool operator==(const CsrArray& a, const CsrArray& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

 private:
  void point_at_own() {
    data_ = own_.data();
    size_ = own_.size();
    keep_.reset();
  }
  void take(CsrArray&& o) {
    own_ = std::move(o.own_);
    keep_ = std::move(o.keep_);
    data_ = keep_ ? o.data_ : own_.data();
    size_ = o.size_;
    o.point_at_own();
  }

  std::vector<T> own_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::shared_ptr<const void> keep_;
};

}  // namespace core::graph
