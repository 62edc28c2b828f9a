// NCCL backend (see nccl_comm.hpp): non-blocking NCCL communicators whose calls are enqueued on a CUDA
// stream and polled (ncclCommGetAsyncError, cudaStreamQuery) until done, an error, or the timeout.
#include "comm/nccl_comm.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>

namespace core::comm {

namespace {

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::i8: return ncclInt8;
    case DType::u8: return ncclUint8;
  }
  throw UsageError("comm: unknown dtype");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::avg: return ncclAvg;
  }
  throw UsageError("comm: unknown reduction");
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw CommError(std::string("comm: nccl backend: ") + what + " failed: " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")");
}

ncclConfig_t non_blocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

}  // namespace

int select_rank_device(const RankInfo& info) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw UsageError("comm: nccl backend: no CUDA device answers for rank " + std::to_string(info.rank) +
                     " (check nvidia-smi and CUDA_VISIBLE_DEVICES); use distributed.backend=mpi for CPU ranks");
  }
  if (devices == 1) return 0;  // one GPU bound to this task by the launcher (or a node with one GPU)
  if (info.local_rank >= devices)
    throw UsageError("comm: nccl backend: local rank " + std::to_string(info.local_rank) + " of " +
                     std::to_string(info.local_size) + " (" + info.source + ") but this node shows only " +
                     std::to_string(devices) + " CUDA devices; NCCL needs one GPU per rank: start at most " +
                     std::to_string(devices) + " ranks per node, or use distributed.backend=shared_gpu to run "
                     "several ranks on one GPU");
  return info.local_rank;
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::world(const RankInfo& info, Communicator& bootstrap,
                                                          Seconds timeout) {
  if (bootstrap.rank() != info.rank || bootstrap.size() != info.world_size)
    throw UsageError("comm: nccl backend: rank discovery says rank " + std::to_string(info.rank) + " of " +
                     std::to_string(info.world_size) + " but the " + bootstrap.backend() + " bootstrap says rank " +
                     std::to_string(bootstrap.rank()) + " of " + std::to_string(bootstrap.size()));
  const int device = select_rank_device(info);
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (info.rank == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      throw CommError(std::string("comm: nccl backend: ncclGetUniqueId failed: ") + ncclGetErrorString(r));
  }
  bootstrap.broadcast(&id, sizeof id, DType::u8, 0);
  ncclConfig_t config = non_blocking_config();
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, info.world_size, id, info.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (comm) ncclCommAbort(comm);
    throw CommError(std::string("comm: nccl backend: ncclCommInitRankConfig failed on rank ") +
                    std::to_string(info.rank) + ": " + ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) +
                    "); set NCCL_DEBUG=INFO for details");
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(comm, device, timeout, "initialisation"));
}

