// `zpp-train simulate`: an alpha-beta model of a ZeRO-3 / ZeRO++ step at any scale. Each variant's
// messages and bytes per rank are volume.hpp's (the collectives the engine really runs, costed as the
// communicator counts them); a message costs the link's latency and a byte its inverse bandwidth
// (a rank's own send bandwidth inside its node and across nodes); compute is 6 P tokens FLOPs at the
// achieved rate per rank, communication not overlapped. Step time = compute + the slowest rank's
// communication. Variants: ZeRO-3, + qwZ, + hpZ, + qgZ, and all three (ZeRO++), each with its
// predicted step time, throughput and speedup over ZeRO-3 (ZeRO++ paper, Sec. 5: 2.16x at 384 GPUs
// on low bandwidth).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "common/config.hpp"
#include "train/model_config.hpp"

namespace core::zero {

struct LinkOptions {
  double bandwidth_gbs = 100;  // GB/s one rank sends
  double latency_us = 5;
  template <class V>
  void visit(V& v) {
    v("bandwidth_gbs", bandwidth_gbs, "GB/s one rank can send over this kind of link", core::positive<double>());
    v("latency_us", latency_us, "microseconds per message", core::at_least(0.0));
  }
};

// The default model: a GPT of 18B parameters (40 layers of width 6144), the smallest of the ZeRO++
// paper's evaluation (Sec. 6).
inline train::ModelConfig gpt_18b() {
  train::ModelConfig m;
  m.n_layer = 40;
  m.n_head = 48;
  m.n_embd = 6144;
  m.n_positions = 2048;
  m.vocab_size = 50257;
  return m;
}

struct SimulateOptions {
  train::ModelConfig model = gpt_18b();  // the layout whose parameter groups are the buckets
  int train_micro_batch_size_per_gpu = 1;
  int seq_len = 2048;
  int gradient_accumulation_steps = 1;
  int nodes = 24;
  int ranks_per_node = 16;
  int zero_hpz_partition_size = 0;  // hpZ group of the hpZ variants (0: ranks_per_node)
  int quantization_block_size = 2048;
  bool bf16 = true;
  std::int64_t reduce_bucket_size = 500000000;
  double tflops = 60;  // achieved per rank
  LinkOptions intra_node{150, 5};
  LinkOptions inter_node{6.25, 10};
  std::vector<double> sweep_inter_bandwidth_gbs;
  std::string format = "json";
  template <class V>
  void visit(V& v) {
    v.section("model", model);
    v("train_micro_batch_size_per_gpu", train_micro_batch_size_per_gpu, "sequences per rank and micro step",
      core::positive<int>());
    v("seq_len", seq_len, "tokens per sequence", core::positive<int>());
    v("gradient_accumulation_steps", gradient_accumulation_steps, "micro steps per optimizer step",
      core::positive<int>());
    v("nodes", nodes, "nodes", core::positive<int>());
    v("ranks_per_node", ranks_per_node, "ranks (GPUs) per node", core::positive<int>());
    v("zero_hpz_partition_size", zero_hpz_partition_size, "hpZ group (0: ranks_per_node)", core::at_least(0));
    v("quantization_block_size", quantization_block_size, "elements per fp32 scale (even)", core::positive<int>());
    v("bf16", bf16, "weights gathered and gradients reduced in bf16 (else fp32)");
    v("reduce_bucket_size", reduce_bucket_size, "elements reduced at a time", core::positive<std::int64_t>());
    v("tflops", tflops, "achieved TFLOP/s of one rank's compute", core::positive<double>());
    v.section("intra_node", intra_node);
    v.section("inter_node", inter_node);
    v("sweep_inter_bandwidth_gbs", sweep_inter_bandwidth_gbs,
      "also predict every variant at each of these inter-node bandwidths (GB/s per rank)");
    v("format", format, "json, or table (a text table instead of the JSON)", core::one_of({"json", "table"}));
  }
};

// The prediction as JSON: inputs, parameters, and per variant step_s, compute_s, comm_s,
// bytes_per_step {intra, inter} (mean over ranks), tokens_per_s and speedup over ZeRO-3; plus the
// sweep. UsageError for an impossible topology.
nlohmann::json simulate(const SimulateOptions& options);
// The variants of a prediction as a text table.
std::string simulation_table(const nlohmann::json& prediction);

}  // namespace core::zero
