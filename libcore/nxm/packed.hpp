// The packed nxm artifact: a safetensors file that holds each compressed matrix as
//   <name>.values   kept values in row order: I8 codes [rows, kept], U8 int4 codes [rows, ceil(kept/2)]
//                   (two per byte, low nibble first, two's complement in [-7, 7]), F16 or F32 values
//   <name>.scales   F32 [rows], the per-row scale s (8- and 4-bit settings): weight = code * s
//   <name>.indices  U8 [rows, ceil(kept * b / 8)], N:M settings: the position of each kept value within
//                   its group, b = ceil(log2 group) bits each, LSB first (2 bits per kept value for 2:4,
//                   so a 2:4 group's byte nibble is idx0 | idx1 << 2)
// with kept = cols keep / group (cols for a dense setting), every other tensor of the model as F32
// under its own name, and JSON metadata "nxm" (format, model, tokenizer, plan, matrices, task).
// pack(W) stores Q(Pi(W)) exactly: unpack gives the same floats as compress_matrix(W).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.hpp"
#include "nxm/plan.hpp"
#include "train/params.hpp"

namespace core::nxm {

namespace fs = std::filesystem;

inline constexpr const char* kPackedFormat = "nxm-packed-1";

struct PackedMatrix {
  std::string name;
  std::int64_t rows = 0, cols = 0;
  Setting setting;
  std::vector<std::uint8_t> values;   // [rows * value_row_bytes()]
  std::vector<float> scales;          // [rows] for 8/4 bits, empty otherwise
  std::vector<std::uint8_t> indices;  // [rows * index_row_bytes()] for N:M, empty otherwise

  std::int64_t kept_per_row() const { return setting.sparse() ? cols / setting.group * setting.keep : cols; }
  std::int64_t value_row_bytes() const;
  std::int64_t index_row_bytes() const { return (kept_per_row() * setting.index_bits() + 7) / 8; }
  // The kept values of row r as floats and their columns.
  void row(std::int64_t r, std::vector<float>& vals, std::vector<std::int32_t>& cols) const;
  std::int32_t code(std::int64_t r, std::int64_t k) const;  // 8/4 bits: the k-th kept code of row r
  std::vector<float> unpack() const;  // dense [rows, cols]
  // DataError naming the tensor: index out of its group or not increasing, code out of range,
  // scale negative or not finite, sizes not matching the shape.
  void validate() const;
};

// Packs Q(Pi(W)) of W [rows, cols] (DataError naming the tensor when cols % group != 0).
PackedMatrix pack_matrix(const std::string& name, const float* w, std::int64_t rows, std::int64_t cols,
                         const Setting& s);

// The component matrices of a model: (block group, tensor) of every compressed matrix, with its
// component. GPT and BERT alike: h.L.attn.c_attn (qkv), attn.c_proj (ao), mlp.c_fc (ffn1), mlp.c_proj (ffn2).
struct ComponentMatrix {
  Component component;
  int layer;
  int group, tensor;  // in the layout
  std::string name;
  std::int64_t rows, cols;
};
std::vector<ComponentMatrix> component_matrices(const train::ParamLayout& layout);
// DataError naming the tensor when a component matrix's input width is not divisible by its group.
void check_plan_fits(const train::ParamLayout& layout, const Plan& plan);

// A whole packed model.
struct PackedModel {
  train::ModelConfig config;
  Plan plan;
  nlohmann::json info;                       // tokenizer, task, ... (metadata "nxm" minus the format keys)
  std::map<std::string, PackedMatrix> matrices;
  std::map<std::string, std::vector<float>> dense;  // every other tensor, F32

  // Fills params (laid out for config) with the decoded weights: every tensor of the layout.
  void unpack_into(train::FlatBuffers<float>& params) const;
};

// Packs a model's parameters under a plan (the component matrices compressed, the rest kept).
PackedModel pack_model(const train::FlatBuffers<float>& params, const Plan& plan, const nlohmann::json& info);
void write_packed(const fs::path& path, const PackedModel& model);
// Bytes of the dense fp32 safetensors file of a model's parameters (every tensor, no metadata).
std::uint64_t dense_fp32_file_bytes(const train::FlatBuffers<float>& params);
// Reads and validates (InputMissingError; DataError naming the file and the tensor for any defect).
PackedModel read_packed(const fs::path& path);
// True when the file is a safetensors file with nxm metadata (without validating the tensors).
bool is_packed_file(const fs::path& path);

}  // namespace core::nxm
