// Argument checks, byte accounting and timeout messages shared by every Communicator backend;
// the backends only implement the do_* transfers.
#include "comm/communicator.hpp"

#include <cstdio>
#include <functional>
#include <limits>

namespace core::comm {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::broadcast: return "broadcast";
    case Collective::barrier: return "barrier";
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
  }
  return "?";
}

std::uint64_t CommStats::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto b : bytes) total += b;
  return total;
}

std::uint64_t bytes_sent(Collective c, std::size_t count, DType dtype, int rank, int size, int root) {
  const std::uint64_t e = dtype_size(dtype);
  const std::uint64_t n = static_cast<std::uint64_t>(size);
  const std::uint64_t c64 = count;
  switch (c) {
    case Collective::broadcast: return rank == root ? (n - 1) * c64 * e : 0;
    case Collective::barrier: return 0;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (n - 1) * c64 * e;
    case Collective::all_reduce: {
      const std::uint64_t shard = c64 / n + (static_cast<std::uint64_t>(rank) < c64 % n ? 1 : 0);
      return (c64 - shard) * e + (n - 1) * shard * e;
    }
  }
  return 0;
}

namespace {

using Bytes = const unsigned char*;

Bytes as_bytes(const void* p) { return static_cast<Bytes>(p); }

bool overlap(const void* a, std::size_t a_len, const void* b, std::size_t b_len) {
  if (a_len == 0 || b_len == 0) return false;
  const std::less<Bytes> lt;
  return lt(as_bytes(a), as_bytes(b) + b_len) && lt(as_bytes(b), as_bytes(a) + a_len);
}

// count * factor elements of dtype as bytes, refusing sizes that do not fit.
std::size_t byte_len(std::size_t count, std::size_t factor, DType dtype, const char* what) {
  const std::size_t e = dtype_size(dtype);
  if (factor != 0 && count > std::numeric_limits<std::size_t>::max() / factor / e)
    throw UsageError(std::string("comm: ") + what + ": element count " + std::to_string(count) + " overflows");
  return count * factor * e;
}

void need_buffer(const void* p, std::size_t len, const char* what, const char* which) {
  if (len > 0 && p == nullptr)
    throw UsageError(std::string("comm: ") + what + ": " + which + " buffer is null");
}

// send/recv may be disjoint or send may sit exactly at recv + in_place_offset (bytes).
void check_aliasing(const void* send, std::size_t send_len, const void* recv, std::size_t recv_len,
                    std::ptrdiff_t in_place_offset, bool in_place_allowed, const char* what) {
  if (!overlap(send, send_len, recv, recv_len)) return;
  if (in_place_allowed && as_bytes(send) == as_bytes(recv) + in_place_offset) return;
  throw UsageError(std::string("comm: ") + what +
                   ": send and recv buffers overlap other than in the supported in-place layout");
}

}  // namespace

void Communicator::record(Collective c, std::size_t count, DType dtype, int root) {
  const int i = static_cast<int>(c);
  stats_.bytes[i] += bytes_sent(c, count, dtype, rank(), size(), root);
  stats_.calls[i] += 1;
}

void Communicator::set_timeout(Seconds timeout) {
  if (!(timeout.count() > 0))
    throw UsageError("comm: communicator timeout must be positive, got " + std::to_string(timeout.count()) + " s");
  timeout_ = timeout;
}

std::string Communicator::timeout_message(const char* what) const {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3g", timeout_.count());
  return std::string("comm: ") + what + " timed out on rank " + std::to_string(rank()) + " of " +
         std::to_string(size()) + " (" + backend() + " backend) after " + secs +
         " s waiting for the other ranks. Check that every rank reaches the same collective calls in "
         "the same order (a rank that crashed, threw or took another branch leaves the rest waiting); "
         "for NCCL runs set NCCL_DEBUG=INFO; raise the limit with the communicator timeout if a rank "
         "is merely slow.";
}

void Communicator::broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) {
  if (root < 0 || root >= size())
    throw UsageError("comm: broadcast: root " + std::to_string(root) + " is not a rank of a communicator of size " +
                     std::to_string(size()));
  need_buffer(buf, byte_len(count, 1, dtype, "broadcast"), "broadcast", "data");
  do_broadcast(buf, count, dtype, root, stream);
  record(Collective::broadcast, count, dtype, root);
}

void Communicator::barrier(Stream stream) {
  do_barrier(stream);
  record(Collective::barrier, 0, DType::u8);
}

void Communicator::all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                              Stream stream) {
  const std::size_t len = byte_len(count, 1, dtype, "all_reduce");
  if (op == ReduceOp::avg && !is_floating(dtype))
    throw UsageError(std::string("comm: all_reduce: avg needs f32 or bf16, got ") + dtype_name(dtype));
  need_buffer(send, len, "all_reduce", "send");
  need_buffer(recv, len, "all_reduce", "recv");
  check_aliasing(send, len, recv, len, 0, true, "all_reduce");
  do_all_reduce(send, recv, count, dtype, op, stream);
  record(Collective::all_reduce, count, dtype);
}

void Communicator::all_gather(const void* send, void* recv, std::size_t send_count, DType dtype, Stream stream) {
  const std::size_t len = byte_len(send_count, 1, dtype, "all_gather");
  const std::size_t total = byte_len(send_count, size(), dtype, "all_gather");
  need_buffer(send, len, "all_gather", "send");
  need_buffer(recv, total, "all_gather", "recv");
  check_aliasing(send, len, recv, total, static_cast<std::ptrdiff_t>(len) * rank(), true, "all_gather");
  do_all_gather(send, recv, send_count, dtype, stream);
  record(Collective::all_gather, send_count, dtype);
}

void Communicator::reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType dtype, ReduceOp op,
                                  Stream stream) {
  const std::size_t len = byte_len(recv_count, 1, dtype, "reduce_scatter");
  const std::size_t total = byte_len(recv_count, size(), dtype, "reduce_scatter");
  if (op == ReduceOp::avg && !is_floating(dtype))
    throw UsageError(std::string("comm: reduce_scatter: avg needs f32 or bf16, got ") + dtype_name(dtype));
  need_buffer(send, total, "reduce_scatter", "send");
  need_buffer(recv, len, "reduce_scatter", "recv");
  // In place: recv is block rank() of send, i.e. send sits at recv - rank*len.
  check_aliasing(send, total, recv, len, -static_cast<std::ptrdiff_t>(len) * rank(), true, "reduce_scatter");
  do_reduce_scatter(send, recv, recv_count, dtype, op, stream);
  record(Collective::reduce_scatter, recv_count, dtype);
}

void Communicator::all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  const std::size_t total = byte_len(count, size(), dtype, "all_to_all");
  need_buffer(send, total, "all_to_all", "send");
  need_buffer(recv, total, "all_to_all", "recv");
  check_aliasing(send, total, recv, total, 0, false, "all_to_all");
  do_all_to_all(send, recv, count, dtype, stream);
  record(Collective::all_to_all, count, dtype);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  auto child = do_split(color, key);
  if (child) child->set_timeout(timeout_);
  return child;
}

}  // namespace core::comm
