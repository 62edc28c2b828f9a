// Hugging Face GPT-2 safetensors and llm.c checkpoint import/export (formats in interop.hpp).
#include "train/interop.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "common/rundir.hpp"
#include "io/safetensors.hpp"

namespace core::train {

namespace {

void require_gpt(const ParamLayout& layout, const char* what) {
  if (layout.config().architecture() != Arch::gpt) throw UsageError(std::string(what) + " needs a GPT model (model.arch = gpt)");
}

bool is_conv1d(BlockTensor t) { return t == kQkvW || t == kAttnProjW || t == kFcW || t == kFcProjW; }

// out[c, r] = in[r, c] for a rows x cols matrix.
void transpose(const float* in, float* out, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
}

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string o = "[";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

}  // namespace

void check_finite(const fs::path& file, const std::string& tensor, std::span<const float> values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw DataError(file.string() + ": tensor '" + tensor + "' holds " + std::to_string(values[i]) + " at element " +
                      std::to_string(i) + " (weights must be finite)");
}

std::vector<float> read_weights_tensor(const io::SafetensorsFile& f, const fs::path& file, const std::string& name) {
  std::vector<float> v;
  try {
    v = io::to_f32(f.get(name));
  } catch (const DataError& e) {
    throw DataError(file.string() + ": " + e.what());
  }
  check_finite(file, name, v);
  return v;
}

io::SafetensorsFile open_weights_file(const fs::path& path, int group) {
  return io::SafetensorsFile(path, group >= 0 ? io::SafetensorsFile::Mode::mmap : io::SafetensorsFile::Mode::read);
}

void save_hf_gpt2(const fs::path& path, const FlatBuffers<float>& params) {
  const ParamLayout& layout = params.layout();
  require_gpt(layout, "GPT-2 safetensors export");
  const ModelConfig& c = layout.config();
  io::SafetensorsWriter w;
  const std::int64_t C = c.n_embd, V = c.vocab_size;
  w.add_view<float>("wte.weight", {V, C}, std::span<const float>(params.embed(kWte), std::size_t(V * C)));
  for (EmbedTensor t : {kWpe, kLnfW, kLnfB}) {
    const auto& v = layout.embed(t);
    w.add_view<float>(v.name, v.shape, std::span<const float>(params.embed(t), v.numel));
  }
  std::vector<float> tmp;
  for (int l = 0; l < c.n_layer; ++l)
    for (int t = 0; t < kBlockTensors; ++t) {
      const auto& v = layout.block(l, BlockTensor(t));
      const float* p = params.block(l, BlockTensor(t));
      if (is_conv1d(BlockTensor(t))) {
        tmp.resize(v.numel);
        transpose(p, tmp.data(), v.shape[0], v.shape[1]);
        w.add<float>(v.name, {v.shape[1], v.shape[0]}, std::span<const float>(tmp));
      } else {
        w.add_view<float>(v.name, v.shape, std::span<const float>(p, v.numel));  // transposed ones are copies
      }
    }
  w.set_metadata("format", "pt");
  w.write(path);
}

void load_hf_gpt2(const fs::path& path, FlatBuffers<float>& params, int group) {
  const ParamLayout& layout = params.layout();
  require_gpt(layout, "GPT-2 safetensors import");
  const io::SafetensorsFile f = open_weights_file(path, group);
  const std::string prefix = f.contains("transformer.wte.weight") ? "transformer." : "";
  auto fetch = [&](const std::string& name, std::vector<std::int64_t> shape) {
    const std::string full = prefix + name;
    if (!f.contains(full)) throw DataError(path.string() + ": tensor '" + full + "' is missing");
    const io::TensorView t = f.get(full);
    if (t.shape != shape)
      throw DataError(path.string() + ": tensor '" + full + "' has shape " + shape_str(t.shape) + ", the model needs " +
                      shape_str(shape));
    return read_weights_tensor(f, path, full);
  };
  const ModelConfig& c = layout.config();
  const std::int64_t C = c.n_embd, V = c.vocab_size;
  const std::string extra = prefix + "h." + std::to_string(c.n_layer) + ".ln_1.weight";
  if (f.contains(extra))
    throw DataError(path.string() + ": the file has more than model.n_layer = " + std::to_string(c.n_layer) + " blocks");
  if (group <= 0) {
    const auto wte = fetch("wte.weight", {V, C});
    std::memset(params.embed(kWte), 0, layout.embed(kWte).numel * sizeof(float));
    std::memcpy(params.embed(kWte), wte.data(), wte.size() * sizeof(float));
    for (EmbedTensor t : {kWpe, kLnfW, kLnfB}) {
      const auto& v = layout.embed(t);
      const auto x = fetch(v.name, v.shape);
      std::memcpy(params.embed(t), x.data(), x.size() * sizeof(float));
    }
  }
  for (int l = 0; l < c.n_layer; ++l) {
    if (group >= 0 && ParamLayout::block_group(l) != group) continue;
    for (int t = 0; t < kBlockTensors; ++t) {
      const auto& v = layout.block(l, BlockTensor(t));
      float* p = params.block(l, BlockTensor(t));
      if (is_conv1d(BlockTensor(t))) {
        const auto x = fetch(v.name, {v.shape[1], v.shape[0]});
        transpose(x.data(), p, v.shape[1], v.shape[0]);
      } else {
        const auto x = fetch(v.name, v.shape);
        std::memcpy(p, x.data(), x.size() * sizeof(float));
      }
    }
  }
}

namespace {

constexpr std::int32_t kLlmcMagic = 20240326;
constexpr std::int32_t kLlmcVersion = 3;

// The (tensor, layer) sequence of llm.c's parameter order; layer -1 for embed-group tensors.
template <class F>
void for_each_llmc_tensor(const ModelConfig& c, F&& f) {
  f(kWte, -1);
  f(kWpe, -1);
  for (BlockTensor t : {kLn1W, kLn1B, kQkvW, kQkvB, kAttnProjW, kAttnProjB, kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB})
    for (int l = 0; l < c.n_layer; ++l) f(t, l);
  f(kLnfW, -1);
  f(kLnfB, -1);
}

std::vector<std::int32_t> read_header(std::ifstream& in, const fs::path& path) {
  std::vector<std::int32_t> h(256);
  in.read(reinterpret_cast<char*>(h.data()), 256 * sizeof(std::int32_t));
  if (!in) throw DataError(path.string() + ": truncated llm.c header (needs 1024 bytes)");
  if (h[0] != kLlmcMagic)
    throw DataError(path.string() + ": bad magic " + std::to_string(h[0]) + " (llm.c model files have " +
                    std::to_string(kLlmcMagic) + ")");
  if (h[1] != kLlmcVersion)
    throw DataError(path.string() + ": llm.c version " + std::to_string(h[1]) +
                    " is not supported (only version 3, float32 parameters)");
  return h;
}

std::ifstream open_in(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputMissingError("cannot open llm.c checkpoint " + path.string());
  return in;
}

}  // namespace

ModelConfig read_llmc_config(const fs::path& path) {
  auto in = open_in(path);
  const auto h = read_header(in, path);
  ModelConfig c;
  c.arch = "gpt";
  c.n_positions = h[2];
  c.vocab_size = h[3];
  c.n_layer = h[4];
  c.n_head = h[5];
  c.n_embd = h[6];
  const int Vp = h[7];
  if (Vp < c.vocab_size || c.vocab_size <= 0)
    throw DataError(path.string() + ": padded vocabulary " + std::to_string(Vp) + " is smaller than V = " +
                    std::to_string(c.vocab_size));
  c.vocab_pad_to = (Vp % 128 == 0 && (c.vocab_size + 127) / 128 * 128 == Vp) ? 128 : Vp;
  try {
    c.validate();
  } catch (const UsageError& e) {
    throw DataError(path.string() + ": header describes an invalid model: " + e.what());
  }
  std::error_code ec;
  const std::uint64_t have = fs::file_size(path, ec);
  const std::uint64_t want = 256 * sizeof(std::int32_t) + static_cast<std::uint64_t>(c.parameter_count()) * sizeof(float);
  if (!ec && have != want)
    throw DataError(path.string() + ": header describes " + std::to_string(c.parameter_count()) +
                    " float32 parameters (" + std::to_string(want) + " bytes with the header) but the file has " +
                    std::to_string(have) + " bytes");
  return c;
}

void load_llmc_checkpoint(const fs::path& path, FlatBuffers<float>& params, int group) {
  const ParamLayout& layout = params.layout();
  require_gpt(layout, "llm.c checkpoint import");
  const ModelConfig file_cfg = read_llmc_config(path);
  const ModelConfig& c = layout.config();
  if (file_cfg.n_layer != c.n_layer || file_cfg.n_head != c.n_head || file_cfg.n_embd != c.n_embd ||
      file_cfg.n_positions != c.n_positions || file_cfg.vocab_size != c.vocab_size ||
      file_cfg.padded_vocab() != c.padded_vocab())
    throw DataError(path.string() + ": model shape (L=" + std::to_string(file_cfg.n_layer) + ", NH=" +
                    std::to_string(file_cfg.n_head) + ", C=" + std::to_string(file_cfg.n_embd) + ", maxT=" +
                    std::to_string(file_cfg.n_positions) + ", V=" + std::to_string(file_cfg.vocab_size) + ", Vp=" +
                    std::to_string(file_cfg.padded_vocab()) + ") differs from the configured model");
  auto in = open_in(path);
  std::uint64_t offset = 256 * sizeof(std::int32_t);  // of the next tensor in the file
  for_each_llmc_tensor(c, [&](int t, int l) {
    const TensorView& v = l < 0 ? layout.embed(EmbedTensor(t)) : layout.block(l, BlockTensor(t));
    const std::uint64_t at = offset;
    offset += v.numel * sizeof(float);
    if (group >= 0 && (l < 0 ? 0 : ParamLayout::block_group(l)) != group) return;
    float* p = l < 0 ? params.embed(EmbedTensor(t)) : params.block(l, BlockTensor(t));
    in.seekg(static_cast<std::streamoff>(at));
    in.read(reinterpret_cast<char*>(p), static_cast<std::streamsize>(v.numel * sizeof(float)));
    if (!in) throw DataError(path.string() + ": truncated while reading '" + v.name + "'");
    check_finite(path, v.name, {p, v.numel});
  });
  in.seekg(static_cast<std::streamoff>(offset));
  in.peek();
  if (!in.eof()) throw DataError(path.string() + ": trailing bytes after the last parameter");
}

void save_llmc_checkpoint(const fs::path& path, const FlatBuffers<float>& params) {
  const ParamLayout& layout = params.layout();
  require_gpt(layout, "llm.c checkpoint export");
  const ModelConfig& c = layout.config();
  std::vector<std::int32_t> h(256, 0);
  h[0] = kLlmcMagic;
  h[1] = kLlmcVersion;
  h[2] = c.n_positions;
  h[3] = c.vocab_size;
  h[4] = c.n_layer;
  h[5] = c.n_head;
  h[6] = c.n_embd;
  h[7] = c.padded_vocab();
  std::string bytes(reinterpret_cast<const char*>(h.data()), h.size() * sizeof(std::int32_t));
  for_each_llmc_tensor(c, [&](int t, int l) {
    const TensorView& v = l < 0 ? layout.embed(EmbedTensor(t)) : layout.block(l, BlockTensor(t));
    const float* p = l < 0 ? params.embed(EmbedTensor(t)) : params.block(l, BlockTensor(t));
    bytes.append(reinterpret_cast<const char*>(p), v.numel * sizeof(float));
  });
  write_file_atomic(path, bytes);
}

}  // namespace core::train
