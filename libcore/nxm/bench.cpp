// `nxm-compress bench` (see bench.hpp).
#include "nxm/bench.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <sstream>

#include "common/cpu_time.hpp"
#include "common/errors.hpp"
#include "common/log.hpp"
#include "nxm/packed.hpp"
#include "nxm/packed_model.hpp"
#include "train/gemm.hpp"
#include "train/transformer_cuda.hpp"

namespace core::nxm {

namespace {

std::vector<std::string> split_list(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  if (out.empty()) throw UsageError("bench: " + key + " is empty");
  return out;
}

// Median wall-clock and process CPU seconds of each callable over `repeats` rounds, one call of each per
// round in turn (after one warm-up round). CPU time counts every thread of the process; with one
// thread it leaves out the time a loaded machine makes the call wait for a core.
struct Medians {
  std::vector<double> wall, cpu;
};
Medians interleaved_medians(const std::vector<std::function<void()>>& calls, int repeats) {
  std::vector<std::vector<double>> wall(calls.size()), cpu(calls.size());
  for (int rep = 0; rep <= repeats; ++rep)
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = process_cpu_seconds();
      calls[i]();
      const double c = process_cpu_seconds() - c0;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rep > 0) {
        wall[i].push_back(s);
        cpu[i].push_back(c);
      }
    }
  const auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  Medians m;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    m.wall.push_back(median(wall[i]));
    m.cpu.push_back(median(cpu[i]));
  }
  return m;
}

// Times (ms) of every model and the packed settings' ratios against the baselines, wall and CPU.
void add_times(nlohmann::json& row, const std::vector<std::string>& names, const Medians& m, std::size_t settings,
               std::size_t fp32, std::size_t int8) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    row[names[i] + "_ms"] = 1e3 * m.wall[i];
    row[names[i] + "_cpu_ms"] = 1e3 * m.cpu[i];
  }
  for (std::size_t i = 0; i < settings; ++i) {
    row[names[i] + "_vs_fp32"] = m.wall[fp32] / m.wall[i];
    row[names[i] + "_vs_int8"] = m.wall[int8] / m.wall[i];
    row[names[i] + "_cpu_vs_fp32"] = m.cpu[fp32] / m.cpu[i];
    row[names[i] + "_cpu_vs_int8"] = m.cpu[int8] / m.cpu[i];
  }
}

}  // namespace

