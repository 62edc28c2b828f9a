// core::kernels' runtime (runtime.hpp) for kernels run on the host emulator: "device" memory is host
// memory, filled with 0xFF bytes (NaN) when allocated so that a kernel reading what nobody wrote
// shows it; copies are memcpy; the one device is the emulator. Linked instead of runtime.cpp into the
// emulated kernel tests (tests/gpu/CMakeLists.txt), whose test code is the device test's.
// It defines every function of runtime.cpp, so that runtime.cpp's archive member is never pulled into an
// emulated binary (next to these definitions) by a device source that such a binary links but does not run.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "kernels/cuda_check.cuh"
#include "kernels/device_bytes.hpp"
#include "kernels/runtime.hpp"

namespace core::kernels {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call +
                  " failed: CUDA error " + std::to_string(static_cast<int>(err)) + " (a CUDA runtime call in an emulated binary)");
}
void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: cuBLAS status " +
                  std::to_string(static_cast<int>(status)) + " (a cuBLAS call in an emulated binary)");
}

int cuda_device_count() { return 1; }
std::string cuda_device_name(int) { return "SIMT emulator on the host (tests/support/simt)"; }
std::size_t device_memory_used() { return 0; }
void synchronize() {}

namespace detail {

void* device_alloc(std::size_t bytes) {
  void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(256));
  std::memset(p, 0xFF, bytes);
  count_device_alloc(p, bytes);
  return p;
}
void device_free(void* p) noexcept {
  count_device_free(p);
  if (p) ::operator delete(p, std::align_val_t(256));
}
void copy_to_device(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void copy_to_host(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }
void device_zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
// Kernels run to completion at their launch here: a stream holds no pending work.
void copy_on_device(void* dst, const void* src, std::size_t bytes, Stream) { std::memcpy(dst, src, bytes); }
void synchronize_stream(Stream) {}
void zero_on_device(void* p, std::size_t bytes, Stream) { std::memset(p, 0, bytes); }
// Streams and events are distinct handles; every recorded event is complete (its work ran at launch), so a
// wait on one returns at once.
Stream stream_create() { return reinterpret_cast<Stream>(new char); }
void stream_destroy(Stream stream) noexcept { delete reinterpret_cast<char*>(stream); }
EventHandle event_create() { return reinterpret_cast<EventHandle>(new char); }
void event_destroy(EventHandle event) noexcept { delete reinterpret_cast<char*>(event); }
void event_record(EventHandle, Stream) {}
void stream_wait_event(Stream, EventHandle) {}

}  // namespace detail
}  // namespace core::kernels
