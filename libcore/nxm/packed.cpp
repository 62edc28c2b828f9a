// The packed nxm format (see packed.hpp).
#include "nxm/packed.hpp"

#include <cmath>
#include <cstring>

#include "common/errors.hpp"
#include "io/half.hpp"
#include "nxm/sparsity.hpp"
#include "train/checkpoint.hpp"

namespace core::nxm {

std::int64_t PackedMatrix::value_row_bytes() const {
  const std::int64_t k = kept_per_row();
  switch (setting.bits) {
    case 4: return (k + 1) / 2;
    case 8: return k;
    case 16: return 2 * k;
    default: return 4 * k;
  }
}

std::int32_t PackedMatrix::code(std::int64_t r, std::int64_t k) const {
  const std::uint8_t* v = values.data() + r * value_row_bytes();
  if (setting.bits == 8) return static_cast<std::int8_t>(v[k]);
  const int nib = (v[k / 2] >> (4 * (k % 2))) & 0xF;
  return nib >= 8 ? nib - 16 : nib;
}

void PackedMatrix::row(std::int64_t r, std::vector<float>& vals, std::vector<std::int32_t>& col) const {
  const std::int64_t K = kept_per_row();
  vals.resize(K);
  col.resize(K);
  const std::uint8_t* v = values.data() + r * value_row_bytes();
  for (std::int64_t k = 0; k < K; ++k) {
    if (setting.bits <= 8) {
      vals[k] = float(code(r, k)) * scales[r];
    } else if (setting.bits == 16) {
      std::uint16_t h;
      std::memcpy(&h, v + 2 * k, 2);
      vals[k] = io::f16_to_float(h);
    } else {
      std::memcpy(&vals[k], v + 4 * k, 4);
    }
  }
  if (!setting.sparse()) {
    for (std::int64_t k = 0; k < K; ++k) col[k] = static_cast<std::int32_t>(k);
    return;
  }
  const int ib = setting.index_bits();
  const std::uint8_t* idx = indices.data() + r * index_row_bytes();
  for (std::int64_t k = 0; k < K; ++k) {
    int pos = 0;
    for (int b = 0; b < ib; ++b) {
      const std::int64_t bit = k * ib + b;
      pos |= ((idx[bit / 8] >> (bit % 8)) & 1) << b;
    }
    col[k] = static_cast<std::int32_t>(k / setting.keep * setting.group + pos);
  }
}

std::vector<float> PackedMatrix::unpack() const {
  std::vector<float> w(static_cast<std::size_t>(rows * cols), 0.0f);
  std::vector<float> vals;
  std::vector<std::int32_t> col;
  for (std::int64_t r = 0; r < rows; ++r) {
    row(r, vals, col);
    for (std::size_t k = 0; k < vals.size(); ++k) w[r * cols + col[k]] = vals[k];
  }
  return w;
}

void PackedMatrix::validate() const {
  const auto fail = [&](const std::string& what) { throw DataError("packed tensor " + name + ": " + what); };
  if (rows < 1 || cols < 1) fail("empty shape");
  if (setting.sparse() && cols % setting.group != 0)
    fail(std::to_string(cols) + " columns are not divisible by the group " + std::to_string(setting.group));
  if (std::int64_t(values.size()) != rows * value_row_bytes()) fail(".values has the wrong size");
  if (setting.quantized() && std::int64_t(scales.size()) != rows) fail(".scales has the wrong size");
  if (setting.sparse() && std::int64_t(indices.size()) != rows * index_row_bytes()) fail(".indices has the wrong size");
  for (std::size_t r = 0; r < scales.size(); ++r)
    if (!std::isfinite(scales[r]) || scales[r] < 0) fail(".scales row " + std::to_string(r) + " is negative or not finite");
  const std::int64_t K = kept_per_row();
  if (setting.quantized()) {
    const int q = quant_max(setting.bits);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < K; ++k)
        if (std::abs(code(r, k)) > q)
          fail(".values row " + std::to_string(r) + " holds code " + std::to_string(code(r, k)) + " outside [-" +
               std::to_string(q) + ", " + std::to_string(q) + "]");
  } else {
    std::vector<float> vals;
    std::vector<std::int32_t> col;
    for (std::int64_t r = 0; r < rows; ++r) {
      row(r, vals, col);
      for (float x : vals)
        if (!std::isfinite(x)) fail(".values row " + std::to_string(r) + " holds a value that is not finite");
    }
  }
  if (setting.sparse()) {
    std::vector<float> vals;
    std::vector<std::int32_t> col;
    for (std::int64_t r = 0; r < rows; ++r) {
      row(r, vals, col);
      for (std::int64_t k = 0; k < K; ++k) {
        const std::int64_t g = k / setting.keep;
        if (col[k] >= (g + 1) * setting.group || (k % setting.keep != 0 && col[k] <= col[k - 1]))
          fail(".indices row " + std::to_string(r) + ": kept value " + std::to_string(k) +
               " has a position outside its group or not after the previous one");
      }
    }
  }
}

