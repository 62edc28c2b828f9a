// Checkpoint folders (safetensors weights + optimizer moments + state.json + DONE), see checkpoint.hpp.
#include "train/checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "common/errors.hpp"
#include "common/log.hpp"
#include "common/rundir.hpp"
#include "io/safetensors.hpp"
#include "train/interop.hpp"

namespace core::train {

namespace {

template <class T>
std::span<const T> span_of(const T* p, std::size_t n) {
  return {p, n};
}

void copy_tensor(const io::SafetensorsFile& f, const fs::path& path, const std::string& name,
                 const std::vector<std::int64_t>& shape, float* dst) {
  if (!f.contains(name)) throw DataError(path.string() + ": tensor '" + name + "' is missing");
  const io::TensorView t = f.get(name);
  if (t.shape != shape) {
    std::string want, got;
    for (auto d : shape) want += std::to_string(d) + ",";
    for (auto d : t.shape) got += std::to_string(d) + ",";
    throw DataError(path.string() + ": tensor '" + name + "' has shape [" + got + "] but the model needs [" + want +
                    "]");
  }
  const auto v = read_weights_tensor(f, path, name);
  std::copy(v.begin(), v.end(), dst);
}

}  // namespace

namespace {

// Registers n floats at `offset` of group g's weights ('w') or AdamW moments ('m', 'v') with a writer as
// tensor `name` of `shape`.
using AddTensor = std::function<void(io::SafetensorsWriter&, const std::string& name,
                                     const std::vector<std::int64_t>& shape, char kind, int g, std::size_t offset)>;

std::size_t numel(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (const auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// From host buffers, written in place (opt may be null for the weights alone).
AddTensor host_tensors(const FlatBuffers<float>& params, const AdamW<float>* opt) {
  return [&params, opt](io::SafetensorsWriter& w, const std::string& name, const std::vector<std::int64_t>& shape,
                        char kind, int g, std::size_t offset) {
    const float* base = kind == 'w' ? params.group(g) : kind == 'm' ? opt->m().group(g) : opt->v().group(g);
    w.add_view<float>(name, shape, span_of(base + offset, numel(shape)));
  };
}

// Copied out by `copy` one tensor at a time while the file is written.
AddTensor copied_tensors(const StateCopy& copy) {
  return [&copy](io::SafetensorsWriter& w, const std::string& name, const std::vector<std::int64_t>& shape, char kind,
                 int g, std::size_t offset) {
    const std::size_t n = numel(shape);
    w.add_filled(name, "F32", shape, n * sizeof(float), [&copy, kind, g, offset, n](std::span<std::byte> out) {
      copy(kind, g, offset, n, reinterpret_cast<float*>(out.data()));
    });
  };
}

void write_weights(const fs::path& path, const ParamLayout& layout, const AddTensor& add,
                   const nlohmann::json& metadata) {
  io::SafetensorsWriter w;
  for (int g = 0; g < layout.num_groups(); ++g)
    for (const TensorView& v : layout.groups()[g].tensors) add(w, v.name, v.shape, 'w', g, v.offset);
  w.set_metadata("format", "zpp-train");
  w.set_metadata("orientation", "out_in");
  for (auto it = metadata.begin(); it != metadata.end(); ++it)
    w.set_metadata(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  w.write(path);
}

}  // namespace

void save_weights(const fs::path& path, const FlatBuffers<float>& params, const nlohmann::json& metadata) {
  write_weights(path, params.layout(), host_tensors(params, nullptr), metadata);
}

void load_weights(const fs::path& path, FlatBuffers<float>& params, int group) {
  const io::SafetensorsFile f = open_weights_file(path, group);
  const ParamLayout& layout = params.layout();
  for (int g = 0; g < layout.num_groups(); ++g) {
    if (group >= 0 && g != group) continue;
    for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
      const TensorView& v = layout.groups()[g].tensors[t];
      copy_tensor(f, path, v.name, v.shape, params.tensor(g, t));
    }
  }
}

namespace {
std::string step_dir_name(std::int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step_%08lld", static_cast<long long>(step));
  return buf;
}

std::vector<fs::path> complete_checkpoints(const fs::path& root) {
  std::vector<fs::path> out;
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && e.path().filename().string().starts_with("step_") && fs::exists(e.path() / "DONE"))
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

namespace {
fs::path write_checkpoint(const fs::path& root, std::int64_t step, const ParamLayout& layout, std::int64_t adam_steps,
                          const AddTensor& add, const nlohmann::json& state, int keep) {
  const fs::path dir = checkpoint_folder(root, step);
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw IoError("cannot create checkpoint folder " + dir.string() + ": " + ec.message());
  write_weights(dir / "model.safetensors", layout, add, {});
  io::SafetensorsWriter w;
  for (int g = 0; g < layout.num_groups(); ++g) {
    const auto n = static_cast<std::int64_t>(layout.groups()[g].size);
    add(w, "m/" + layout.groups()[g].name, {n}, 'm', g, 0);
    add(w, "v/" + layout.groups()[g].name, {n}, 'v', g, 0);
  }
  w.set_metadata("adam_steps", std::to_string(adam_steps));
  w.write(dir / "optimizer.safetensors");
  nlohmann::json s = state;
  s["step"] = step;
  write_file_atomic(dir / "state.json", s.dump(2) + "\n");
  write_file_atomic(dir / "DONE", "");
  prune_checkpoints(root, keep);
  return dir;
}
}  // namespace

fs::path save_checkpoint(const fs::path& root, std::int64_t step, const FlatBuffers<float>& params,
                         AdamW<float>& opt, const nlohmann::json& state, int keep) {
  return write_checkpoint(root, step, params.layout(), opt.steps_taken(), host_tensors(params, &opt), state, keep);
}

fs::path save_checkpoint(const fs::path& root, std::int64_t step, const ParamLayout& layout, std::int64_t adam_steps,
                         const StateCopy& copy, const nlohmann::json& state, int keep) {
  return write_checkpoint(root, step, layout, adam_steps, copied_tensors(copy), state, keep);
}

fs::path checkpoint_folder(const fs::path& root, std::int64_t step) { return root / step_dir_name(step); }

void prune_checkpoints(const fs::path& root, int keep) {
  const auto all = complete_checkpoints(root);
  std::error_code ec;
  for (std::size_t i = 0; keep > 0 && i + static_cast<std::size_t>(keep) < all.size(); ++i) fs::remove_all(all[i], ec);
}

std::optional<fs::path> latest_checkpoint(const fs::path& root) {
  const auto all = complete_checkpoints(root);
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::optional<ResumePoint> find_resume_point(const RunDir& run, bool resume, std::int64_t train_iters,
                                             const std::string& command) {
  const auto existing = latest_checkpoint(run.checkpoints());
  if (existing && !resume)
    throw UsageError("--out " + run.path().string() + " already holds a run (checkpoint " + existing->string() +
                     "): pass --resume to continue it, or " + command + " into another --out");
  if (!resume) return std::nullopt;
  if (!existing) {
    log::warn("--resume: no complete checkpoint under {}; starting from scratch", run.checkpoints().string());
    return std::nullopt;
  }
  ResumePoint point{*existing, read_checkpoint_state(*existing)};
  point.step = point.state.at("step").get<std::int64_t>();
  if (point.step > train_iters)
    throw UsageError("--resume: checkpoint " + existing->string() + " is at step " + std::to_string(point.step) +
                     ", past train_iters = " + std::to_string(train_iters));
  return point;
}

nlohmann::json model_state_json(const ModelConfig& m) {
  return {{"arch", m.arch},
          {"n_layer", m.n_layer},
          {"n_head", m.n_head},
          {"n_embd", m.n_embd},
          {"n_positions", m.n_positions},
          {"vocab_size", m.vocab_size},
          {"vocab_pad_to", m.vocab_pad_to},
          {"type_vocab_size", m.type_vocab_size},
          {"num_labels", m.num_labels},
          {"layer_norm_eps", m.layer_norm_eps},
          {"init_std", m.init_std}};
}

ModelConfig model_config_from_state(const nlohmann::json& s, const fs::path& dir) {
  try {
    const auto& m = s.at("model");
    ModelConfig c;
    c.arch = m.at("arch").get<std::string>();
    c.n_layer = m.at("n_layer");
    c.n_head = m.at("n_head");
    c.n_embd = m.at("n_embd");
    c.n_positions = m.at("n_positions");
    c.vocab_size = m.at("vocab_size");
    c.vocab_pad_to = m.at("vocab_pad_to");
    c.type_vocab_size = m.at("type_vocab_size");
    c.num_labels = m.at("num_labels");
    c.layer_norm_eps = m.at("layer_norm_eps");
    c.validate();
    return c;
  } catch (const std::exception& e) {
    throw DataError((dir / "state.json").string() + ": bad model description: " + e.what());
  }
}

nlohmann::json read_checkpoint_state(const fs::path& dir) {
  const fs::path p = dir / "state.json";
  std::ifstream f(p);
  if (!f) throw InputMissingError("checkpoint: cannot open " + p.string());
  nlohmann::json s;
  try {
    s = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(p.string() + ": " + e.what());
  }
  // The keys readers use, with their types: a wrong one is malformed input, not an internal error.
  const auto bad = [&p](const std::string& what) { return DataError(p.string() + ": " + what); };
  if (!s.is_object()) throw bad("expected a JSON object");
  if (!s.contains("step") || !s["step"].is_number_integer() || s["step"].get<std::int64_t>() < 0)
    throw bad("'step' must be an integer >= 0");
  if (dir.filename().string().starts_with("step_") && dir.filename().string() != step_dir_name(s["step"].get<std::int64_t>()))
    throw bad("'step' = " + s["step"].dump() + " does not match the folder " + dir.filename().string());
  if (s.contains("model") && !s["model"].is_object()) throw bad("'model' must be an object");
  if (s.contains("tokenizer") && !s["tokenizer"].is_string()) throw bad("'tokenizer' must be a string");
  if (s.contains("threads") && !s["threads"].is_number_integer()) throw bad("'threads' must be an integer");
  return s;
}

namespace {
std::int64_t adam_steps_of(const io::SafetensorsFile& f, const fs::path& op) {
  const auto it = f.metadata().find("adam_steps");
  if (it == f.metadata().end()) throw DataError(op.string() + ": metadata 'adam_steps' is missing");
  std::int64_t steps = -1;
  const auto& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), steps);
  if (ec != std::errc() || end != text.data() + text.size() || steps < 0)
    throw DataError(op.string() + ": metadata 'adam_steps' = '" + text + "' is not an integer >= 0");
  return steps;
}
}  // namespace

std::int64_t checkpoint_adam_steps(const fs::path& dir) {
  const fs::path op = dir / "optimizer.safetensors";
  return adam_steps_of(io::SafetensorsFile(op, io::SafetensorsFile::Mode::mmap), op);
}

nlohmann::json load_checkpoint(const fs::path& dir, FlatBuffers<float>& params, AdamW<float>& opt, int group) {
  if (!fs::exists(dir / "DONE")) throw DataError("checkpoint " + dir.string() + " is incomplete (no DONE marker)");
  const nlohmann::json state = read_checkpoint_state(dir);
  load_weights(dir / "model.safetensors", params, group);
  const fs::path op = dir / "optimizer.safetensors";
  const io::SafetensorsFile f = open_weights_file(op, group);
  const ParamLayout& layout = params.layout();
  for (int g = 0; g < layout.num_groups(); ++g) {
    if (group >= 0 && g != group) continue;
    const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(layout.groups()[g].size)};
    copy_tensor(f, op, "m/" + layout.groups()[g].name, shape, opt.m().group(g));
    copy_tensor(f, op, "v/" + layout.groups()[g].name, shape, opt.v().group(g));
  }
  opt.set_steps_taken(adam_steps_of(f, op));
  return state;
}

// Keeps the records of metrics.jsonl up to `step` (those a resumed run does not write again): a run
// killed after its last checkpoint left records past it, and its last line may be cut short.
void trim_metrics(const fs::path& file, std::int64_t step) {
  std::ifstream in(file);
  if (!in) return;
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const auto rec = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!rec.is_object() || rec.value("step", std::int64_t(0)) > step) {
      dropped = true;
      continue;
    }
    kept += line + "\n";
  }
  in.close();
  if (dropped) write_file_atomic(file, kept);
}

}  // namespace core::train
