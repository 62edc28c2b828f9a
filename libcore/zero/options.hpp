// Configuration of a data-parallel run: DeepSpeed's `zero_optimization` keys with DeepSpeed's
// meaning, DeepSpeed's `bf16.enabled`, and the `distributed` keys of this toolkit (topology
// emulation, quantization block, communicator timeout).
#pragma once
#include <cstdint>
#include <string>

#include "common/config.hpp"

namespace core::zero {

struct ZeroOptions {
  int stage = 0;
  bool zero_quantized_weights = false;      // qwZ
  int zero_hpz_partition_size = 1;          // hpZ: h (1: off)
  bool zero_quantized_gradients = false;    // qgZ
  std::int64_t reduce_bucket_size = 500000000;
  std::int64_t allgather_bucket_size = 500000000;
  bool overlap_comm = false;
  std::int64_t stage3_prefetch_bucket_size = 50000000;
  template <class V>
  void visit(V& v) {
    v("stage", stage,
      "0: data parallel (gradient all-reduce); 1: optimizer states partitioned; 2: + gradients; 3: + parameters",
      core::in_range(0, 3));
    v("zero_quantized_weights", zero_quantized_weights,
      "qwZ: stage 3 gathers the weights as int8 blocks with fp32 scales");
    v("zero_hpz_partition_size", zero_hpz_partition_size,
      "hpZ: ranks of a secondary weight partition inside a node; backward gathers stay in it (1: off)",
      core::positive<int>());
    v("zero_quantized_gradients", zero_quantized_gradients,
      "qgZ: stage 3 reduces gradients by a hierarchical int4 all-to-all");
    v("reduce_bucket_size", reduce_bucket_size, "elements reduced at a time (whole parameter groups, fused)",
      core::positive<std::int64_t>());
    v("allgather_bucket_size", allgather_bucket_size,
      "stages 1-2: elements all-gathered at a time after the optimizer step", core::positive<std::int64_t>());
    v("overlap_comm", overlap_comm,
      "stages 2-3: gradient reduce-scatters and weight gathers on a communication thread (device=cuda: and stream), "
      "overlapping compute (same results)");
    v("stage3_prefetch_bucket_size", stage3_prefetch_bucket_size,
      "stage 3 with overlap_comm: elements of the next groups gathered ahead of their use",
      core::positive<std::int64_t>());
  }
};

struct Bf16Options {
  bool enabled = false;
  template <class V>
  void visit(V& v) {
    v("enabled", enabled, "stage 3: weights gathered and gradients reduced in bf16 (fp32 master weights)");
  }
};

struct DistributedOptions {
  int ranks_per_node = 0;            // 0: from the launcher
  int quantization_block_size = 2048;
  double timeout_s = 300;
  std::string backend = "auto";
  int thread_ranks = 1;
  template <class V>
  void visit(V& v) {
    v("backend", backend,
      "auto: mpi (device=cpu) or nccl (device=cuda) across the launcher's processes, threads or shared_gpu in a "
      "single process; mpi: CPU ranks, one process each; nccl: one process per GPU; threads: thread_ranks CPU "
      "ranks in this process; shared_gpu: thread_ranks ranks of this process on one GPU (device buffers)",
      core::one_of({"auto", "mpi", "nccl", "threads", "shared_gpu"}));
    v("thread_ranks", thread_ranks, "ranks this process runs as threads (backends threads and shared_gpu)",
      core::positive<int>());
    v("ranks_per_node", ranks_per_node,
      "ranks a node holds (0: the launcher's local size); set it to emulate several nodes on one", core::at_least(0));
    v("quantization_block_size", quantization_block_size, "elements per fp32 scale of qwZ and qgZ (even)",
      core::positive<int>());
    v("timeout_s", timeout_s, "seconds a collective waits for the other ranks before the run fails",
      core::positive<double>());
  }
};

// UsageError naming the key for combinations that are not defined (ZeRO++ outside stage 3, bf16
// outside stage 3, overlap_comm below stage 2, an odd quantization block).
void validate(const ZeroOptions& z, const Bf16Options& bf16, const DistributedOptions& d);

}  // namespace core::zero