PackedMatrix pack_matrix(const std::string& name, const float* w, std::int64_t rows, std::int64_t cols,
                         const Setting& s) {
  check_nm_shape(cols, s, name);
  PackedMatrix p;
  p.name = name;
  p.rows = rows;
  p.cols = cols;
  p.setting = s;
  std::vector<float> pruned(w, w + rows * cols);
  std::vector<std::uint8_t> mask(pruned.size());
  nm_mask(pruned.data(), rows, cols, s, mask.data(), name);
  for (std::size_t i = 0; i < pruned.size(); ++i)
    if (!mask[i]) pruned[i] = 0.0f;
  const std::int64_t K = p.kept_per_row();
  p.values.assign(rows * p.value_row_bytes(), 0);
  if (s.sparse()) p.indices.assign(rows * p.index_row_bytes(), 0);
  QuantizedMatrix q;
  if (s.quantized()) {
    q = quantize_rows(pruned.data(), rows, cols, s.bits);
    p.scales = q.scales;
  }
  const int ib = s.index_bits();
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint8_t* v = p.values.data() + r * p.value_row_bytes();
    std::uint8_t* idx = s.sparse() ? p.indices.data() + r * p.index_row_bytes() : nullptr;
    std::int64_t k = 0;
    for (std::int64_t j = 0; j < cols; ++j) {
      if (!mask[r * cols + j]) continue;
      const float x = pruned[r * cols + j];
      if (s.bits == 8) {
        v[k] = static_cast<std::uint8_t>(q.codes[r * cols + j]);
      } else if (s.bits == 4) {
        v[k / 2] |= static_cast<std::uint8_t>((q.codes[r * cols + j] & 0xF) << (4 * (k % 2)));
      } else if (s.bits == 16) {
        const std::uint16_t h = io::float_to_f16(x);
        std::memcpy(v + 2 * k, &h, 2);
      } else {
        std::memcpy(v + 4 * k, &x, 4);
      }
      if (idx) {
        const int pos = static_cast<int>(j % s.group);
        for (int b = 0; b < ib; ++b)
          if (pos >> b & 1) idx[(k * ib + b) / 8] |= std::uint8_t(1u << ((k * ib + b) % 8));
      }
      ++k;
    }
    if (k != K) throw Error(ExitCode::internal, "pack_matrix: kept count mismatch in " + name);
  }
  return p;
}

std::vector<ComponentMatrix> component_matrices(const train::ParamLayout& layout) {
  static constexpr train::BlockTensor kTensor[] = {train::kQkvW, train::kAttnProjW, train::kFcW, train::kFcProjW};
  std::vector<ComponentMatrix> out;
  for (int l = 0; l < layout.config().n_layer; ++l)
    for (Component c : kComponents) {
      const int t = kTensor[static_cast<int>(c)];
      const auto& view = layout.block(l, static_cast<train::BlockTensor>(t));
      out.push_back({c, l, train::ParamLayout::block_group(l), t, view.name, view.shape[0], view.shape[1]});
    }
  return out;
}

void check_plan_fits(const train::ParamLayout& layout, const Plan& plan) {
  for (const auto& m : component_matrices(layout)) check_nm_shape(m.cols, plan[m.component], m.name);
}

