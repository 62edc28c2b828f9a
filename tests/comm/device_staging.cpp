// Host buffers staged through device copies for a device communicator (see device_staging.hpp).
#include "device_staging.hpp"

#include "kernels/runtime.hpp"

namespace core::comm::test {

namespace {

using Byte = unsigned char;

// A device copy of `bytes` host bytes (or uninitialised device memory when host is null).
kernels::DeviceBuffer<Byte> staged(const void* host, std::size_t bytes) {
  kernels::DeviceBuffer<Byte> d(bytes);
  if (host && bytes) kernels::detail::copy_to_device(d.data(), host, bytes);
  return d;
}

void fetch(void* host, const Byte* device, std::size_t bytes) {
  if (bytes) kernels::detail::copy_to_host(host, device, bytes);
}

}  // namespace

void DeviceStaged::do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype);
  auto d = staged(buf, bytes);
  inner_->broadcast(d.data(), count, dtype, root, stream);
  fetch(buf, d.data(), bytes);
}

void DeviceStaged::do_barrier(Stream stream) { inner_->barrier(stream); }

void DeviceStaged::do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                 Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype);
  auto ds = staged(send, bytes);
  auto dr = staged(nullptr, send == recv ? 0 : bytes);
  Byte* out = send == recv ? ds.data() : dr.data();
  inner_->all_reduce(ds.data(), out, count, dtype, op, stream);
  fetch(recv, out, bytes);
}

void DeviceStaged::do_all_gather(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype), offset = bytes * rank();
  const bool in_place = send == static_cast<const Byte*>(recv) + offset;
  auto dr = staged(in_place ? recv : nullptr, bytes * size());
  auto ds = staged(in_place ? nullptr : send, in_place ? 0 : bytes);
  inner_->all_gather(in_place ? dr.data() + offset : ds.data(), dr.data(), count, dtype, stream);
  fetch(recv, dr.data(), bytes * size());
}

void DeviceStaged::do_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                     Stream stream) {
  const std::size_t bytes = count * dtype_size(dtype), offset = bytes * rank();
  const bool in_place = recv == static_cast<const Byte*>(send) + offset;
  auto ds = staged(send, bytes * size());
  auto dr = staged(nullptr, in_place ? 0 : bytes);
  Byte* out = in_place ? ds.data() + offset : dr.data();
  inner_->reduce_scatter(ds.data(), out, count, dtype, op, stream);
  fetch(recv, out, bytes);
}

void DeviceStaged::do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  const std::size_t total = count * dtype_size(dtype) * size();
  auto ds = staged(send, total);
  auto dr = staged(nullptr, total);
  inner_->all_to_all(ds.data(), dr.data(), count, dtype, stream);
  fetch(recv, dr.data(), total);
}

std::unique_ptr<Communicator> DeviceStaged::do_split(int color, int key) {
  auto child = inner_->split(color, key);
  return child ? std::make_unique<DeviceStaged>(std::move(child)) : nullptr;
}

}  // namespace core::comm::test