nlohmann::json run_bench(const BenchOptions& o, const RunDir& rundir) {
  const LinearDevice device = o.device == "cuda" ? LinearDevice::cuda : LinearDevice::cpu;
  const std::string device_name = device == LinearDevice::cuda ? train::require_cuda_device() : "cpu";
  if (o.hidden % 64 || o.hidden % o.heads) throw UsageError("bench: hidden must be a multiple of 64 and of heads");
  std::vector<Setting> settings;
  for (const auto& s : split_list(o.settings, "settings")) settings.push_back(parse_setting(s, "settings"));
  std::vector<int> seqs;
  for (const auto& s : split_list(o.seq, "seq")) {
    int n = 0;
    try {
      n = std::stoi(s);
    } catch (const std::exception&) {
      throw UsageError("bench: seq entry '" + s + "' is not an integer");
    }
    if (n < 1) throw UsageError("bench: seq entries must be >= 1");
    seqs.push_back(n);
  }
  train::ModelConfig cfg;
  cfg.arch = "bert";
  cfg.n_layer = o.layers;
  cfg.n_embd = o.hidden;
  cfg.n_head = o.heads;
  cfg.vocab_size = o.vocab;
  cfg.n_positions = std::max(64, *std::max_element(seqs.begin(), seqs.end()));
  const train::ParamLayout layout(cfg);
  train::FlatBuffers<float> params(layout);
  train::init_parameters(params, o.seed);
  const nlohmann::json info = {{"tokenizer", "bytes"}};

  // The models: each packed setting, then the baselines (dense fp32, dense int8) of the same weights.
  std::vector<std::string> names;
  std::vector<std::unique_ptr<PackedTransformer>> models;
  nlohmann::json sizes = nlohmann::json::object();
  for (const Setting& s : settings) {
    const PackedModel pm = pack_model(params, Plan::uniform(s), info);
    std::string stem = s.to_string();
    std::replace(stem.begin(), stem.end(), ':', '-');
    const fs::path file = rundir.artifact("bert_" + stem + ".nxm.safetensors");
    write_packed(file, pm);
    sizes[s.to_string()] = fs::file_size(file);
    names.push_back(s.to_string());
    models.push_back(std::make_unique<PackedTransformer>(pm, device));
  }
  const std::uint64_t dense_bytes = dense_fp32_file_bytes(params);
  sizes["dense_fp32"] = dense_bytes;
  names.push_back("dense_fp32");  // no fp32 device kernel: on the CPU
  models.push_back(std::make_unique<PackedTransformer>(pack_model(params, Plan::uniform(Setting{0, 0, 32}), info)));
  names.push_back("dense_int8");
  models.push_back(std::make_unique<PackedTransformer>(pack_model(params, Plan::uniform(Setting{0, 0, 8}), info), device));
  const std::size_t fp32 = settings.size(), int8 = settings.size() + 1;

  std::mt19937_64 rng(o.seed + 1);
  nlohmann::json by_seq = nlohmann::json::array();
  for (int T : seqs) {
    nlohmann::json entry = {{"seq", T}};
    // Component linears of block 0 on random activations.
    nlohmann::json comps = nlohmann::json::object();
    for (Component c : kComponents) {
      const auto [rows, cols] = component_shape(c, o.hidden, 4 * o.hidden);
      std::vector<float> x(std::size_t(T) * cols), y(std::size_t(T) * rows);
      std::normal_distribution<float> nd(0.0f, 1.0f);
      for (float& v : x) v = nd(rng);
      std::vector<std::function<void()>> calls;
      for (auto& m : models) calls.push_back([&, c] { m->linear_forward(0, c, x.data(), T, y.data()); });
      nlohmann::json row = {{"rows", rows}, {"cols", cols}};
      add_times(row, names, interleaved_medians(calls, o.repeats), settings.size(), fp32, int8);
      comps[std::string(component_key(c))] = row;
    }
    entry["linears"] = comps;
    // Whole forward of one sequence of T random tokens.
    std::vector<std::int32_t> tokens(T);
    std::uniform_int_distribution<int> tok(0, o.vocab - 1);
    for (auto& t : tokens) t = tok(rng);
    std::vector<std::function<void()>> calls;
    for (auto& m : models) calls.push_back([&] { m->classify(tokens); });
    const Medians med = interleaved_medians(calls, o.repeats);
    nlohmann::json e2e = nlohmann::json::object();
    add_times(e2e, names, med, settings.size(), fp32, int8);
    for (std::size_t i = 0; i < settings.size(); ++i)
      log::info("seq {}: {} {:.3f} ms, dense fp32 {:.3f} ms ({:.2f}x; CPU time {:.2f}x), dense int8 {:.3f} ms ({:.2f}x)", T,
                names[i], 1e3 * med.wall[i], 1e3 * med.wall[fp32], med.wall[fp32] / med.wall[i],
                med.cpu[fp32] / med.cpu[i], 1e3 * med.wall[int8], med.wall[int8] / med.wall[i]);
    entry["forward"] = e2e;
    by_seq.push_back(entry);
  }
  return {{"layers", o.layers},
          {"hidden", o.hidden},
          {"ffn", 4 * o.hidden},
          {"heads", o.heads},
          {"vocab", o.vocab},
          {"threads", train::num_threads()},
          {"repeats", o.repeats},
          {"kernel_path", device == LinearDevice::cuda ? "cuda" : to_string(best_kernel_path(settings.front(), o.hidden))},
          {"device", o.device},
          {"device_name", device_name},
          {"size_bytes", sizes},
          {"results", by_seq}};
}

}  // namespace core::nxm