void PackedModel::unpack_into(train::FlatBuffers<float>& params) const {
  const auto& layout = params.layout();
  for (int g = 0; g < layout.num_groups(); ++g)
    for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
      const auto& view = layout.groups()[g].tensors[t];
      float* dst = params.tensor(g, t);
      if (auto it = matrices.find(view.name); it != matrices.end()) {
        const auto w = it->second.unpack();
        std::memcpy(dst, w.data(), w.size() * sizeof(float));
      } else if (auto d = dense.find(view.name); d != dense.end()) {
        if (d->second.size() != view.numel) throw DataError("packed tensor " + view.name + ": wrong element count");
        std::memcpy(dst, d->second.data(), view.numel * sizeof(float));
      } else {
        throw DataError("packed model lacks tensor " + view.name);
      }
    }
}

PackedModel pack_model(const train::FlatBuffers<float>& params, const Plan& plan, const nlohmann::json& info) {
  const auto& layout = params.layout();
  check_plan_fits(layout, plan);
  PackedModel m;
  m.config = layout.config();
  m.plan = plan;
  m.info = info;
  for (const auto& c : component_matrices(layout))
    m.matrices.emplace(c.name, pack_matrix(c.name, params.tensor(c.group, c.tensor), c.rows, c.cols, plan[c.component]));
  for (int g = 0; g < layout.num_groups(); ++g)
    for (int t = 0; t < static_cast<int>(layout.groups()[g].tensors.size()); ++t) {
      const auto& view = layout.groups()[g].tensors[t];
      if (m.matrices.count(view.name)) continue;
      const float* src = params.tensor(g, t);
      m.dense.emplace(view.name, std::vector<float>(src, src + view.numel));
    }
  return m;
}

void write_packed(const fs::path& path, const PackedModel& model) {
  io::SafetensorsWriter w;
  nlohmann::json matrices = nlohmann::json::object();
  for (const auto& [name, p] : model.matrices) {
    matrices[name] = {{"rows", p.rows}, {"cols", p.cols}, {"setting", p.setting.to_string()}};
    const std::string vdtype = p.setting.bits == 8 ? "I8" : p.setting.bits == 4 ? "U8" : p.setting.bits == 16 ? "F16" : "F32";
    const std::int64_t vcols = p.setting.bits == 16 ? p.kept_per_row() : p.setting.bits == 32 ? p.kept_per_row() : p.value_row_bytes();
    w.add(name + ".values", vdtype, {p.rows, vcols}, std::as_bytes(std::span(p.values)));
    if (!p.scales.empty()) w.add<float>(name + ".scales", {p.rows}, std::span<const float>(p.scales));
    if (!p.indices.empty()) w.add(name + ".indices", "U8", {p.rows, p.index_row_bytes()}, std::as_bytes(std::span(p.indices)));
  }
  const auto& layout_probe = train::ParamLayout(model.config);
  for (const auto& [name, values] : model.dense) {
    const auto [g, t] = layout_probe.find(name);
    w.add<float>(name, layout_probe.groups()[g].tensors[t].shape, std::span<const float>(values));
  }
  nlohmann::json meta = model.info;
  meta["format"] = kPackedFormat;
  meta["model"] = train::model_state_json(model.config);
  meta["plan"] = model.plan.to_string();
  meta["matrices"] = matrices;
  w.set_metadata("nxm", meta.dump());
  w.write(path);
}

std::uint64_t dense_fp32_file_bytes(const train::FlatBuffers<float>& params) {
  const train::ParamLayout& layout = params.layout();
  io::SafetensorsWriter w;
  for (const auto& g : layout.groups())
    for (const auto& v : g.tensors) {
      const auto [gi, ti] = layout.find(v.name);
      w.add_view(v.name, "F32", v.shape, std::as_bytes(std::span<const float>(params.tensor(gi, ti), v.numel)));
    }
  return w.serialize().size();
}

bool is_packed_file(const fs::path& path) {
  if (!fs::is_regular_file(path)) return false;
  try {
    const io::SafetensorsFile f(path, io::SafetensorsFile::Mode::mmap);
    return f.metadata().count("nxm") != 0;
  } catch (const Error&) {
    return false;
  }
}

