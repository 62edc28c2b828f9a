// safetensors: a hand-built file parsed, the writer's exact bytes, round trips for every dtype in
// both read modes, and every truncated or corrupt file rejected with a DataError.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "io/safetensors.hpp"
#include "io_test_util.hpp"
#include "test_support.hpp"

using namespace core::io;

namespace {

std::string le64(std::uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += char((n >> (8 * i)) & 0xFF);
  return s;
}

std::string file_from(const std::string& header_json, const std::string& data) {
  return le64(header_json.size()) + header_json + data;
}

template <class T>
std::string raw(std::initializer_list<T> xs) {
  std::string s;
  for (T x : xs) s.append(reinterpret_cast<const char*>(&x), sizeof(T));
  return s;
}

std::vector<std::byte> to_bytes(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string view_str(const TensorView& v) { return {reinterpret_cast<const char*>(v.bytes.data()), v.bytes.size()}; }

}  // namespace

TEST_CASE("a hand-built safetensors file is parsed") {
  const std::string header =
      R"({"__metadata__":{"format":"pt","note":"hi"},)"
      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"I8","shape":[1,3],"data_offsets":[8,11]},)"
      R"("h":{"dtype":"BF16","shape":[],"data_offsets":[11,13]}}   )";
  const std::string data = raw<float>({1.5f, -2.0f}) + std::string("\x01\xFF\x7F", 3) + raw<std::uint16_t>({0xC0A0});
  const SafetensorsFile f(to_bytes(file_from(header, data)), "hand.safetensors");
  CHECK(f.names() == std::vector<std::string>{"b", "h", "w"});
  CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}, {"note", "hi"}});
  const TensorView w = f.get("w");
  CHECK(w.dtype == "F32");
  CHECK(w.shape == std::vector<std::int64_t>{2});
  CHECK(to_f32(w) == std::vector<float>{1.5f, -2.0f});
  const TensorView b = f.get("b");
  CHECK(b.shape == std::vector<std::int64_t>{1, 3});
  CHECK(view_str(b) == std::string("\x01\xFF\x7F", 3));
  CHECK(to_f32(f.get("h")) == std::vector<float>{-5.0f});  // bf16 0xC0A0 = -5
  CHECK(f.get("h").numel() == 1);
  CHECK_THROWS_CONTAINING(core::DataError, "tensor 'b' has dtype I8", to_f32(b));
  CHECK_THROWS_CONTAINING(core::DataError, "hand.safetensors: no tensor 'missing'", f.get("missing"));
  CHECK_FALSE(f.contains("missing"));
  CHECK(f.contains("w"));
}

TEST_CASE("the writer produces the reference layout byte for byte") {
  SafetensorsWriter w;
  const std::vector<float> a = {1.0f, 2.0f};
  const std::vector<std::int32_t> z = {7};
  w.add<std::int32_t>("z", {1}, z);  // added first, laid out last: tensors go in name order
  w.add<float>("a", {2, 1}, a);
  w.set_metadata("step", "10");
  const std::string json =
      R"({"__metadata__":{"step":"10"},"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
      R"("z":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}})";
  const std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  CHECK(w.serialize() == le64(padded.size()) + padded + raw<float>({1.0f, 2.0f}) + raw<std::int32_t>({7}));

  SafetensorsWriter empty;
  CHECK(empty.serialize() == le64(8) + "{}      ");
  CHECK(SafetensorsFile(to_bytes(empty.serialize()), "empty").names().empty());
}

TEST_CASE("add_view: the bytes are read at write time from the caller's buffer (no copy), laid out as add() lays them") {
  core::test::TempDir dir("io-st-view");
  std::vector<float> big(1000), small = {4.0f, 5.0f};
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 0.5f * float(i);
  SafetensorsWriter viewed, copied;
  viewed.add_view<float>("big", {10, 100}, big);
  viewed.add<float>("small", {2}, small);  // a copy and views mix
  copied.add<float>("big", {10, 100}, big);
  copied.add<float>("small", {2}, small);
  CHECK(viewed.serialize() == copied.serialize());
  // A view is no copy: a change of the buffer before write() is what the file holds; add() kept its copy.
  big[7] = -1.0f;
  small[0] = 9.0f;
  viewed.write(dir / "v.safetensors");
  const SafetensorsFile f(dir / "v.safetensors");
  const auto b = to_f32(f.get("big"));
  CHECK(b.size() == 1000);
  CHECK(b[7] == -1.0f);
  CHECK(b[999] == 499.5f);
  CHECK(to_f32(f.get("small")) == std::vector<float>{4.0f, 5.0f});
  CHECK(core::test::read_text(dir / "v.safetensors") == viewed.serialize());
  // The same checks as add(): a byte count that does not fit the shape, a duplicate name.
  CHECK_THROWS_AS(viewed.add_view<float>("bad", {3}, std::span<const float>(small)), std::invalid_argument);
  CHECK_THROWS_AS(viewed.add_view<float>("big", {2}, std::span<const float>(small)), std::invalid_argument);
  CHECK_THROWS_AS(viewed.add_view<float>("__metadata__", {2}, std::span<const float>(small)), std::invalid_argument);
}

