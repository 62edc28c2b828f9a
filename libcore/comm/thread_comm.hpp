// In-process backend: n communicators sharing one state, each used from its own thread. Used by
// the tests and by tools that run several "ranks" on one machine. Collectives are a rendezvous
// of all ranks followed by direct copies/reductions between their buffers (reductions combine
// ranks in rank order, so results are bit-reproducible). The copies and reductions go through a
// BufferOps: host memory by default (memcpy, reduce_buffers), device memory of one GPU shared by
// the ranks with shared_gpu_comm.hpp's.
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.hpp"

namespace core::comm {

// How a group's ranks move and combine each other's buffers. A rank calls ready() on its stream before
// it publishes its buffers (its earlier work on them is done), then copy / reduce on its stream, then
// ready() again before the next rendezvous (its peers may reuse the buffers it read).
class BufferOps {
 public:
  virtual ~BufferOps() = default;
  virtual const char* backend() const = 0;
  virtual void ready(Stream stream) const = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes, Stream stream) const = 0;
  // reduce_buffers' meaning: out = op over inputs in input order.
  virtual void reduce(std::span<const void* const> inputs, void* out, std::size_t count, DType dtype, ReduceOp op,
                      int divisor, Stream stream) const = 0;
};

// The host buffers' BufferOps of the thread backend (backend() "thread").
std::shared_ptr<const BufferOps> host_buffer_ops();

// n >= 1 communicators of one group; element r is rank r.
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(
    int n, std::shared_ptr<const BufferOps> ops = host_buffer_ops());

// Runs fn(comm) for n ranks on n threads and joins them. When a rank throws, the group is aborted
// (the other ranks' pending and later collectives throw CommError at once instead of waiting for
// the timeout) and the first exception is rethrown here.
void run_thread_ranks(int n, const std::function<void(Communicator&)>& fn,
                      Seconds timeout = kDefaultCommTimeout, std::shared_ptr<const BufferOps> ops = host_buffer_ops());

}  // namespace core::comm
