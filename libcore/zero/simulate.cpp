// Alpha-beta prediction of ZeRO-3 and ZeRO++ step times (see simulate.hpp).
#include "zero/simulate.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "common/errors.hpp"
#include "train/params.hpp"
#include "zero/topology.hpp"
#include "zero/volume.hpp"

namespace core::zero {

namespace {

struct Variant {
  const char* name;
  bool qw, hpz, qg;
};
constexpr Variant kVariants[] = {{"zero3", false, false, false},
                                 {"qwz", true, false, false},
                                 {"hpz", false, true, false},
                                 {"qgz", false, false, true},
                                 {"zeropp", true, true, true}};

nlohmann::json predict(const SimulateOptions& o, const std::vector<std::size_t>& groups, double params,
                       double inter_gbs) {
  const int N = o.nodes * o.ranks_per_node;
  const int h = o.zero_hpz_partition_size > 0 ? o.zero_hpz_partition_size : o.ranks_per_node;
  const double tokens = double(o.train_micro_batch_size_per_gpu) * o.seq_len * o.gradient_accumulation_steps;
  const double compute_s = 6.0 * params * tokens / (o.tflops * 1e12);
  nlohmann::json out = nlohmann::json::object();
  double zero3_s = 0;
  for (const Variant& var : kVariants) {
    VolumeModel m;
    m.group_sizes = groups;
    m.world_size = N;
    m.ranks_per_node = o.ranks_per_node;
    m.zero.stage = 3;
    m.zero.zero_quantized_weights = var.qw;
    m.zero.zero_quantized_gradients = var.qg;
    m.zero.zero_hpz_partition_size = var.hpz ? h : 1;
    m.zero.reduce_bucket_size = o.reduce_bucket_size;
    m.bf16 = o.bf16;
    m.block = std::size_t(o.quantization_block_size);
    m.micro_steps = o.gradient_accumulation_steps;
    double worst = 0, intra = 0, inter = 0;
    for (int r = 0; r < N; ++r) {
      const StepVolume v = step_volume(m, r);
      const double t = double(v.intra_messages) * o.intra_node.latency_us * 1e-6 +
                       double(v.inter_messages) * o.inter_node.latency_us * 1e-6 +
                       double(v.bytes.intra) / (o.intra_node.bandwidth_gbs * 1e9) +
                       double(v.bytes.inter) / (inter_gbs * 1e9);
      worst = std::max(worst, t);
      intra += double(v.bytes.intra) / N;
      inter += double(v.bytes.inter) / N;
    }
    const double step = compute_s + worst;
    if (std::string(var.name) == "zero3") zero3_s = step;
    out[var.name] = {{"step_s", step},
                     {"compute_s", compute_s},
                     {"comm_s", worst},
                     {"bytes_per_step", {{"intra", intra}, {"inter", inter}}},
                     {"tokens_per_s", tokens * N / step},
                     {"speedup", zero3_s / step}};
  }
  return out;
}

}  // namespace

nlohmann::json simulate(const SimulateOptions& o) {
  if (o.quantization_block_size % 2 != 0)
    throw UsageError("quantization_block_size = " + std::to_string(o.quantization_block_size) + ": must be even");
  const Topology topo = Topology::make(o.nodes * o.ranks_per_node, 0, o.ranks_per_node, "ranks_per_node");
  check_hpz_size(o.zero_hpz_partition_size > 0 ? o.zero_hpz_partition_size : o.ranks_per_node, topo);
  const train::ParamLayout layout(o.model);
  std::vector<std::size_t> groups;
  for (const auto& g : layout.groups()) groups.push_back(g.size);
  const double params = double(layout.parameter_count());
  nlohmann::json r;
  r["parameters"] = params;
  r["ranks"] = topo.world_size;
  r["nodes"] = o.nodes;
  r["ranks_per_node"] = o.ranks_per_node;
  r["inter_node_bandwidth_gbs"] = o.inter_node.bandwidth_gbs;
  r["variants"] = predict(o, groups, params, o.inter_node.bandwidth_gbs);
  if (!o.sweep_inter_bandwidth_gbs.empty()) {
    r["sweep"] = nlohmann::json::array();
    for (const double bw : o.sweep_inter_bandwidth_gbs) {
      if (!(bw > 0)) throw UsageError("sweep_inter_bandwidth_gbs: every bandwidth must be positive");
      r["sweep"].push_back({{"inter_node_bandwidth_gbs", bw}, {"variants", predict(o, groups, params, bw)}});
    }
  }
  return r;
}

std::string simulation_table(const nlohmann::json& p) {
  std::string s = fmt::format("# {:.3g} parameters, {} ranks ({} nodes of {}), inter-node {} GB/s per rank\n",
                              p["parameters"].get<double>(), p["ranks"].get<int>(), p["nodes"].get<int>(),
                              p["ranks_per_node"].get<int>(), p["inter_node_bandwidth_gbs"].get<double>());
  s += fmt::format("{:<8} {:>10} {:>10} {:>10} {:>14} {:>14} {:>12} {:>8}\n", "variant", "step_s", "compute_s",
                   "comm_s", "intra_bytes", "inter_bytes", "tokens/s", "speedup");
  for (const Variant& var : kVariants) {
    const std::string name = var.name;
    const nlohmann::json& v = p["variants"][name];
    s += fmt::format("{:<8} {:>10.4f} {:>10.4f} {:>10.4f} {:>14.4g} {:>14.4g} {:>12.4g} {:>8.3f}\n", name,
                     v["step_s"].get<double>(), v["compute_s"].get<double>(), v["comm_s"].get<double>(),
                     v["bytes_per_step"]["intra"].get<double>(), v["bytes_per_step"]["inter"].get<double>(),
                     v["tokens_per_s"].get<double>(), v["speedup"].get<double>());
  }
  return s;
}

}  // namespace core::zero
