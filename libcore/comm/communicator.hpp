// The collective-communication interface of the toolkit, shaped after NCCL so a GPU backend can
// implement it unchanged: buffers are raw pointers + element count + DType, every collective
// takes an optional opaque stream (void*, ignored by the CPU backends), ranks are ordered,
// all_gather's output and reduce_scatter's input are rank-major (block r belongs to rank r).
// Backends: thread_comm.hpp (in-process threads), mpi_comm.hpp (MPI), NCCL later.
//
// In-place use (as in NCCL): all_reduce with send == recv; all_gather with
// send == recv + rank*send_count; reduce_scatter with recv == send + rank*recv_count; broadcast is
// always in place. Any other overlap of send and recv is a UsageError; all_to_all is never in place.
//
// Byte accounting: each call adds the bytes THIS rank transmits in the direct (point-to-point)
// algorithm, with e = dtype_size, n = size(), independent of how the backend really moves data:
//   broadcast(count c, root)   root: (n-1)*c*e, others 0
//   barrier                    0 (only the call is counted)
//   all_gather(send_count c)   (n-1)*c*e        (own block to every peer)
//   reduce_scatter(recv c)     (n-1)*c*e        (block q to rank q)
//   all_to_all(c per rank)     (n-1)*c*e
//   all_reduce(count c)        (c - c_r)*e + (n-1)*c_r*e, c_r = c/n + (r < c%n ? 1 : 0): the
//                              reduce-scatter of shards followed by the all-gather of shard r.
// Summed over ranks: all_reduce 2(n-1)c e, the others (n-1)c e per rank — the volumes of ring
// algorithms, so ZeRO/ZeRO++ volumes can be read off directly.
//
// Every blocking call gives up after timeout() (default 300 s) with CommTimeoutError naming the
// collective, the rank and the wait; the communicator is unusable afterwards.
#pragma once
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/errors.hpp"
#include "comm/dtype.hpp"

namespace core::comm {

enum class Collective : int { broadcast, barrier, all_reduce, all_gather, reduce_scatter, all_to_all };
inline constexpr int kCollectiveCount = 6;
const char* collective_name(Collective c);

using Stream = void*;  // cudaStream_t for NCCL; ignored by the CPU backends
using Seconds = std::chrono::duration<double>;
inline constexpr Seconds kDefaultCommTimeout{300.0};

// A collective failed: ranks disagree on the call, the backend reported an error, or the group
// was aborted. Exit code 1 (internal): a mismatched or hung collective is a bug or a dead peer.
struct CommError : Error {
  explicit CommError(const std::string& what) : Error(ExitCode::internal, what) {}
};
struct CommTimeoutError : CommError {
  using CommError::CommError;
};

struct CommStats {
  std::array<std::uint64_t, kCollectiveCount> bytes{};  // bytes sent, per collective
  std::array<std::uint64_t, kCollectiveCount> calls{};
  std::uint64_t bytes_of(Collective c) const { return bytes[static_cast<int>(c)]; }
  std::uint64_t calls_of(Collective c) const { return calls[static_cast<int>(c)]; }
  std::uint64_t total_bytes() const;
};

// The bytes rank `rank` of `size` sends for one call, by the formula above. `count` is the
// argument of the call (send_count, recv_count, count per rank).
std::uint64_t bytes_sent(Collective c, std::size_t count, DType dtype, int rank, int size, int root = 0);

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;

  void broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream = nullptr);
  void barrier(Stream stream = nullptr);
  void all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                  Stream stream = nullptr);
  // recv holds size()*send_count elements; block r is rank r's send.
  void all_gather(const void* send, void* recv, std::size_t send_count, DType dtype, Stream stream = nullptr);
  // send holds size()*recv_count elements; rank r receives the reduction of everyone's block r.
  void reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType dtype, ReduceOp op,
                      Stream stream = nullptr);
  // send and recv hold size()*count elements; recv block q on rank r = send block r on rank q.
  void all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream = nullptr);

  // Collective over this communicator: ranks with the same color form a new communicator, ordered
  // by (key, old rank). color < 0 takes no part and gets nullptr (NCCL_SPLIT_NOCOLOR,
  // MPI_UNDEFINED). The child inherits the timeout; its stats start at zero.
  std::unique_ptr<Communicator> split(int color, int key);

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  void set_timeout(Seconds timeout);
  Seconds timeout() const { return timeout_; }

 protected:
  virtual void do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) = 0;
  virtual void do_barrier(Stream stream) = 0;
  virtual void do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                             Stream stream) = 0;
  virtual void do_all_gather(const void* send, void* recv, std::size_t send_count, DType dtype,
                             Stream stream) = 0;
  virtual void do_reduce_scatter(const void* send, void* recv, std::size_t recv_count, DType dtype,
                                 ReduceOp op, Stream stream) = 0;
  virtual void do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) = 0;
  virtual std::unique_ptr<Communicator> do_split(int color, int key) = 0;

  // The message of a CommTimeoutError for `what` on this rank after waiting timeout().
  std::string timeout_message(const char* what) const;

 private:
  void record(Collective c, std::size_t count, DType dtype, int root = 0);
  CommStats stats_;
  Seconds timeout_ = kDefaultCommTimeout;
};

// f() with comm's timeout raised to at least `wait`, restored afterwards (also when f throws): for
// collectives that wait on the other ranks' work of any length (building a graph, mining a share).
template <class F>
void waiting_at_least(Communicator& comm, Seconds wait, const F& f) {
  struct Restore {
    Communicator& comm;
    Seconds timeout;
    ~Restore() { comm.set_timeout(timeout); }
  } restore{comm, comm.timeout()};
  if (wait > restore.timeout) comm.set_timeout(wait);
  f();
}

}  // namespace core::comm
