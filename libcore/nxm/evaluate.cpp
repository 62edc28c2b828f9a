// `nxm-compress eval` (see evaluate.hpp).
#include "nxm/evaluate.hpp"

#include <cmath>
#include <functional>
#include <memory>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "nxm/packed_model.hpp"
#include "nxm/student.hpp"
#include "train/checkpoint.hpp"
#include "train/gemm.hpp"
#include "train/model_source.hpp"
#include "train/transformer_cuda.hpp"

namespace core::nxm {

nlohmann::json run_eval(const EvalOptions& o) {
  if (o.model.empty()) throw UsageError("eval: give the model (--model PACKED|RUN)");
  const LinearDevice device = o.device == "cuda" ? LinearDevice::cuda : LinearDevice::cpu;
  const std::string device_name = device == LinearDevice::cuda ? train::require_cuda_device() : "cpu";
  if (o.threads > 0) train::set_num_threads(o.threads);
  PackedModel pm;
  std::string kind;
  std::uintmax_t bytes = 0;
  if (is_packed_file(o.model)) {
    pm = read_packed(o.model);
    kind = "packed";
    bytes = fs::file_size(o.model);
  } else {
    const train::ModelSource src = train::find_model(o.model);
    const train::ParamLayout layout(src.config);
    train::FlatBuffers<float> params(layout);
    src.load_weights_into(params);
    nlohmann::json info = {{"tokenizer", src.tokenizer}};
    if (src.format == train::ModelSource::Format::checkpoint) {
      const nlohmann::json state = train::read_checkpoint_state(src.path);
      if (state.contains("task")) info["task"] = state["task"];
    }
    pm = pack_model(params, Plan::uniform(Setting{0, 0, 32}), info);
    kind = "dense";
    bytes = src.format == train::ModelSource::Format::checkpoint ? fs::file_size(src.path / "model.safetensors")
                                                                  : fs::file_size(src.path);
  }
  const bool gpt = pm.config.architecture() == train::Arch::gpt;
  TaskOptions task = o.task;
  if (o.task_from_model && pm.info.contains("task")) {
    const nlohmann::json& t = pm.info["task"];
    task.test = t.value("test", task.test);
    task.max_seq_len = t.value("max_seq_len", task.max_seq_len);
    if (gpt) {  // the validation split of the text the model was compressed on
      task.train = t.value("train", task.train);
      task.val_fraction = t.value("val_fraction", task.val_fraction);
      task.max_test_examples = t.value("max_test_examples", task.max_test_examples);
    }
  }
  const std::string tok_spec = pm.info.value("tokenizer", "");
  if (tok_spec.empty()) throw UsageError("eval: the model records no tokenizer");
  const auto tok = text::make_tokenizer(tok_spec);
  // The held-out sequences, and the score of a model on them: accuracy (BERT) or {loss, perplexity} (GPT).
  EncodedSet set;
  std::vector<std::int32_t> windows;
  std::vector<std::span<const std::int32_t>> sequences;
  std::function<nlohmann::json(PackedTransformer&)> score;
  if (gpt) {
    windows = lm_eval_windows(task, *tok, pm.config);
    const std::size_t W = std::size_t(task.max_seq_len) + 1;
    for (std::size_t at = 0; at < windows.size(); at += W) sequences.emplace_back(windows.data() + at, task.max_seq_len);
    score = [&](PackedTransformer& m) {
      const double loss = packed_lm_loss(m, windows, task.max_seq_len);
      return nlohmann::json{{"loss", loss}, {"perplexity", std::exp(loss)}};
    };
  } else {
    TaskOptions test_only = task;
    test_only.train = task.test;  // load_task encodes both; only the test split is used here
    test_only.max_train_examples = 1;
    set = load_task(test_only, *tok, pm.config, 1).test;
    sequences = sequences_of(set);
    score = [&](PackedTransformer& m) { return nlohmann::json{{"accuracy", packed_accuracy(m, set)}}; };
  }

  PackedTransformer net(pm, device);
  const nlohmann::json main_score = score(net);
  std::vector<PackedTransformer*> timed = {&net};
  std::vector<std::unique_ptr<PackedTransformer>> baselines;
  struct Baseline {
    std::string name;
    Setting setting;
    LinearDevice device;
  };
  const std::vector<Baseline> kBaselines = {{"dense_fp32", {0, 0, 32}, LinearDevice::cpu},  // no fp32 device kernel
                                            {"dense_int8", {0, 0, 8}, device}};
  const train::ParamLayout layout(pm.config);
  train::FlatBuffers<float> params(layout);
  if (o.baselines) {
    pm.unpack_into(params);
    for (const auto& b : kBaselines) {
      baselines.push_back(
          std::make_unique<PackedTransformer>(pack_model(params, Plan::uniform(b.setting), pm.info), b.device));
      timed.push_back(baselines.back().get());
    }
  }
  const std::vector<Latency> lat = packed_latency(timed, sequences, o.latency_examples, o.latency_repeats);
  const RatioReport ratio = compression_ratio(pm.config.n_layer, pm.config.n_embd, 4 * pm.config.n_embd, pm.plan);
  nlohmann::json r = {{"model", o.model},
                      {"kind", kind},
                      {"plan", pm.plan.to_string()},
                      {"test", gpt ? task.train + " (last " + std::to_string(task.val_fraction) + ")" : task.test},
                      {"examples", sequences.size()},
                      {"size_bytes", bytes},
                      {"cr_paper", ratio.cr_paper()},
                      {"cr_hardware", ratio.cr_hardware()},
                      {"latency_ms_mean", 1e3 * lat[0].mean_s},
                      {"latency_ms_median", 1e3 * lat[0].median_s},
                      {"latency_examples", std::min<std::size_t>(o.latency_examples, sequences.size())},
                      {"threads", train::num_threads()},
                      {"device", o.device},
                      {"device_name", device_name},
                      {"device_linears", net.device_linears()}};
  r.update(main_score);
  if (o.baselines) {
    r["dense_fp32_bytes"] = dense_fp32_file_bytes(params);
    r["size_ratio_vs_dense_fp32"] = double(r["dense_fp32_bytes"].get<std::size_t>()) / double(bytes);
    for (std::size_t b = 0; b < kBaselines.size(); ++b) {
      const std::string& name = kBaselines[b].name;
      r[name + "_device"] = kBaselines[b].device == LinearDevice::cuda ? "cuda" : "cpu";
      const double ms = 1e3 * lat[b + 1].median_s, main_ms = 1e3 * lat[0].median_s;
      const nlohmann::json baseline_score = score(*baselines[b]);
      for (const auto& [k, v] : baseline_score.items()) r[name + "_" + k] = v;
      r[name + "_latency_ms_median"] = ms;
      r["speedup_vs_" + name] = ms / main_ms;
      log::info("batch-1 latency (median, interleaved): {} {:.3f} ms, {} {:.3f} ms ({:.2f}x)", kind, main_ms, name, ms,
                ms / main_ms);
    }
  }
  return r;
}

}  // namespace core::nxm