TEST_CASE("safetensors round trips for every dtype, whole-file and mmap") {
  core::test::TempDir dir("io-st");
  SafetensorsWriter w;
  const std::vector<float> f32 = {0.1f, -3.0f, 1e30f, 0.0f, 5.0f, 6.0f};
  const std::vector<Float16> f16 = {{float_to_f16(0.5f)}, {float_to_f16(-65504.0f)}};
  const std::vector<BFloat16> bf16 = {{float_to_bf16(3.0f)}, {float_to_bf16(-0.015625f)}, {float_to_bf16(1e38f)}};
  const std::vector<std::int8_t> i8 = {-128, 5};
  const std::vector<std::uint8_t> u8 = {255, 0, 3};
  const std::vector<std::int32_t> i32 = {-2147483647 - 1, 12};
  const std::vector<std::int64_t> i64 = {std::int64_t{1} << 62, -1};
  const std::vector<double> f64 = {1.0 / 3.0};
  const std::vector<std::int16_t> i16 = {-300};
  const std::vector<std::uint16_t> u16 = {65535};
  const std::vector<std::uint32_t> u32 = {4000000000u};
  const std::vector<std::uint64_t> u64 = {~0ull};
  const bool flags[] = {true, false};
  w.add<float>("f32", {2, 3}, f32);
  w.add<Float16>("f16", {2}, f16);
  w.add<BFloat16>("bf16", {3, 1}, bf16);
  w.add<std::int8_t>("i8", {2}, i8);
  w.add<std::uint8_t>("u8", {3}, u8);
  w.add<std::int32_t>("i32", {2}, i32);
  w.add<std::int64_t>("i64", {1, 2}, i64);
  w.add<double>("f64", {}, f64);
  w.add<std::int16_t>("i16", {1}, i16);
  w.add<std::uint16_t>("u16", {1}, u16);
  w.add<std::uint32_t>("u32", {1}, u32);
  w.add<std::uint64_t>("u64", {1}, u64);
  w.add<bool>("flags", {2}, std::span<const bool>(flags));
  w.add("empty", "F32", {0, 4}, {});
  w.set_metadata("format", "pt");
  w.write(dir / "m.safetensors");
  CHECK(io_test::listing(dir.path()) == std::vector<std::string>{"m.safetensors"});

  for (const auto mode : {SafetensorsFile::Mode::read, SafetensorsFile::Mode::mmap}) {
    const SafetensorsFile f(dir / "m.safetensors", mode);
    CHECK(f.names().size() == 14);
    CHECK(f.metadata().at("format") == "pt");
    const auto same = [&](const std::string& name, const std::string& dtype, std::vector<std::int64_t> shape,
                          const void* data, std::size_t size) {
      const TensorView t = f.get(name);
      CHECK(t.name == name);
      CHECK(t.dtype == dtype);
      CHECK(t.shape == shape);
      REQUIRE(t.bytes.size() == size);
      if (size) CHECK(std::memcmp(t.bytes.data(), data, size) == 0);
    };
    same("f32", "F32", {2, 3}, f32.data(), 24);
    same("f16", "F16", {2}, f16.data(), 4);
    same("bf16", "BF16", {3, 1}, bf16.data(), 6);
    same("i8", "I8", {2}, i8.data(), 2);
    same("u8", "U8", {3}, u8.data(), 3);
    same("i32", "I32", {2}, i32.data(), 8);
    same("i64", "I64", {1, 2}, i64.data(), 16);
    same("f64", "F64", {}, f64.data(), 8);
    same("i16", "I16", {1}, i16.data(), 2);
    same("u16", "U16", {1}, u16.data(), 2);
    same("u32", "U32", {1}, u32.data(), 4);
    same("u64", "U64", {1}, u64.data(), 8);
    same("flags", "BOOL", {2}, flags, 2);
    same("empty", "F32", {0, 4}, nullptr, 0);
    CHECK(to_f32(f.get("f16")) == std::vector<float>{0.5f, -65504.0f});
    CHECK(to_f32(f.get("bf16")) == std::vector<float>{3.0f, -0.015625f, bf16_to_float(float_to_bf16(1e38f))});
    CHECK(to_f32(f.get("f32")) == f32);
  }
  // A moved-from reader hands its (mapped) buffer over intact.
  SafetensorsFile moved(dir / "m.safetensors", SafetensorsFile::Mode::mmap);
  SafetensorsFile target = std::move(moved);
  CHECK(to_f32(target.get("f32")) == f32);
}

