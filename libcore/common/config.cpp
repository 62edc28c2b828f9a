// Config tree merging and dotlist overrides (see config.hpp).
#include "common/config.hpp"

#include <filesystem>
#include <fstream>

namespace core {

Check<std::string> one_of(std::vector<std::string> choices) {
  return [choices](const std::string& s) -> std::string {
    for (const auto& c : choices)
      if (c == s) return "";
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : "|") + c;
    return "must be one of " + list;
  };
}

std::string yaml_to_string(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

namespace {

std::vector<std::string> split_dotted(const std::string& key) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : key) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  for (const auto& p : parts)
    if (p.empty()) throw UsageError("malformed config key '" + key + "' (empty component)");
  return parts;
}

// The value of `key=text` as YAML; a lone "-" (YAML: a list of one null) is the string "-", the
// command-line name of standard input (data.input=-).
YAML::Node parse_override_value(const std::string& spec, const std::string& text) {
  if (text == "-") return YAML::Node(text);
  try {
    return text.empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError("override '" + spec + "': value is not valid YAML: " + e.msg);
  }
}

}  // namespace

ConfigTree::ConfigTree(YAML::Node defaults) : root_(YAML::Clone(defaults)) {}

std::string ConfigTree::source_of(const std::string& dotted_key) const {
  // The most specific recorded source for this key or one of its parents.
  std::string key = dotted_key;
  while (true) {
    auto it = sources_.find(key);
    if (it != sources_.end()) return it->second;
    const auto dot = key.rfind('.');
    if (dot == std::string::npos) return "built-in default";
    key.resize(dot);
  }
}

void ConfigTree::merge_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("config file '" + path + "' is a folder; --config takes a YAML file");
  std::ifstream probe(path);
  if (!probe) throw InputMissingError("config file '" + path + "' not found or not readable");
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::ParserException& e) {
    throw UsageError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw UsageError(path + ": cannot read config: " + e.msg);
  }
  if (doc.IsNull()) return;  // an empty file changes nothing
  if (!doc.IsMap()) throw UsageError(path + ": a config file must be a map of keys at the top level");
  merge_node(doc, root_, "", path);
}

void ConfigTree::merge_node(const YAML::Node& from, YAML::Node& into, const std::string& prefix,
                            const std::string& file) {
  for (const auto& kv : from) {
    const std::string where = file + ":" + std::to_string(kv.first.Mark().line + 1);
    if (!kv.first.IsScalar())
      throw UsageError(where + ": a config key must be a plain name, not a " +
                       (kv.first.IsSequence() ? "sequence" : kv.first.IsMap() ? "map" : "null"));
    const std::string key = kv.first.as<std::string>();
    const std::string dotted = prefix + key;
    const YAML::Node existing = const_cast<const YAML::Node&>(into)[key];
    if (!existing) throw UsageError(where + ": unknown config key '" + dotted + "'");
    if (existing.IsMap()) {
      if (!kv.second.IsMap())
        throw UsageError(where + ": key '" + dotted + "' is a section; expected a map of keys");
      YAML::Node target = into[key];
      merge_node(kv.second, target, dotted + ".", file);
    } else {
      into[key] = YAML::Clone(kv.second);
    }
    sources_[dotted] = where;
  }
}

enum class EditMode { set, add, remove };

// Walks to `key`'s parent section (creating sections only when adding) and edits the leaf.
static void edit_tree(YAML::Node root, const std::string& key, EditMode mode, const YAML::Node& value,
                      const std::string& source) {
  const auto parts = split_dotted(key);
  YAML::Node parent = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const YAML::Node existing = const_cast<const YAML::Node&>(parent)[parts[i]];
    if (!existing) {
      if (mode != EditMode::add) throw UsageError(source + ": unknown config key '" + key + "'");
      parent[parts[i]] = YAML::Node(YAML::NodeType::Map);
    } else if (!existing.IsMap()) {
      throw UsageError(source + ": '" + parts[i] + "' is not a section");
    }
    YAML::Node child = parent[parts[i]];
    parent.reset(child);
  }
  const std::string& leaf = parts.back();
  const YAML::Node existing = const_cast<const YAML::Node&>(parent)[leaf];
  switch (mode) {
    case EditMode::remove:
      if (!existing) throw UsageError(source + ": key '" + key + "' does not exist");
      parent.remove(leaf);
      break;
    case EditMode::add:
      if (existing) throw UsageError(source + ": key '" + key + "' already exists; set it without '+'");
      parent[leaf] = value;
      break;
    case EditMode::set:
      if (!existing)
        throw UsageError(source + ": unknown config key '" + key + "' (use +" + key + "=... to add a new key)");
      if (existing.IsMap()) throw UsageError(source + ": '" + key + "' is a section; set its keys one by one");
      parent[leaf] = value;
      break;
  }
}

void ConfigTree::apply_override(const std::string& spec) {
  if (spec.empty()) throw UsageError("empty override");
  const std::string source = "override '" + spec + "'";
  const char first = spec[0];
  const EditMode mode = first == '+' ? EditMode::add : first == '~' ? EditMode::remove : EditMode::set;
  const std::string body = mode == EditMode::set ? spec : spec.substr(1);
  std::string key = body;
  YAML::Node value;
  if (mode != EditMode::remove) {
    const auto eq = body.find('=');
    if (eq == std::string::npos) throw UsageError(source + " must look like key=value, +key=value or ~key");
    key = body.substr(0, eq);
    value = parse_override_value(spec, body.substr(eq + 1));
  }
  edit_tree(root_, key, mode, value, source);
  sources_[key] = source;
}

void ConfigTree::set_existing(const std::string& dotted_key, const YAML::Node& value, const std::string& source) {
  edit_tree(root_, dotted_key, EditMode::set, value, source);
  sources_[dotted_key] = source;
}

bool ConfigTree::has_key(const std::string& dotted_key) const {
  YAML::Node node = root_;  // a handle; reset() below rebinds it without editing the tree
  for (const auto& part : split_dotted(dotted_key)) {
    if (!node.IsMap()) return false;
    const YAML::Node child = const_cast<const YAML::Node&>(node)[part];
    if (!child) return false;
    node.reset(child);
  }
  return true;
}

void ConfigReader::fail(const std::string& dotted, const std::string& what) const {
  throw UsageError(tree_.source_of(dotted) + ": config key '" + dotted + "': " + what);
}

std::string ConfigReader::describe(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsNull()) return "null";
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

static void collect_unknown(const ConfigTree& tree, const YAML::Node& node, const std::string& prefix,
                            const std::set<std::string>& seen) {
  for (const auto& kv : node) {
    const std::string dotted = prefix + kv.first.as<std::string>();
    if (!seen.count(dotted))
      throw UsageError(tree.source_of(dotted) + ": unknown config key '" + dotted + "'");
    if (kv.second.IsMap()) collect_unknown(tree, kv.second, dotted + ".", seen);
  }
}

void reject_unknown_keys(const ConfigTree& tree, const std::set<std::string>& seen) {
  if (tree.root().IsMap()) collect_unknown(tree, tree.root(), "", seen);
}

}  // namespace core
