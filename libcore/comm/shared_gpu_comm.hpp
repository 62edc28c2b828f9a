// Shared-GPU backend (CUDA builds): several thread ranks of one process on one GPU, for machines with
// fewer GPUs than ranks (NCCL refuses two ranks on one device). It is the thread backend (thread_comm.hpp:
// the same rendezvous, the same data movement, the same reduction order) on device buffers: peers' buffers
// are read directly (one process, one device), copies are device-to-device copies on the caller's stream
// and reductions a kernel that combines the ranks in rank order as reduce_buffers does (bf16 in float with
// one rounding, integers in 32 bits, avg a division by the rank count), so results equal the CPU thread
// backend's bit for bit. Each collective first finishes the caller's work on its stream (the buffers are
// ready) and finishes its own copies before the next rendezvous; it returns when done, as the CPU
// backends do. At most kMaxSharedGpuRanks ranks; byte accounting as every backend's.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "comm/thread_comm.hpp"

namespace core::comm {

inline constexpr int kMaxSharedGpuRanks = 64;

// The device-buffer operations of the backend (backend() "shared_gpu") on CUDA device `device`, which
// each collective makes the calling thread's current device.
std::shared_ptr<const BufferOps> shared_gpu_buffer_ops(int device = 0);

// n ranks (1 .. kMaxSharedGpuRanks) of one group on `device`; element r is rank r.
std::vector<std::unique_ptr<Communicator>> make_shared_gpu_communicators(int n, int device = 0);

// run_thread_ranks with the shared-GPU backend.
void run_shared_gpu_ranks(int n, const std::function<void(Communicator&)>& fn, Seconds timeout = kDefaultCommTimeout,
                          int device = 0);

}  // namespace core::comm