TEST_CASE("add_filled: the bytes are made at write time, one tensor at a time, laid out as add() lays them") {
  core::test::TempDir dir("io-st-filled");
  std::vector<float> big(1000), small = {4.0f, 5.0f};
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = 0.5f * float(i);
  std::vector<std::string> made;  // the tensors filled, in order
  const auto from = [&](const std::string& name, const std::vector<float>& v) {
    return [&, name](std::span<std::byte> out) {
      REQUIRE(out.size() == v.size() * sizeof(float));
      std::memcpy(out.data(), v.data(), out.size());
      made.push_back(name);
    };
  };
  SafetensorsWriter filled, copied;
  filled.add_filled("small", "F32", {2}, 2 * sizeof(float), from("small", small));
  filled.add_filled("big", "F32", {10, 100}, 1000 * sizeof(float), from("big", big));
  filled.add<float>("mid", {2}, small);  // (a copy among them)
  copied.add<float>("big", {10, 100}, big);
  copied.add<float>("mid", {2}, small);
  copied.add<float>("small", {2}, small);
  CHECK(made.empty());  // nothing is made before the file is
  CHECK(filled.serialize() == copied.serialize());
  CHECK(made == std::vector<std::string>{"big", "small"});  // in file (name) order
  filled.write(dir / "f.safetensors");
  CHECK(core::test::read_text(dir / "f.safetensors") == copied.serialize());
  CHECK_THROWS_AS(filled.add_filled("bad", "F32", {3}, 2 * sizeof(float), from("bad", small)), std::invalid_argument);
  CHECK_THROWS_AS(filled.add_filled("big", "F32", {2}, 2 * sizeof(float), from("big", small)), std::invalid_argument);
}

TEST_CASE("the writer rejects inconsistent tensors") {
  SafetensorsWriter w;
  const std::vector<float> v = {1, 2, 3};
  CHECK_THROWS_AS(w.add<float>("x", {2}, v), std::invalid_argument);        // 3 values for shape [2]
  CHECK_THROWS_AS(w.add<float>("x", {-1, -3}, v), std::invalid_argument);   // negative dimensions
  CHECK_THROWS_AS(w.add("x", "F8", {3}, std::as_bytes(std::span(v))), std::invalid_argument);
  CHECK_THROWS_AS(w.add<float>("__metadata__", {3}, v), std::invalid_argument);
  w.add<float>("x", {3}, v);
  CHECK_THROWS_AS(w.add<float>("x", {3}, v), std::invalid_argument);
}

