// Plans and compression ratios (see plan.hpp).
#include "nxm/plan.hpp"

#include <charconv>
#include <vector>

#include "common/errors.hpp"

namespace core::nxm {

std::string_view component_key(Component c) {
  static constexpr std::array<std::string_view, 4> keys = {"qkv", "ao", "ffn1", "ffn2"};
  return keys[static_cast<int>(c)];
}

int Setting::index_bits() const {
  if (!sparse()) return 0;
  int b = 0;
  while ((1 << b) < group) ++b;
  return b;
}

std::string Setting::to_string() const {
  return (sparse() ? std::to_string(keep) + ":" + std::to_string(group) : std::string("dense")) + ":" +
         std::to_string(bits);
}

namespace {
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      parts.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  return parts;
}

int parse_int(std::string_view s, const std::string& what) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw UsageError(what + ": '" + std::string(s) + "' is not an integer");
  return v;
}
}  // namespace

Setting parse_setting(std::string_view text, const std::string& what) {
  const auto parts = split(text, ':');
  Setting s;
  const std::string hint = what + " = '" + std::string(text) + "': expected dense:B or keep:group:B (e.g. 2:4:8)";
  if (parts.size() == 2 && parts[0] == "dense") {
    s.bits = parse_int(parts[1], what);
  } else if (parts.size() == 3) {
    s.keep = parse_int(parts[0], what);
    s.group = parse_int(parts[1], what);
    s.bits = parse_int(parts[2], what);
    if (s.group < 2 || s.group > 64) throw UsageError(hint + "; group must be in [2, 64]");
    if (s.keep < 1 || s.keep >= s.group)
      throw UsageError(what + " = '" + std::string(text) + "': keep must be in [1, group) (keep >= group is no sparsity)");
  } else {
    throw UsageError(hint);
  }
  if (s.bits != 32 && s.bits != 16 && s.bits != 8 && s.bits != 4)
    throw UsageError(what + " = '" + std::string(text) + "': bits must be 32, 16, 8 or 4");
  return s;
}

std::string Plan::to_string() const {
  std::string out;
  for (Component c : kComponents)
    out += (out.empty() ? "" : ",") + std::string(component_key(c)) + "=" + (*this)[c].to_string();
  return out;
}

Plan parse_plan(std::string_view text) {
  Plan plan;
  std::array<bool, 4> seen{};
  for (std::string_view item : split(text, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw UsageError("plan item '" + std::string(item) + "': expected component=S:B (components qkv, ao, ffn1, ffn2)");
    const std::string_view key = item.substr(0, eq);
    int found = -1;
    for (Component c : kComponents)
      if (component_key(c) == key) found = static_cast<int>(c);
    if (found < 0) throw UsageError("plan: unknown component '" + std::string(key) + "' (qkv, ao, ffn1, ffn2)");
    if (seen[found]) throw UsageError("plan: component '" + std::string(key) + "' given twice");
    seen[found] = true;
    plan.settings[found] = parse_setting(item.substr(eq + 1), "plan component " + std::string(key));
  }
  for (Component c : kComponents)
    if (!seen[static_cast<int>(c)])
      throw UsageError("plan '" + std::string(text) + "' lacks component '" + std::string(component_key(c)) +
                       "' (every one of qkv, ao, ffn1, ffn2 needs a setting)");
  return plan;
}

std::array<std::int64_t, 2> component_shape(Component c, std::int64_t hidden, std::int64_t ffn) {
  switch (c) {
    case Component::qkv: return {3 * hidden, hidden};
    case Component::ao: return {hidden, hidden};
    case Component::ffn1: return {ffn, hidden};
    case Component::ffn2: return {hidden, ffn};
  }
  return {0, 0};
}

nlohmann::json RatioReport::to_json() const {
  return {{"cr_paper", cr_paper()}, {"cr_hardware", cr_hardware()}, {"dense_bits", dense_bits},
          {"paper_bits", paper_bits}, {"hardware_bits", hardware_bits}};
}

void add_matrix_bits(RatioReport& r, std::int64_t rows, std::int64_t cols, const Setting& s) {
  const double total = double(rows) * double(cols);
  const double kept = total * s.density();
  r.dense_bits += 32.0 * total;
  r.paper_bits += kept * s.bits;
  r.hardware_bits += kept * (s.bits + s.index_bits()) + (s.quantized() ? 32.0 * double(rows) : 0.0);
}

RatioReport compression_ratio(int layers, std::int64_t hidden, std::int64_t ffn, const Plan& plan) {
  if (layers < 1 || hidden < 1 || ffn < 1) throw UsageError("ratio: layers, hidden and ffn must be >= 1");
  RatioReport r;
  for (int l = 0; l < layers; ++l)
    for (Component c : kComponents) {
      const auto [rows, cols] = component_shape(c, hidden, ffn);
      add_matrix_bits(r, rows, cols, plan[c]);
    }
  return r;
}

}  // namespace core::nxm
