// MPI backend: collectives as non-blocking MPI calls polled with MPI_Test until done or until the
// communicator's timeout. bf16, avg and 8-bit sums are reduced widened (float / int32) and narrowed
// once; NCCL's in-place layouts are mapped to MPI_IN_PLACE or a temporary buffer.
#include "comm/mpi_comm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

namespace core::comm {

namespace {

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::bf16: return MPI_UINT16_T;
    case DType::i8: return MPI_INT8_T;
    case DType::u8: return MPI_UINT8_T;
  }
  throw UsageError("comm: unknown dtype");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  throw UsageError("comm: unknown reduction");
}

int mpi_count(std::size_t count, const char* what) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw UsageError(std::string("comm: ") + what + ": " + std::to_string(count) +
                     " elements exceed MPI's int count; split the call");
  return static_cast<int>(count);
}

// Reductions MPI cannot carry out as this interface defines them travel widened and are narrowed
// once at the end: bf16 (no MPI type; accumulate in float), avg (sum, then divide) and 8-bit sums
// (OpenMPI's AVX reduction saturates instead of wrapping: open-mpi/ompi#8045).
bool needs_widening(DType t, ReduceOp op) {
  return t == DType::bf16 || op == ReduceOp::avg || (!is_floating(t) && op == ReduceOp::sum);
}

template <class W>
W load(DType t, const void* p, std::size_t i) {
  switch (t) {
    case DType::f32: return static_cast<W>(static_cast<const float*>(p)[i]);
    case DType::bf16: return static_cast<W>(bf16_to_float(static_cast<const std::uint16_t*>(p)[i]));
    case DType::i8: return static_cast<W>(static_cast<const std::int8_t*>(p)[i]);
    case DType::u8: return static_cast<W>(static_cast<const std::uint8_t*>(p)[i]);
  }
  return W{};
}

template <class W>
void store(DType t, void* p, std::size_t i, W v) {
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::bf16: static_cast<std::uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); return;
    case DType::i8: static_cast<std::int8_t*>(p)[i] = static_cast<std::int8_t>(v); return;  // wraps
    case DType::u8: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(v); return;
  }
}

// Widens in_count elements of send, runs start(in, out, type) + finish(request) on the widened
// buffers (out has out_count elements) and narrows out into recv, dividing by `divisor` for avg.
template <class W, class Start, class Finish>
void reduce_widened_as(const void* send, std::size_t in_count, void* recv, std::size_t out_count, DType t,
                       ReduceOp op, int divisor, MPI_Datatype type, Start start, Finish finish) {
  std::vector<W> in(in_count), out(out_count);
  for (std::size_t i = 0; i < in_count; ++i) in[i] = load<W>(t, send, i);
  finish(start(in.data(), out.data(), type));
  for (std::size_t i = 0; i < out_count; ++i)
    store<W>(t, recv, i, op == ReduceOp::avg ? out[i] / static_cast<W>(divisor) : out[i]);
}

template <class Start, class Finish>
void reduce_widened(const void* send, std::size_t in_count, void* recv, std::size_t out_count, DType t, ReduceOp op,
                    int divisor, Start start, Finish finish) {
  if (is_floating(t))
    reduce_widened_as<float>(send, in_count, recv, out_count, t, op, divisor, MPI_FLOAT, start, finish);
  else
    reduce_widened_as<std::int32_t>(send, in_count, recv, out_count, t, op, divisor, MPI_INT32_T, start, finish);
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

}  // namespace

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    throw CommError("comm: MPI_Init_thread failed");
  owns_ = true;
}

MpiSession::~MpiSession() {
  // Not while an error unwinds: a rank that finalizes cleanly and then fails leaves the others waiting in their
  // next collective; with MPI still up, the failure can end the whole job (abort_job).
  if (owns_ && !mpi_finalized() && std::uncaught_exceptions() == 0) MPI_Finalize();
}

std::shared_ptr<MpiSession> MpiSession::shared() {
  static std::mutex mutex;
  static std::weak_ptr<MpiSession> current;
  std::lock_guard lock(mutex);
  auto session = current.lock();
  if (!session) {
    session = std::make_shared<MpiSession>();
    current = session;
  }
  return session;
}

MpiCommunicator::MpiCommunicator(std::shared_ptr<MpiSession> session, MPI_Comm comm)
    : session_(std::move(session)), comm_(comm) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world(std::shared_ptr<MpiSession> session) {
  MPI_Comm comm;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) throw CommError("comm: MPI_Comm_dup(MPI_COMM_WORLD) failed");
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(session), comm));
}

