// MPI backend (compiled only when TOOLKIT_HAVE_MPI): MpiSession initialises MPI (MPI_Init_thread)
// and finalises it when the last owner goes away; MpiCommunicator runs each collective as a
// non-blocking MPI call (MPI_Iallreduce, ...) polled with MPI_Test so it can give up after the
// timeout. bf16 reductions are carried out in float and 8-bit sums in int32 (converted before,
// narrowed once after), so results equal the thread backend's: one bf16 rounding, integer sums
// wrap (OpenMPI's own 8-bit MPI_SUM may saturate); avg is a sum divided by size(). After a timeout the
// communicator refuses further calls (the abandoned request cannot be cancelled).
#pragma once
#if TOOLKIT_HAVE_MPI
#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/communicator.hpp"

namespace core::comm {

class MpiSession {
 public:
  // Initialises MPI unless someone already did (then it neither initialises nor finalises).
  // Requests MPI_THREAD_SERIALIZED: the communicator may be driven from any one thread at a time.
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // The process-wide session, created on first use and finalised when the last holder drops it.
  static std::shared_ptr<MpiSession> shared();

 private:
  bool owns_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  // A duplicate of MPI_COMM_WORLD (collective over all processes).
  static std::unique_ptr<MpiCommunicator> world(std::shared_ptr<MpiSession> session = MpiSession::shared());
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

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
  MpiCommunicator(std::shared_ptr<MpiSession> session, MPI_Comm comm);
  void check(int code, const char* what) const;
  void ensure_usable(const char* what) const;
  void wait(MPI_Request request, const char* what);

  std::shared_ptr<MpiSession> session_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<MPI_Request> abandoned_;  // requests left pending by a timeout
  std::string broken_;                  // why the communicator is unusable ("" when fine)
};

}  // namespace core::comm
#endif
