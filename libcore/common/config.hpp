// Typed, validated configuration: built-in defaults < YAML files in order < dotlist overrides.
//
// An options struct describes itself once with a visit() member; the same description writes
// the defaults tree, reads and validates the resolved tree, and prints it back:
//
//   struct FitOptions {
//     std::string input;
//     double sigma = 1.0;
//     ModelOptions model;                      // nested section
//     template <class V> void visit(V& v) {
//       v("input", input, "CSV file of x,y points");
//       v("sigma", sigma, "Geman-McClure scale", core::positive<double>());
//       v.section("model", model);
//     }
//     void validate() const;                   // optional: cross-field checks, throws UsageError
//   };
//
// Overrides: `a.b=v` sets an existing key, `+a.b=v` adds a key that does not exist, `~a.b` deletes
// a key (it then takes its built-in default). Values are parsed as YAML scalars or flow
// collections (`x=[1,2]`). Every error names the file and line (or the override) and the key.
#pragma once
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "common/errors.hpp"

namespace core {

// A check on a value: returns an empty string when fine, else what is wrong ("must be > 0").
template <class T>
using Check = std::function<std::string(const T&)>;

template <class T>
Check<T> in_range(T lo, T hi) {
  return [lo, hi](const T& x) -> std::string {
    if (!(x >= lo && x <= hi)) {
      std::ostringstream os;
      os << "must be in [" << lo << ", " << hi << "]";
      return os.str();
    }
    return "";
  };
}
template <class T>
Check<T> at_least(T lo) {
  return [lo](const T& x) -> std::string {
    if (!(x >= lo)) {
      std::ostringstream os;
      os << "must be >= " << lo;
      return os.str();
    }
    return "";
  };
}
template <class T>
Check<T> positive() {
  return [](const T& x) -> std::string { return x > T(0) ? "" : "must be > 0"; };
}
Check<std::string> one_of(std::vector<std::string> choices);

// The merged YAML tree with the origin of every key, for error messages.
class ConfigTree {
 public:
  explicit ConfigTree(YAML::Node defaults);

  // Merges a YAML file: every key must already exist (unknown keys are errors naming file:line).
  void merge_file(const std::string& path);
  // Applies `a.b=v`, `+a.b=v` or `~a.b`.
  void apply_override(const std::string& spec);
  // Sets an existing key to `value`; `source` names where it came from (e.g. "--input").
  void set_existing(const std::string& dotted_key, const YAML::Node& value, const std::string& source);
  bool has_key(const std::string& dotted_key) const;

  const YAML::Node& root() const { return root_; }
  // "file.yaml:12", "override 'a.b=3'" or "built-in default".
  std::string source_of(const std::string& dotted_key) const;

 private:
  void merge_node(const YAML::Node& from, YAML::Node& into, const std::string& prefix,
                  const std::string& file);
  YAML::Node root_;
  std::map<std::string, std::string> sources_;
};

namespace config_detail {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean (true/false)";
  else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) return "a non-negative integer";
  else if constexpr (std::is_integral_v<T>) return "an integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else if constexpr (is_vector<T>::value) return "a list of " + type_name<typename T::value_type>();
  else if constexpr (is_optional<T>::value) return type_name<typename T::value_type>() + " or null";
  else return "a value";
}

// Decodes one scalar strictly (no "1.5" for an integer, no "yes" for a bool).
template <class T>
bool decode(const YAML::Node& n, T& out) {
  if constexpr (is_optional<T>::value) {
    if (n.IsNull()) {
      out.reset();
      return true;
    }
    typename T::value_type v{};
    if (!decode(n, v)) return false;
    out = v;
    return true;
  } else if constexpr (is_vector<T>::value) {
    if (!n.IsSequence()) return false;
    T v;
    for (const auto& e : n) {
      typename T::value_type x{};
      if (!decode(e, x)) return false;
      v.push_back(x);
    }
    out = std::move(v);
    return true;
  } else {
    if (!n.IsScalar()) return false;
    const std::string s = n.Scalar();
    if constexpr (std::is_same_v<T, std::string>) {
      out = s;
      return true;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (s == "true" || s == "True") out = true;
      else if (s == "false" || s == "False") out = false;
      else return false;
      return true;
    } else if constexpr (std::is_integral_v<T>) {
      if (s.empty() || s.find_first_not_of("+-0123456789") != std::string::npos) return false;
      if (std::is_unsigned_v<T> && s[0] == '-') return false;
      try {
        out = n.as<T>();
      } catch (const YAML::Exception&) {
        return false;
      }
      return true;
    } else {
      try {
        out = n.as<T>();
      } catch (const YAML::Exception&) {
        return false;
      }
      return std::isfinite(static_cast<double>(out)) || s == ".inf" || s == "-.inf";
    }
  }
}

