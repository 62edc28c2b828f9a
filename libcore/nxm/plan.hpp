// Compression plans of nxm-compress: for each component of a transformer block (the fused Q/K/V
// projection `qkv`, the attention output `ao`, the FFN's `ffn1` and `ffn2`), the N:M sparsity
// (keep `keep` of every `group` consecutive weights along the input dimension, or dense) and the
// weight precision in bits (32 fp32, 16 fp16, 8 or 4 symmetric per-output-row integers). Plans are
// written `qkv=2:4:8,ao=dense:8,ffn1=2:4:4,ffn2=1:4:8` (S:B with S = dense or keep:group).
//
// Compression ratio (NxMTransformer / NxMiFormer count weights only): for every component matrix of
// `rows` x `cols` weights, kept = rows cols keep / group values of B bits;
//   cr_paper    = 1 - sum(kept B) / sum(rows cols 32)                       (metadata ignored)
//   cr_hardware = 1 - sum(kept (B + index_bits) + scale_bits) / sum(rows cols 32)
// with index_bits = ceil(log2 group) per kept value (2 for 2:4, the sparse tensor cores' metadata)
// and one fp32 scale per row for 8- and 4-bit components (what the packed file stores).
#pragma once
#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace core::nxm {

enum class Component : int { qkv, ao, ffn1, ffn2 };
inline constexpr std::array<Component, 4> kComponents = {Component::qkv, Component::ao, Component::ffn1,
                                                         Component::ffn2};
std::string_view component_key(Component c);  // "qkv", "ao", "ffn1", "ffn2"

struct Setting {
  int keep = 0, group = 0;  // group 0: dense
  int bits = 32;            // 32, 16, 8 or 4

  bool sparse() const { return group > 0; }
  double density() const { return sparse() ? double(keep) / group : 1.0; }
  int index_bits() const;   // ceil(log2 group) for sparse, 0 dense
  bool quantized() const { return bits <= 8; }
  std::string to_string() const;  // "2:4:8", "dense:32"
  bool operator==(const Setting&) const = default;
};

// "2:4:8", "dense:16"; UsageError naming `what` for keep >= group, keep < 1, bits not in {32,16,8,4}.
Setting parse_setting(std::string_view text, const std::string& what);

struct Plan {
  std::array<Setting, 4> settings;  // by Component
  Setting& operator[](Component c) { return settings[static_cast<int>(c)]; }
  const Setting& operator[](Component c) const { return settings[static_cast<int>(c)]; }
  std::string to_string() const;
  bool operator==(const Plan&) const = default;
  // The same setting for every component.
  static Plan uniform(const Setting& s) {
    Plan p;
    p.settings.fill(s);
    return p;
  }
};

// Every component must be named once; UsageError naming the missing, repeated or unknown one.
Plan parse_plan(std::string_view text);

// Matrix shape of a component in a block of width `hidden` and FFN width `ffn`: [rows (out), cols (in)].
std::array<std::int64_t, 2> component_shape(Component c, std::int64_t hidden, std::int64_t ffn);

struct RatioReport {
  double dense_bits = 0, paper_bits = 0, hardware_bits = 0;
  double cr_paper() const { return 100.0 * (1.0 - paper_bits / dense_bits); }
  double cr_hardware() const { return 100.0 * (1.0 - hardware_bits / dense_bits); }
  nlohmann::json to_json() const;
};

// Bits of one component matrix under a setting (accumulated into `r`).
void add_matrix_bits(RatioReport& r, std::int64_t rows, std::int64_t cols, const Setting& s);
RatioReport compression_ratio(int layers, std::int64_t hidden, std::int64_t ffn, const Plan& plan);

}  // namespace core::nxm