MpiCommunicator::~MpiCommunicator() {
  if (mpi_finalized()) return;
  for (MPI_Request& r : abandoned_) {  // release those that completed meanwhile; never block
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
  }
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::check(int code, const char* what) const {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw CommError(std::string("comm: ") + what + " failed on rank " + std::to_string(rank_) + ": " +
                  std::string(text, len));
}

void MpiCommunicator::ensure_usable(const char* what) const {
  if (!broken_.empty())
    throw CommError(std::string("comm: ") + what + " on a communicator that is unusable after an earlier failure: " +
                    broken_);
}

void MpiCommunicator::wait(MPI_Request request, const char* what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(timeout());
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (Clock::now() > deadline) {
      abandoned_.push_back(request);
      broken_ = timeout_message(what);
      throw CommTimeoutError(broken_);
    }
    // Spin briefly for small fast collectives, then back off so waiting ranks do not burn a core: sleep
    // an eighth of the time waited so far, from 50 us up to 2 ms (a rank that finished its share of a
    // long count waits with ~500 wake-ups a second instead of 20,000; a collective finishes at most
    // an eighth of its time, or 2 ms, before its waiter notices).
    if (polls > 1000)
      std::this_thread::sleep_for(std::clamp<Clock::duration>((Clock::now() - start) / 8, std::chrono::microseconds(50),
                                                              std::chrono::milliseconds(2)));
  }
}

void MpiCommunicator::do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream) {
  ensure_usable("broadcast");
  MPI_Request req;
  check(MPI_Ibcast(buf, mpi_count(count, "broadcast"), mpi_type(dtype), root, comm_, &req), "broadcast");
  wait(req, "broadcast");
}

void MpiCommunicator::do_barrier(Stream) {
  ensure_usable("barrier");
  MPI_Request req;
  check(MPI_Ibarrier(comm_, &req), "barrier");
  wait(req, "barrier");
}

void MpiCommunicator::do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                    Stream) {
  ensure_usable("all_reduce");
  const int n = mpi_count(count, "all_reduce");
  MPI_Request req;
  if (needs_widening(dtype, op)) {
    reduce_widened(
        send, count, recv, count, dtype, op, size_,
        [&](const void* in, void* out, MPI_Datatype type) {
          check(MPI_Iallreduce(in, out, n, type, mpi_op(op), comm_, &req), "all_reduce");
          return req;
        },
        [&](MPI_Request r) { wait(r, "all_reduce"); });
    return;
  }
  const void* src = send == recv ? MPI_IN_PLACE : send;
  check(MPI_Iallreduce(src, recv, n, mpi_type(dtype), mpi_op(op), comm_, &req), "all_reduce");
  wait(req, "all_reduce");
}

void MpiCommunicator::do_all_gather(const void* send, void* recv, std::size_t count, DType dtype, Stream) {
  ensure_usable("all_gather");
  const int n = mpi_count(count, "all_gather");
  mpi_count(count * size_, "all_gather");
  const bool in_place = send == static_cast<const unsigned char*>(recv) + count * dtype_size(dtype) * rank_;
  MPI_Request req;
  check(MPI_Iallgather(in_place ? MPI_IN_PLACE : send, n, mpi_type(dtype), recv, n, mpi_type(dtype), comm_, &req),
        "all_gather");
  wait(req, "all_gather");
}

void MpiCommunicator::do_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                        Stream) {
  ensure_usable("reduce_scatter");
  const int n = mpi_count(count, "reduce_scatter");
  const std::size_t total = count * size_;
  mpi_count(total, "reduce_scatter");
  MPI_Request req;
  if (needs_widening(dtype, op)) {  // widened buffers never alias, so in-place needs no care here
    reduce_widened(
        send, total, recv, count, dtype, op, size_,
        [&](const void* in, void* out, MPI_Datatype type) {
          check(MPI_Ireduce_scatter_block(in, out, n, type, mpi_op(op), comm_, &req), "reduce_scatter");
          return req;
        },
        [&](MPI_Request r) { wait(r, "reduce_scatter"); });
    return;
  }
  // In place (recv inside send) MPI's layout differs from NCCL's: receive into a temporary.
  const std::size_t block = count * dtype_size(dtype);
  const bool in_place = count > 0 && static_cast<const unsigned char*>(recv) == static_cast<const unsigned char*>(send) + block * rank_;
  std::vector<unsigned char> tmp(in_place ? block : 0);
  void* dst = in_place ? tmp.data() : recv;
  check(MPI_Ireduce_scatter_block(send, dst, n, mpi_type(dtype), mpi_op(op), comm_, &req), "reduce_scatter");
  wait(req, "reduce_scatter");
  if (in_place) std::memcpy(recv, tmp.data(), block);
}

void MpiCommunicator::do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream) {
  ensure_usable("all_to_all");
  const int n = mpi_count(count, "all_to_all");
  mpi_count(count * size_, "all_to_all");
  MPI_Request req;
  check(MPI_Ialltoall(send, n, mpi_type(dtype), recv, n, mpi_type(dtype), comm_, &req), "all_to_all");
  wait(req, "all_to_all");
}

std::unique_ptr<Communicator> MpiCommunicator::do_split(int color, int key) {
  ensure_usable("split");
  // MPI_Comm_split blocks without a timeout: first make sure every rank has arrived.
  MPI_Request req;
  check(MPI_Ibarrier(comm_, &req), "split");
  wait(req, "split");
  MPI_Comm child;
  check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &child), "split");
  if (child == MPI_COMM_NULL) return nullptr;
  return std::unique_ptr<Communicator>(new MpiCommunicator(session_, child));
}

}  // namespace core::comm