template <class T>
YAML::Node encode(const T& v) {
  if constexpr (is_optional<T>::value) {
    return v ? encode(*v) : YAML::Node(YAML::NodeType::Null);
  } else if constexpr (is_vector<T>::value) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& e : v) n.push_back(encode(e));
    n.SetStyle(YAML::EmitterStyle::Flow);
    return n;
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[64];  // shortest text that reads back to the same value (1e-09, not 1.0000000000000001e-09)
    const auto res = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
    return YAML::Node(std::string(buf, res.ptr));
  } else {
    return YAML::Node(v);
  }
}

}  // namespace config_detail

// Writes an options struct's values as a YAML tree (used for defaults and --print-config).
class ConfigWriter {
 public:
  template <class T>
  void operator()(const char* key, const T& value, const char* /*help*/, Check<T> /*check*/ = {}) {
    node_[key] = config_detail::encode(value);
  }
  template <class S>
  void section(const char* key, S& s) {
    ConfigWriter w;
    s.visit(w);
    node_[key] = w.node();
  }
  YAML::Node node() const { return node_; }

 private:
  YAML::Node node_{YAML::NodeType::Map};
};

// Reads and validates an options struct from a resolved tree; errors name source and key.
class ConfigReader {
 public:
  ConfigReader(const ConfigTree& tree, YAML::Node node, std::string prefix, std::set<std::string>* seen)
      : tree_(tree), node_(node), prefix_(std::move(prefix)), seen_(seen) {}

  template <class T>
  void operator()(const char* key, T& value, const char* /*help*/, Check<T> check = {}) {
    const std::string dotted = prefix_ + key;
    seen_->insert(dotted);
    const YAML::Node n = node_[key];
    if (!n.IsDefined()) return;  // deleted with ~key: keep the built-in default
    if (!config_detail::decode(n, value))
      fail(dotted, "expected " + config_detail::type_name<T>() + ", got '" + describe(n) + "'");
    if (check) {
      const std::string problem = check(value);
      if (!problem.empty()) fail(dotted, problem + " (got '" + describe(n) + "')");
    }
  }
  template <class S>
  void section(const char* key, S& s) {
    const std::string dotted = prefix_ + key;
    seen_->insert(dotted);
    YAML::Node n = node_[key];
    if (!n.IsDefined()) return;
    if (!n.IsMap()) fail(dotted, "expected a section (a map of keys)");
    ConfigReader r(tree_, n, dotted + ".", seen_);
    s.visit(r);
  }

 private:
  [[noreturn]] void fail(const std::string& dotted, const std::string& what) const;
  static std::string describe(const YAML::Node& n);
  const ConfigTree& tree_;
  const YAML::Node node_;
  std::string prefix_;
  std::set<std::string>* seen_;
};

// Throws UsageError for any key in the tree that the options struct did not read.
void reject_unknown_keys(const ConfigTree& tree, const std::set<std::string>& seen);

template <class Options>
YAML::Node options_to_yaml(const Options& opts) {
  ConfigWriter w;
  const_cast<Options&>(opts).visit(w);
  return w.node();
}

template <class Options, class = void>
struct has_validate : std::false_type {};
template <class Options>
struct has_validate<Options, std::void_t<decltype(std::declval<const Options&>().validate())>>
    : std::true_type {};

// Reads, range-checks and cross-validates the options from a resolved tree.
template <class Options>
Options options_from_tree(const ConfigTree& tree) {
  Options opts;
  std::set<std::string> seen;
  ConfigReader r(tree, tree.root(), "", &seen);
  opts.visit(r);
  reject_unknown_keys(tree, seen);
  if constexpr (has_validate<Options>::value) opts.validate();
  return opts;
}

// Convenience for tests and tools: defaults < files < overrides -> validated options.
template <class Options>
Options resolve_options(const std::vector<std::string>& files, const std::vector<std::string>& overrides) {
  ConfigTree tree(options_to_yaml(Options{}));
  for (const auto& f : files) tree.merge_file(f);
  for (const auto& o : overrides) tree.apply_override(o);
  return options_from_tree<Options>(tree);
}

std::string yaml_to_string(const YAML::Node& node);

}  // namespace core