TEST_CASE("safetensors rejects truncated and corrupt files") {
  core::test::TempDir dir("io-st");
  const auto path = dir / "bad.safetensors";
  const std::string file = path.string();
  SafetensorsWriter w;
  const std::vector<float> a = {1, 2, 3}, b = {4};
  w.add<float>("a", {3}, a);
  w.add<float>("b", {1}, b);
  const std::string good = w.serialize();
  const std::size_t header_end = good.size() - 16;  // 16 data bytes follow the header

  SUBCASE("truncated at several points") {
    for (std::size_t cut : {std::size_t{0}, std::size_t{4}, std::size_t{8}, std::size_t{9}, header_end / 2,
                            header_end - 1, header_end, header_end + 5, good.size() - 1}) {
      io_test::write_bytes(path, good.substr(0, cut));
      INFO("cut at ", cut);
      CHECK_THROWS_CONTAINING(core::DataError, file + ": ", SafetensorsFile f(path));
      CHECK_THROWS_CONTAINING(core::DataError, file + ": ", SafetensorsFile f(path, SafetensorsFile::Mode::mmap));
    }
  }
  SUBCASE("corrupt headers") {
    const std::string f4 = raw<float>({1, 2});
    const std::pair<std::string, std::string> cases[] = {
        {R"(["a"])", "does not start with '{'"},
        {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "not valid JSON"},
        {R"({"a":{"dtype":"F9","shape":[2],"data_offsets":[0,8]}})", "tensor 'a': unsupported dtype 'F9'"},
        {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "tensor 'a': shape holds -2"},
        {R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", "tensor 'a': shape holds 2.5"},
        {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,9]}})", "past the end of the data"},
        {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "is not [begin, end]"},
        {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", "is not [begin, end]"},
        {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "tensor 'a': shape [3] of F32 needs 12 bytes"},
        {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "tensor 'a': data starts at 4, expected 0 (gap)"},
        {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
         "tensor 'b': data starts at 4, expected 8 (overlaps"},
        {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "4 bytes after the last tensor"},
        {R"({"a":{"dtype":"F32","shape":[2]}})", "tensor 'a': needs dtype, shape and data_offsets"},
        {R"({"a":[1,2]})", "tensor 'a': entry is not an object"},
        {R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "value of 'k' is not a string"},
        {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", "too many"},
    };
    for (const auto& [header, expected] : cases) {
      io_test::write_bytes(path, file_from(header, f4));
      INFO("header: ", header);
      CHECK_THROWS_CONTAINING(core::DataError, file + ": ", SafetensorsFile f(path));
      CHECK_THROWS_CONTAINING(core::DataError, expected, SafetensorsFile f(path));
    }
    io_test::write_bytes(path, le64(std::uint64_t{1} << 40) + "{}");
    CHECK_THROWS_CONTAINING(core::DataError, "exceeds 100 MB", SafetensorsFile f(path));
    io_test::write_bytes(path, le64(1000) + "{}");
    CHECK_THROWS_CONTAINING(core::DataError, "truncated safetensors header", SafetensorsFile f(path));
  }
  CHECK_THROWS_CONTAINING(core::InputMissingError, "absent", SafetensorsFile f(dir / "absent"));
  CHECK_THROWS_CONTAINING(core::InputMissingError, "absent", SafetensorsFile f(dir / "absent", SafetensorsFile::Mode::mmap));
}

TEST_CASE("safetensors headers with out-of-range numbers or deeply nested values are DataErrors") {
  const std::string data = raw<float>({1.0f});
  const auto header_with = [](const std::string& shape) {
    return R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,4]}})";
  };
  CHECK_THROWS_AS(SafetensorsFile(to_bytes(file_from(header_with("[1e999]"), data)), "big.safetensors"), core::DataError);
  // 60,000 levels of nesting in shape: the error message dumped it recursively and overflowed the stack.
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  CHECK_THROWS_CONTAINING(core::DataError, "shape holds an array of 1 values",
                          SafetensorsFile(to_bytes(file_from(header_with(deep), data)), "deep.safetensors"));
}

TEST_CASE("a failed safetensors write throws IoError and leaves no file") {
  core::test::TempDir dir("io-st");
  SafetensorsWriter w;
  const std::vector<float> a = {1};
  w.add<float>("a", {1}, a);
  CHECK_THROWS_CONTAINING(core::IoError, "", w.write(dir / "nope" / "m.safetensors"));
  CHECK(io_test::listing(dir.path()).empty());
}

TEST_CASE("safetensors: every single-byte corruption is read or rejected with a DataError, never a crash") {
  SafetensorsWriter w;
  const std::vector<float> a = {1, 2};
  const std::vector<std::int8_t> b = {3};
  w.add<float>("a", {2}, a);
  w.add<std::int8_t>("b", {1, 1}, b);
  w.set_metadata("k", "v");
  const std::string good = w.serialize();
  int rejected = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (const char c : {'\0', '\xFF', '"', '{', ']', '9', ','}) {
      std::string bad = good;
      bad[i] = c;
      const io_test::Thrown t = io_test::thrown<core::DataError>([&] {
        const SafetensorsFile f(to_bytes(bad), "corrupt");
        for (const std::string& name : f.names()) (void)f.get(name).bytes.size();
      });
      INFO("byte ", i, " set to ", int(static_cast<unsigned char>(c)), ": ", t.message);
      CHECK((t.as_expected || t.message == "no exception"));
      rejected += t.as_expected;
    }
  }
  CHECK(rejected > 0);
}
