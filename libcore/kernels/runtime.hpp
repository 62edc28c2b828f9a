// CUDA runtime pieces the host code needs, without CUDA headers: device discovery, a move-only
// device buffer, the cuBLAS/cuBLASLt handle pair, and the error type every checked CUDA call throws.
// Only available when the build has CUDA (TOOLKIT_HAVE_CUDA is defined for users of core::kernels).
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"

struct CUstream_st;
struct CUevent_st;

namespace core::kernels {

using Stream = CUstream_st*;       // cudaStream_t; nullptr is the legacy default stream
using EventHandle = CUevent_st*;  // cudaEvent_t

// A failed CUDA / cuBLAS call: "file:line: call failed: error name (description). hint: ...".
struct CudaError : Error {
  explicit CudaError(const std::string& what) : Error(ExitCode::internal, what) {}
};

// Number of CUDA devices that answer; 0 when the driver is missing or reports none (never throws).
int cuda_device_count();
// "NVIDIA H200 (sm_90, 139.8 GiB)" for a device.
std::string cuda_device_name(int device = 0);
// Bytes of the current device in use by every process and context (cudaMemGetInfo: total - free).
std::size_t device_memory_used();
void synchronize();  // waits for the device; throws CudaError for a failure of earlier asynchronous work

namespace detail {
void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, std::size_t bytes);
void copy_to_host(void* dst, const void* src, std::size_t bytes);
void device_zero(void* p, std::size_t bytes);
// Device to device, in stream order (returns at once); synchronize_stream waits for the stream's work.
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream stream);
void synchronize_stream(Stream stream);
void zero_on_device(void* p, std::size_t bytes, Stream stream);  // in stream order
// A stream that does not synchronise with the legacy default stream (cudaStreamNonBlocking), and events
// (timing disabled): event_record marks the work issued to a stream so far, stream_wait_event makes the
// work issued to a stream afterwards wait for it.
Stream stream_create();
void stream_destroy(Stream stream) noexcept;
EventHandle event_create();
void event_destroy(EventHandle event) noexcept;
void event_record(EventHandle event, Stream stream);
void stream_wait_event(Stream stream, EventHandle event);
}  // namespace detail

// An owned stream beside the legacy default stream (detail::stream_create).
class OwnedStream {
 public:
  OwnedStream() : s_(detail::stream_create()) {}
  ~OwnedStream() { detail::stream_destroy(s_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  Stream get() const { return s_; }

 private:
  Stream s_;
};

// An owned event: record(a) then wait(b) orders the work issued to b afterwards after the work issued to a
// before the record.
class Event {
 public:
  Event() : e_(detail::event_create()) {}
  ~Event() { detail::event_destroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(Stream stream) { detail::event_record(e_, stream); }
  void wait(Stream stream) const { detail::stream_wait_event(stream, e_); }

 private:
  EventHandle e_;
};

// Owns n elements of device memory (uninitialised until zero() or upload()).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : data_(static_cast<T*>(detail::device_alloc(n * sizeof(T)))), size_(n) {}
  explicit DeviceBuffer(std::span<const T> host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { detail::device_free(data_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

  // Synchronous copies (the whole buffer); sizes must match.
  void upload(std::span<const T> host) {
    check_size(host.size());
    detail::copy_to_device(data_, host.data(), bytes());
  }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    detail::copy_to_host(host.data(), data_, bytes());
    return host;
  }
  void zero() { detail::device_zero(data_, bytes()); }

 private:
  void check_size(std::size_t n) const {
    if (n != size_)
      throw Error(ExitCode::internal, "DeviceBuffer: copy of " + std::to_string(n) + " elements into a buffer of " +
                                          std::to_string(size_));
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// cuBLAS and cuBLASLt handles plus the cuBLASLt workspace (32 MiB), bound to the current device.
class Blas {
 public:
  Blas();
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace core::kernels
