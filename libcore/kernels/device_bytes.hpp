// Per-account counting of device memory: every allocation of the kernels runtime (detail::device_alloc,
// so every DeviceBuffer) made by a thread that has an account bound (DeviceBytes::Bind) adds its bytes
// to that account, and its free (on any thread) takes them off again; the account keeps the live bytes
// and their high-water mark. A data-parallel rank binds one account on its thread (and its communication
// thread) to measure the device bytes it holds, whichever threads share the device. Allocations of a
// thread without an account are not counted. Host code only (available without CUDA too).
#pragma once
#include <atomic>
#include <cstddef>

namespace core::kernels {

class DeviceBytes {
 public:
  DeviceBytes() = default;
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  std::size_t live() const { return live_.load(); }
  std::size_t peak() const { return peak_.load(); }  // the most bytes live at once since the last reset_peak()
  void reset_peak() { peak_.store(live_.load()); }

  // The account the calling thread's allocations go to (null: none), and a scope that binds one (null:
  // none) to it, restoring the previous one at its end. The account must outlive the buffers it counts.
  static DeviceBytes* current();
  class Bind {
   public:
    explicit Bind(DeviceBytes* account);
    ~Bind();
    Bind(const Bind&) = delete;
    Bind& operator=(const Bind&) = delete;

   private:
    DeviceBytes* previous_;
  };

  void add(std::size_t bytes);
  void remove(std::size_t bytes) { live_.fetch_sub(bytes); }

 private:
  std::atomic<std::size_t> live_{0}, peak_{0};
};

namespace detail {
// Called by the runtime (real and emulated) for every allocation and free.
void count_device_alloc(void* p, std::size_t bytes);
void count_device_free(void* p) noexcept;
}  // namespace detail

}  // namespace core::kernels
