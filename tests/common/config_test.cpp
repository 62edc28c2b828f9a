// Config resolution: defaults < files < overrides, strict types, ranges, unknown keys, sources.
#include <doctest/doctest.h>

#include "common/config.hpp"
#include "test_support.hpp"

using namespace core;

namespace {
struct Inner {
  int heads = 4;
  std::vector<double> betas{0.9, 0.95};
  template <class V>
  void visit(V& v) {
    v("heads", heads, "attention heads", core::positive<int>());
    v("betas", betas, "Adam betas");
  }
};
struct Opts {
  std::string name = "x";
  double lr = 1e-3;
  bool flag = false;
  std::uint64_t steps = 10;
  std::optional<int> limit;
  std::string mode = "tls";
  Inner model;
  template <class V>
  void visit(V& v) {
    v("name", name, "name");
    v("lr", lr, "learning rate", core::in_range(0.0, 1.0));
    v("flag", flag, "a switch");
    v("steps", steps, "steps");
    v("limit", limit, "optional limit");
    v("mode", mode, "mode", core::one_of({"tls", "gm"}));
    v.section("model", model);
  }
  void validate() const {
    if (model.heads > 64) throw UsageError("model.heads too large");
  }
};

std::string error_of(const std::vector<std::string>& files, const std::vector<std::string>& overrides) {
  try {
    resolve_options<Opts>(files, overrides);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("defaults, files and overrides apply in order") {
  test::TempDir dir("config");
  test::write_text(dir / "a.yaml", "lr: 0.5\nmodel:\n  heads: 8\n");
  test::write_text(dir / "b.yaml", "lr: 0.25\n");
  const auto o = resolve_options<Opts>({(dir / "a.yaml").string(), (dir / "b.yaml").string()},
                                       {"model.betas=[0.8, 0.99]", "flag=true", "limit=7"});
  CHECK(o.lr == 0.25);
  CHECK(o.model.heads == 8);
  CHECK(o.model.betas == std::vector<double>{0.8, 0.99});
  CHECK(o.flag);
  CHECK(o.limit == 7);
  CHECK(o.name == "x");
}

TEST_CASE("an override value of a lone '-' is the string '-' (standard input), not a YAML list") {
  CHECK(resolve_options<Opts>({}, {"name=-"}).name == "-");
  CHECK(resolve_options<Opts>({}, {"name=-x"}).name == "-x");
  CHECK(error_of({}, {"steps=-"}).find("steps") != std::string::npos);  // still typed: no number
}

TEST_CASE("deleting a key restores its built-in default") {
  test::TempDir dir("config");
  test::write_text(dir / "a.yaml", "lr: 0.5\n");
  const auto o = resolve_options<Opts>({(dir / "a.yaml").string()}, {"~lr"});
  CHECK(o.lr == doctest::Approx(1e-3));
}

TEST_CASE("unknown keys name file, line and key") {
  test::TempDir dir("config");
  test::write_text(dir / "a.yaml", "lr: 0.5\nmodel:\n  heads: 8\n  layers: 3\n");
  const std::string msg = error_of({(dir / "a.yaml").string()}, {});
  CHECK(msg.find("a.yaml:4") != std::string::npos);
  CHECK(msg.find("model.layers") != std::string::npos);
  CHECK(error_of({}, {"nope=1"}).find("unknown config key 'nope'") != std::string::npos);
  // '+' adds the key, but the options do not read it: still an error, naming the override.
  CHECK(error_of({}, {"+extra=1"}).find("override '+extra=1'") != std::string::npos);
  CHECK(error_of({}, {"+lr=1"}).find("already exists") != std::string::npos);
  CHECK(error_of({}, {"~nope"}).find("does not exist") != std::string::npos);
}

TEST_CASE("wrong types and out-of-range values name the source") {
  test::TempDir dir("config");
  test::write_text(dir / "a.yaml", "\nmodel:\n  heads: four\n");
  const std::string msg = error_of({(dir / "a.yaml").string()}, {});
  CHECK(msg.find("a.yaml:3") != std::string::npos);
  CHECK(msg.find("model.heads") != std::string::npos);
  CHECK(msg.find("an integer") != std::string::npos);
  CHECK(error_of({}, {"lr=2"}).find("must be in [0, 1]") != std::string::npos);
  CHECK(error_of({}, {"model.heads=0"}).find("must be > 0") != std::string::npos);
  CHECK(error_of({}, {"steps=-1"}).find("non-negative integer") != std::string::npos);
  CHECK(error_of({}, {"steps=1.5"}).find("steps") != std::string::npos);
  CHECK(error_of({}, {"flag=yes"}).find("boolean") != std::string::npos);
  CHECK(error_of({}, {"mode=xx"}).find("tls|gm") != std::string::npos);
  CHECK(error_of({}, {"lr=.nan"}).find("lr") != std::string::npos);
  CHECK(error_of({}, {"model=3"}).find("section") != std::string::npos);
  CHECK(error_of({}, {"model.heads=100"}) == "model.heads too large");
}

TEST_CASE("missing and malformed files") {
  test::TempDir dir("config");
  CHECK_THROWS_AS(resolve_options<Opts>({(dir / "absent.yaml").string()}, {}), InputMissingError);
  test::write_text(dir / "bad.yaml", "lr: [1, 2\nname: x\n");
  CHECK(error_of({(dir / "bad.yaml").string()}, {}).find("bad.yaml:") != std::string::npos);
  test::write_text(dir / "list.yaml", "- 1\n- 2\n");
  CHECK(error_of({(dir / "list.yaml").string()}, {}).find("map of keys") != std::string::npos);
  test::write_text(dir / "empty.yaml", "");
  CHECK(resolve_options<Opts>({(dir / "empty.yaml").string()}, {}).lr == doctest::Approx(1e-3));
  // A folder is a usage error (exit 2), not an internal one.
  CHECK(error_of({dir.path().string()}, {}).find("is a folder") != std::string::npos);
  // Complex keys (YAML's `? [a, b]`), at the top and inside a section, name the file and line.
  test::write_text(dir / "complex.yaml", "lr: 0.1\n? [a, b]\n: 1\n");
  CHECK(error_of({(dir / "complex.yaml").string()}, {}).find("complex.yaml:2: a config key must be a plain name") !=
        std::string::npos);
  test::write_text(dir / "nested.yaml", "model:\n  ? {x: 1}\n  : 2\n");
  CHECK(error_of({(dir / "nested.yaml").string()}, {}).find("nested.yaml:2: a config key must be a plain name, not a map") !=
        std::string::npos);
}

TEST_CASE("the written tree reads back to the same options") {
  Opts o;
  o.lr = 0.123456789012345;
  o.limit = 3;
  o.model.betas = {0.1, 1e-12};
  ConfigTree tree(options_to_yaml(o));
  const Opts back = options_from_tree<Opts>(tree);
  CHECK(back.lr == o.lr);
  CHECK(back.limit == o.limit);
  CHECK(back.model.betas == o.model.betas);
  CHECK(yaml_to_string(options_to_yaml(o)).find("1e-12") != std::string::npos);
}
