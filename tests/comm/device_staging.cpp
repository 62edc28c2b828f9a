// Buffers staged through copies in the inner communicator's memory (see device_staging.hpp).
#include "device_staging.hpp"

#include <vector>

#include "kernels/runtime.hpp"

namespace core::comm::test {

namespace {

using Byte = unsigned char;

// A copy, in the inner communicator's memory, of `bytes` of the caller's (or uninitialised when src is null).
class Stage {
 public:
  Stage(Staging staging, const void* src, std::size_t bytes) : to_device_(staging == Staging::host_to_device) {
    if (to_device_) device_ = kernels::DeviceBuffer<Byte>(bytes);
    else host_.resize(bytes);
    if (src && bytes) {
      if (to_device_) kernels::detail::copy_to_device(data(), src, bytes);
      else kernels::detail::copy_to_host(data(), src, bytes);
    }
  }
  Byte* data() { return to_device_ ? device_.data() : host_.data(); }
  // The first `bytes` back into the caller's memory at dst.
  void fetch(void* dst, const Byte* from, std::size_t bytes) const {
    if (!bytes) return;
    if (to_device_) kernels::detail::copy_to_host(dst, from, bytes);
    else kernels::detail::copy_to_device(dst, from, bytes);
  }

 private:
  bool to_device_;
  kernels::DeviceBuffer<Byte> device_;
  std::vector<Byte> host_;
};

}  // namespace

void DeviceStaged::do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype);
  Stage d(staging_, buf, bytes);
  inner_->broadcast(d.data(), count, dtype, root, stream);
  d.fetch(buf, d.data(), bytes);
}

void DeviceStaged::do_barrier(Stream stream) { inner_->barrier(stream); }

void DeviceStaged::do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                 Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype);
  Stage ds(staging_, send, bytes), dr(staging_, nullptr, send == recv ? 0 : bytes);
  Byte* out = send == recv ? ds.data() : dr.data();
  inner_->all_reduce(ds.data(), out, count, dtype, op, stream);
  ds.fetch(recv, out, bytes);
}

void DeviceStaged::do_all_gather(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype), offset = bytes * rank();
  const bool in_place = send == static_cast<const Byte*>(recv) + offset;
  Stage dr(staging_, in_place ? recv : nullptr, bytes * size());
  Stage ds(staging_, in_place ? nullptr : send, in_place ? 0 : bytes);
  inner_->all_gather(in_place ? dr.data() + offset : ds.data(), dr.data(), count, dtype, stream);
  dr.fetch(recv, dr.data(), bytes * size());
}

void DeviceStaged::do_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                     Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype), offset = bytes * rank();
  const bool in_place = recv == static_cast<const Byte*>(send) + offset;
  Stage ds(staging_, send, bytes * size()), dr(staging_, nullptr, in_place ? 0 : bytes);
  Byte* out = in_place ? ds.data() + offset : dr.data();
  inner_->reduce_scatter(ds.data(), out, count, dtype, op, stream);
  ds.fetch(recv, out, bytes);
}

void DeviceStaged::do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  const std::size_t total = count * dtype_size(dtype) * size();
  Stage ds(staging_, send, total), dr(staging_, nullptr, total);
  inner_->all_to_all(ds.data(), dr.data(), count, dtype, stream);
  dr.fetch(recv, dr.data(), total);
}

std::unique_ptr<Communicator> DeviceStaged::do_split(int color, int key) {
  auto child = inner_->split(color, key);
  return child ? std::make_unique<DeviceStaged>(std::move(child), staging_) : nullptr;
}

}  // namespace core::comm::test
