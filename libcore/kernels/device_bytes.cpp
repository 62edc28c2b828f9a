// Per-account counting of device allocations (see device_bytes.hpp).
#include "kernels/device_bytes.hpp"

#include <mutex>
#include <unordered_map>
#include <utility>

namespace core::kernels {
namespace {

thread_local DeviceBytes* bound_account = nullptr;

// The counted allocations: pointer -> (account, bytes). `counted` lets a free skip the lock while none is.
std::mutex counted_mu;
std::unordered_map<void*, std::pair<DeviceBytes*, std::size_t>>& counted_allocations() {
  static std::unordered_map<void*, std::pair<DeviceBytes*, std::size_t>> m;
  return m;
}
std::atomic<std::size_t> counted{0};

}  // namespace

DeviceBytes* DeviceBytes::current() { return bound_account; }

DeviceBytes::Bind::Bind(DeviceBytes* account) : previous_(bound_account) { bound_account = account; }
DeviceBytes::Bind::~Bind() { bound_account = previous_; }

void DeviceBytes::add(std::size_t bytes) {
  const std::size_t now = live_.fetch_add(bytes) + bytes;
  std::size_t high = peak_.load();
  while (now > high && !peak_.compare_exchange_weak(high, now)) {
  }
}

namespace detail {

void count_device_alloc(void* p, std::size_t bytes) {
  DeviceBytes* account = bound_account;
  if (!account || !p) return;
  {
    std::lock_guard lock(counted_mu);
    counted_allocations()[p] = {account, bytes};
  }
  ++counted;
  account->add(bytes);
}

void count_device_free(void* p) noexcept {
  if (!p || counted.load() == 0) return;
  std::lock_guard lock(counted_mu);
  auto& m = counted_allocations();
  const auto it = m.find(p);
  if (it == m.end()) return;
  it->second.first->remove(it->second.second);
  m.erase(it);
  --counted;
}

}  // namespace detail
}  // namespace core::kernels