NcclCommunicator::NcclCommunicator(ncclComm* comm, int device, Seconds timeout, const char* what)
    : comm_(comm), device_(device) {
  try {
    set_timeout(timeout);
    wait(nullptr, what);  // the communicator's own set-up, then its shape
    ncclCommCount(comm_, &size_);
    ncclCommUserRank(comm_, &rank_);
    cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    cuda_check(cudaStreamCreate(&own_stream_), "cudaStreamCreate");
    cuda_check(cudaMalloc(&barrier_word_, sizeof(float)), "cudaMalloc");
    cuda_check(cudaMemset(barrier_word_, 0, sizeof(float)), "cudaMemset");
  } catch (...) {  // no destructor runs for a constructor that throws
    if (comm_) ncclCommAbort(comm_);
    if (barrier_word_) cudaFree(barrier_word_);
    if (own_stream_) cudaStreamDestroy(own_stream_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (comm_) {
    // A non-blocking communicator finalises asynchronously: wait for it (up to the timeout), then free it;
    // a broken one, or one that does not finalise in time, is aborted.
    bool finalised = false;
    const ncclResult_t r = broken_.empty() ? ncclCommFinalize(comm_) : ncclInvalidUsage;
    if (r == ncclSuccess || r == ncclInProgress) {
      const auto deadline = std::chrono::steady_clock::now() + timeout();
      ncclResult_t state = ncclInProgress;
      while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      finalised = state == ncclSuccess;
    }
    if (finalised) ncclCommDestroy(comm_);
    else ncclCommAbort(comm_);
  }
  if (barrier_word_) cudaFree(barrier_word_);
  if (own_stream_) cudaStreamDestroy(own_stream_);
}

void NcclCommunicator::check(int result, const char* what) {
  const auto r = static_cast<ncclResult_t>(result);
  if (r == ncclSuccess || r == ncclInProgress) return;
  broken_ = std::string("comm: ") + what + " failed on rank " + std::to_string(rank_) + " (nccl backend): " +
            ncclGetErrorString(r) + " (" + ncclGetLastError(comm_) + "); set NCCL_DEBUG=INFO for details";
  throw CommError(broken_);
}

void NcclCommunicator::ensure_usable(const char* what) const {
  if (!broken_.empty())
    throw CommError(std::string("comm: ") + what + " on a communicator that is unusable after an earlier failure: " +
                    broken_);
  cuda_check(cudaSetDevice(device_), "cudaSetDevice");  // the calling thread may not have chosen this GPU
}

CUstream_st* NcclCommunicator::stream_for(Stream stream) const {
  return stream ? static_cast<CUstream_st*>(stream) : own_stream_;
}

void NcclCommunicator::wait(CUstream_st* stream, const char* what) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout());
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    check(r != ncclSuccess ? r : state, what);
    if (state == ncclSuccess) {
      if (!stream) return;
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) {
        broken_ = std::string("comm: ") + what + " failed on rank " + std::to_string(rank_) + ": " +
                  cudaGetErrorName(q) + " (" + cudaGetErrorString(q) + ")";
        throw CommError(broken_);
      }
    }
    if (Clock::now() > deadline) {
      broken_ = timeout_message(what);
      ncclCommAbort(comm_);
      comm_ = nullptr;
      throw CommTimeoutError(broken_);
    }
    // Spin briefly for small fast collectives, then back off so waiting ranks do not burn a core.
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void NcclCommunicator::do_broadcast(void* buf, std::size_t count, DType dtype, int root, Stream stream) {
  ensure_usable("broadcast");
  CUstream_st* s = stream_for(stream);
  check(ncclBroadcast(buf, buf, count, nccl_type(dtype), root, comm_, s), "broadcast");
  wait(s, "broadcast");
}

void NcclCommunicator::do_barrier(Stream stream) {
  ensure_usable("barrier");
  CUstream_st* s = stream_for(stream);
  check(ncclAllReduce(barrier_word_, barrier_word_, 1, ncclFloat32, ncclSum, comm_, s), "barrier");
  wait(s, "barrier");
}

void NcclCommunicator::do_all_reduce(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                     Stream stream) {
  ensure_usable("all_reduce");
  CUstream_st* s = stream_for(stream);
  check(ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), comm_, s), "all_reduce");
  wait(s, "all_reduce");
}

void NcclCommunicator::do_all_gather(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  ensure_usable("all_gather");
  CUstream_st* s = stream_for(stream);
  check(ncclAllGather(send, recv, count, nccl_type(dtype), comm_, s), "all_gather");
  wait(s, "all_gather");
}

void NcclCommunicator::do_reduce_scatter(const void* send, void* recv, std::size_t count, DType dtype, ReduceOp op,
                                         Stream stream) {
  ensure_usable("reduce_scatter");
  CUstream_st* s = stream_for(stream);
  check(ncclReduceScatter(send, recv, count, nccl_type(dtype), nccl_op(op), comm_, s), "reduce_scatter");
  wait(s, "reduce_scatter");
}

void NcclCommunicator::do_all_to_all(const void* send, void* recv, std::size_t count, DType dtype, Stream stream) {
  ensure_usable("all_to_all");
  CUstream_st* s = stream_for(stream);
  const std::size_t block = count * dtype_size(dtype);
  check(ncclGroupStart(), "all_to_all");
  for (int q = 0; q < size_; ++q) {
    check(ncclSend(static_cast<const unsigned char*>(send) + q * block, count, nccl_type(dtype), q, comm_, s),
          "all_to_all");
    check(ncclRecv(static_cast<unsigned char*>(recv) + q * block, count, nccl_type(dtype), q, comm_, s), "all_to_all");
  }
  check(ncclGroupEnd(), "all_to_all");
  wait(s, "all_to_all");
}

std::unique_ptr<Communicator> NcclCommunicator::do_split(int color, int key) {
  ensure_usable("split");
  ncclConfig_t config = non_blocking_config();
  ncclComm_t child = nullptr;
  check(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config), "split");
  wait(nullptr, "split");
  if (!child) return nullptr;
  return std::unique_ptr<Communicator>(new NcclCommunicator(child, device_, timeout(), "split"));
}

}  // namespace core::comm
