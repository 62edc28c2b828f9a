// NCCL backend (compiled when the build finds CUDA and NCCL: TOOLKIT_HAVE_NCCL): one process per GPU.
// NcclCommunicator::world selects the GPU of the process's local rank (cudaSetDevice; the launcher's
// variables as comm/rank.hpp reads them), lets rank 0 create the ncclUniqueId, broadcasts it over a
// bootstrap communicator (the job's MPI communicator) and joins the NCCL communicator. Every collective
// of the Communicator interface runs on device buffers, enqueued on the caller's stream (or the
// communicator's own when none is given, which follows the legacy default stream), and returns when it
// has completed, as the CPU backends do; the byte accounting is the base class's. Communicators are
// non-blocking NCCL communicators polled until done, so a collective (or the initialisation, or split)
// that does not complete within timeout() aborts the NCCL communicator (ncclCommAbort) and throws
// CommTimeoutError; after that or any NCCL error the communicator refuses further calls. split() is
// ncclCommSplit. bf16 sums are NCCL's (rounded at each step of its algorithm, so not always bit-equal to
// the CPU backends' single rounding); int8 sums wrap.
#pragma once
#if TOOLKIT_HAVE_NCCL
#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "comm/rank.hpp"

struct ncclComm;
struct CUstream_st;

namespace core::comm {

// The CUDA device a process of the job drives: its local rank, or device 0 when the process sees a single
// device (a launcher that binds one GPU per task, e.g. srun --gpus-per-task=1). Throws UsageError when the
// node has fewer visible devices than local ranks: NCCL needs one GPU per rank (the shared_gpu backend puts
// several ranks on one GPU).
int select_rank_device(const RankInfo& info);

class NcclCommunicator final : public Communicator {
 public:
  // Collective over every rank of `bootstrap` (whose rank and size must be info's): cudaSetDevice(
  // select_rank_device(info)), then the NCCL communicator of all ranks.
  static std::unique_ptr<NcclCommunicator> world(const RankInfo& info, Communicator& bootstrap,
                                                 Seconds timeout = kDefaultCommTimeout);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "nccl"; }
  int device() const { return device_; }

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
  NcclCommunicator(ncclComm* comm, int device, Seconds timeout, const char* what);
  // Throws CommError for an NCCL result other than success / in progress (and marks the communicator broken).
  void check(int result, const char* what);
  void ensure_usable(const char* what) const;
  // Waits until the communicator has no operation in progress and `stream` has drained, or aborts at the timeout.
  void wait(CUstream_st* stream, const char* what);
  CUstream_st* stream_for(Stream stream) const;

  ncclComm* comm_ = nullptr;
  int device_ = 0, rank_ = 0, size_ = 1;
  CUstream_st* own_stream_ = nullptr;  // for calls without a stream
  float* barrier_word_ = nullptr;      // device scalar all-reduced by barrier()
  std::string broken_;                 // why the communicator is unusable ("" when fine)
};

}  // namespace core::comm
#endif
