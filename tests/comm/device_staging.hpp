// A Communicator whose collectives take host buffers and run another communicator's on device copies of
// them (upload, the device backend's collective, download), keeping the in-place layouts in place, so that
// the backend-independent checks (collective_checks.hpp) drive the device backends (NCCL, shared GPU)
// unchanged; or the other way round (Staging::device_to_host): device buffers through host copies for a
// host backend, so that the CPU thread backend drives the device ZeRO engine. Uses core::kernels' runtime
// (the device's, or the SIMT emulator's host memory).
#pragma once
#include <memory>

#include "comm/communicator.hpp"

namespace core::comm::test {

// Where the caller's buffers live -> where the inner communicator's do.
enum class Staging { host_to_device, device_to_host };

class DeviceStaged final : public Communicator {
 public:
  explicit DeviceStaged(std::unique_ptr<Communicator> inner, Staging staging = Staging::host_to_device)
      : inner_(std::move(inner)), staging_(staging) {}
  Communicator& inner() { return *inner_; }
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* backend() const override { return inner_->backend(); }

 protected:
  void do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) override;
  void do_barrier(Stream stream) override;
  void do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                     Stream stream) override;
  void do_all_gather(const void* send, void* recv, std::size_t send_count, DType dtype, Stream stream) override;
  void do_reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType dtype, ReduceOp op,
                         Stream stream) override;
  void do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) override;
  std::unique_ptr<Communicator> do_split(int color, int key) override;

 private:
  std::unique_ptr<Communicator> inner_;
  Staging staging_;
};

}  // namespace core::comm::test