PackedModel read_packed(const fs::path& path) {
  const io::SafetensorsFile f(path, io::SafetensorsFile::Mode::mmap);
  const std::string src = path.string();
  const auto it = f.metadata().find("nxm");
  if (it == f.metadata().end()) throw DataError(src + ": not a packed nxm model (no 'nxm' metadata)");
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(src + ": metadata 'nxm' is not valid JSON: " + e.what());
  }
  if (meta.value("format", "") != kPackedFormat)
    throw DataError(src + ": metadata 'nxm' format is not " + std::string(kPackedFormat));
  PackedModel m;
  try {
    try {
      m.config = train::model_config_from_state(nlohmann::json{{"model", meta.at("model")}}, path.parent_path());
    } catch (const DataError& e) {
      throw DataError(src + ": metadata 'nxm' model: " + e.what());
    }
    m.plan = parse_plan(meta.at("plan").get<std::string>());
    for (const auto& [name, d] : meta.at("matrices").items()) {
      PackedMatrix p;
      p.name = name;
      p.rows = d.at("rows").get<std::int64_t>();
      p.cols = d.at("cols").get<std::int64_t>();
      p.setting = parse_setting(d.at("setting").get<std::string>(), "matrix " + name);
      m.matrices.emplace(name, std::move(p));
    }
  } catch (const nlohmann::json::exception& e) {
    throw DataError(src + ": metadata 'nxm' is malformed: " + e.what());
  } catch (const UsageError& e) {
    throw DataError(src + ": metadata 'nxm': " + e.what());
  }
  for (const char* key : {"format", "model", "plan", "matrices"}) meta.erase(key);
  m.info = meta;
  const auto bytes_of = [&](const std::string& tensor, const char* dtype, std::int64_t n_bytes) {
    const io::TensorView t = f.get(tensor);
    if (t.dtype != dtype || std::int64_t(t.bytes.size()) != n_bytes)
      throw DataError(src + ": packed tensor " + tensor + " has dtype " + t.dtype + " and " +
                      std::to_string(t.bytes.size()) + " bytes, expected " + dtype + " and " + std::to_string(n_bytes));
    return t.bytes;
  };
  for (auto& [name, p] : m.matrices) {
    const char* vdtype = p.setting.bits == 8 ? "I8" : p.setting.bits == 4 ? "U8" : p.setting.bits == 16 ? "F16" : "F32";
    const auto vb = bytes_of(name + ".values", vdtype, p.rows * p.value_row_bytes());
    p.values.resize(vb.size());
    std::memcpy(p.values.data(), vb.data(), vb.size());
    if (p.setting.quantized()) {
      const auto sb = bytes_of(name + ".scales", "F32", p.rows * 4);
      p.scales.resize(p.rows);
      std::memcpy(p.scales.data(), sb.data(), sb.size());
    }
    if (p.setting.sparse()) {
      const auto ib = bytes_of(name + ".indices", "U8", p.rows * p.index_row_bytes());
      p.indices.resize(ib.size());
      std::memcpy(p.indices.data(), ib.data(), ib.size());
    }
    try {
      p.validate();
    } catch (const DataError& e) {
      throw DataError(src + ": " + e.what());
    }
  }
  const train::ParamLayout layout(m.config);
  for (const auto& c : component_matrices(layout)) {
    const auto pm = m.matrices.find(c.name);
    if (pm == m.matrices.end()) throw DataError(src + ": packed model lacks component matrix " + c.name);
    if (pm->second.rows != c.rows || pm->second.cols != c.cols)
      throw DataError(src + ": packed tensor " + c.name + " has shape [" + std::to_string(pm->second.rows) + ", " +
                      std::to_string(pm->second.cols) + "], the model needs [" + std::to_string(c.rows) + ", " +
                      std::to_string(c.cols) + "]");
  }
  for (const auto& g : layout.groups())
    for (const auto& view : g.tensors) {
      if (m.matrices.count(view.name)) continue;
      if (!f.contains(view.name)) throw DataError(src + ": packed model lacks tensor " + view.name);
      const io::TensorView t = f.get(view.name);
      if (t.dtype != "F32" || t.shape != view.shape)
        throw DataError(src + ": packed tensor " + view.name + " is not F32 of the model's shape");
      std::vector<float> v(view.numel);
      std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
      for (float x : v)
        if (!std::isfinite(x)) throw DataError(src + ": packed tensor " + view.name + " holds a value that is not finite");
      m.dense.emplace(view.name, std::move(v));
    }
  return m;
}

}  // namespace core::nxm
