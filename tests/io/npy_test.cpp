// .npy: the exact header bytes numpy writes, round trips for every dtype, conversions, versions
// 2.0/3.0, every malformed file rejected with a DataError, and (when numpy is installed) files
// exchanged with numpy itself.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "common/errors.hpp"
#include "io/npy.hpp"
#include "io_test_util.hpp"
#include "test_support.hpp"

using namespace core::io;

namespace {

// An .npy file built by hand: magic, version, little-endian header length, the dict text padded
// with spaces and ended by '\n', then `data`.
std::string make_npy(int major, const std::string& dict, const std::string& data, int minor = 0) {
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((10 + (len_bytes - 2) + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + char(minor);
  for (std::size_t i = 0; i < len_bytes; ++i) out += char((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string float_bytes(std::initializer_list<float> xs) {
  std::string s;
  for (float x : xs) s.append(reinterpret_cast<const char*>(&x), 4);
  return s;
}

template <class T>
void check_round_trip(const std::vector<T>& values, const std::vector<std::size_t>& shape, const std::string& descr) {
  core::test::TempDir dir("io-npy");
  const auto path = dir / "a.npy";
  write_npy(path, values.data(), shape);
  const NpyArray a = read_npy(path);
  CHECK(a.dtype == descr);
  CHECK(a.shape == shape);
  CHECK(a.size() == values.size());
  CHECK(a.bytes.size() == values.size() * sizeof(T));
  const std::vector<T> back = a.template as<T>();
  REQUIRE(back.size() == values.size());
  CHECK(std::memcmp(back.data(), values.data(), values.size() * sizeof(T)) == 0);
  CHECK(io_test::read_bytes(path).size() % 64 == values.size() * sizeof(T) % 64);  // header is 64-aligned
}

}  // namespace

TEST_CASE("npy header bytes match numpy's exactly") {
  const std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + std::string(60, ' ') + "\n";
  REQUIRE(expected.size() == 128);
  const std::size_t shape3[] = {3};
  CHECK(npy_header("<f4", shape3) == expected);

  core::test::TempDir dir("io-npy");
  const float values[] = {1.0f, -2.5f, 0.125f};
  write_npy(dir / "x.npy", values, {3});
  CHECK(io_test::read_bytes(dir / "x.npy") == expected + float_bytes({1.0f, -2.5f, 0.125f}));

  // Other shapes: numpy's tuple repr, spare room for growing axis 0, still 64-aligned.
  const std::size_t shape23[] = {2, 3};
  const std::string h2 = npy_header("<i8", shape23);
  CHECK(h2.find("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }") == 10);
  CHECK(h2.size() % 64 == 0);
  CHECK(npy_header("|b1", {}) == std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                                    "{'descr': '|b1', 'fortran_order': False, 'shape': (), }" + std::string(62, ' ') +
                                    "\n");  // 0-d: no spare room for an axis
}

TEST_CASE("npy round trips for every dtype") {
  check_round_trip<float>({1.5f, -0.0f, std::numeric_limits<float>::max(), 1e-40f, 3, 4}, {2, 3}, "<f4");
  check_round_trip<double>({0.1, -1e300, 5e-324}, {3}, "<f8");
  check_round_trip<Float16>({{0x3C00}, {0x8001}, {0x7BFF}, {0x7C00}}, {2, 2}, "<f2");
  check_round_trip<std::int8_t>({-128, 0, 127}, {3, 1}, "|i1");
  check_round_trip<std::uint8_t>({0, 200, 255, 1}, {4}, "|u1");
  check_round_trip<std::uint16_t>({0, 65535, 1234}, {1, 3}, "<u2");
  check_round_trip<std::int32_t>({std::numeric_limits<std::int32_t>::min(), -1, 7}, {3}, "<i4");
  check_round_trip<std::int64_t>({std::numeric_limits<std::int64_t>::max(), -5}, {2}, "<i8");
  const bool flags[] = {true, false, true};
  core::test::TempDir dir("io-npy");
  write_npy(dir / "b.npy", flags, {3});
  const NpyArray b = read_npy(dir / "b.npy");
  CHECK(b.dtype == "|b1");
  CHECK(b.as<bool>() == std::vector<bool>{true, false, true});
  CHECK(b.as<int>() == std::vector<int>{1, 0, 1});
  // 0-d and empty arrays.
  const double scalar = 42;
  write_npy(dir / "s.npy", &scalar, {});
  CHECK(read_npy(dir / "s.npy").as<double>() == std::vector<double>{42});
  CHECK(read_npy(dir / "s.npy").shape.empty());
  write_npy<float>(dir / "e.npy", nullptr, {0, 5});
  CHECK(read_npy(dir / "e.npy").as<float>().empty());
  CHECK(read_npy(dir / "e.npy").shape == std::vector<std::size_t>{0, 5});
}

TEST_CASE("npy as<T>() converts exactly or throws") {
  core::test::TempDir dir("io-npy");
  const float f[] = {0.1f, -3};
  write_npy(dir / "f.npy", f, {2});
  const NpyArray af = read_npy(dir / "f.npy");
  CHECK(af.as<double>() == std::vector<double>{double(0.1f), -3.0});
  CHECK_THROWS_CONTAINING(core::DataError, "<f4 cannot be read as int32", af.as<std::int32_t>());
  CHECK_THROWS_CONTAINING(core::DataError, (dir / "f.npy").string(), af.as<Float16>());

  const double d[] = {0.5};
  write_npy(dir / "d.npy", d, {1});
  CHECK_THROWS_CONTAINING(core::DataError, "<f8 cannot be read as float32", read_npy(dir / "d.npy").as<float>());

  const Float16 h[] = {{0x3555}, {0xFC00}};  // 0.333251953125, -inf
  write_npy(dir / "h.npy", h, {2});
  CHECK(read_npy(dir / "h.npy").as<double>() == std::vector<double>{0.333251953125, -INFINITY});

  const std::int32_t i[] = {300, -7, 1 << 30};
  write_npy(dir / "i.npy", i, {3});
  const NpyArray ai = read_npy(dir / "i.npy");
  CHECK(ai.as<std::int64_t>() == std::vector<std::int64_t>{300, -7, 1 << 30});
  CHECK(ai.as<double>() == std::vector<double>{300, -7, 1 << 30});
  CHECK(ai.as<float>() == std::vector<float>{300, -7, 1 << 30});  // 2^30 is exact in float
  CHECK_THROWS_CONTAINING(core::DataError, "element 0 (value 300) of npy <i4 array does not fit int8",
                          ai.as<std::int8_t>());
  CHECK_THROWS_CONTAINING(core::DataError, "element 1 (value -7)", ai.as<std::uint64_t>());
  CHECK_THROWS_CONTAINING(core::DataError, "cannot be read as bool", ai.as<bool>());

  const std::int64_t big[] = {(std::int64_t{1} << 53) + 1, std::numeric_limits<std::int64_t>::max()};
  write_npy(dir / "big.npy", big, {2});
  CHECK_THROWS_CONTAINING(core::DataError, "element 0", read_npy(dir / "big.npy").as<double>());
  const std::int64_t pow2[] = {std::int64_t{1} << 60, std::numeric_limits<std::int64_t>::min()};
  write_npy(dir / "p.npy", pow2, {2});
  CHECK(read_npy(dir / "p.npy").as<double>() == std::vector<double>{0x1p60, -0x1p63});
}

TEST_CASE("npy versions 2.0 and 3.0 are read; 1.0 header written as numpy does") {
  core::test::TempDir dir("io-npy");
  for (int major : {1, 2, 3}) {
    io_test::write_bytes(dir / "v.npy", make_npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                                 float_bytes({7.0f, -1.0f})));
    const NpyArray a = read_npy(dir / "v.npy");
    CHECK(a.as<float>() == std::vector<float>{7.0f, -1.0f});
  }
  // Double-quoted strings, no trailing comma, Python 2 long dimensions: still a valid dict.
  io_test::write_bytes(dir / "q.npy", make_npy(1, "{\"descr\":\"<f4\",\"shape\":(1L,),\"fortran_order\":False}",
                                               float_bytes({2.0f})));
  CHECK(read_npy(dir / "q.npy").as<float>() == std::vector<float>{2.0f});
}

TEST_CASE("npy rejects malformed files with a DataError naming the file") {
  core::test::TempDir dir("io-npy");
  const auto path = dir / "bad.npy";
  const std::string file = path.string();
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string good = make_npy(1, ok_dict, float_bytes({1, 2}));
  io_test::write_bytes(path, good);
  REQUIRE_NOTHROW(read_npy(path));

  SUBCASE("truncated at any point") {
    for (std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{7}, std::size_t{9}, std::size_t{40},
                            std::size_t{63}, std::size_t{64}, std::size_t{66}, good.size() - 1}) {
      io_test::write_bytes(path, good.substr(0, cut));
      INFO("cut at ", cut);
      CHECK_THROWS_CONTAINING(core::DataError, file + ": ", read_npy(path));
    }
    io_test::write_bytes(path, good.substr(0, good.size() - 1));
    CHECK_THROWS_CONTAINING(core::DataError, "truncated npy data", read_npy(path));
    io_test::write_bytes(path, good.substr(0, 30));
    CHECK_THROWS_CONTAINING(core::DataError, "truncated npy header", read_npy(path));
  }
  SUBCASE("bad magic, version, trailing bytes") {
    io_test::write_bytes(path, "\x93NUMPZ" + good.substr(6));
    CHECK_THROWS_CONTAINING(core::DataError, "bad magic", read_npy(path));
    io_test::write_bytes(path, make_npy(4, ok_dict, float_bytes({1, 2})));
    CHECK_THROWS_CONTAINING(core::DataError, "version 4.0", read_npy(path));
    io_test::write_bytes(path, make_npy(1, ok_dict, float_bytes({1, 2}), 1));
    CHECK_THROWS_CONTAINING(core::DataError, "version 1.1", read_npy(path));
    io_test::write_bytes(path, good + "xyz");
    CHECK_THROWS_CONTAINING(core::DataError, "3 unexpected bytes", read_npy(path));
  }
  SUBCASE("unsupported layouts and dtypes") {
    io_test::write_bytes(path, make_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", float_bytes({1, 2})));
    CHECK_THROWS_CONTAINING(core::DataError, "fortran_order True", read_npy(path));
    io_test::write_bytes(path, make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", float_bytes({1, 2})));
    CHECK_THROWS_CONTAINING(core::DataError, "big-endian", read_npy(path));
    io_test::write_bytes(path, make_npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", float_bytes({1, 2})));
    CHECK_THROWS_CONTAINING(core::DataError, "unsupported npy dtype '<c8'", read_npy(path));
    io_test::write_bytes(path, make_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
                                        float_bytes({1, 2})));
    CHECK_THROWS_CONTAINING(core::DataError, "structured", read_npy(path));
    io_test::write_bytes(path, make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\x01\x02"));
    CHECK_THROWS_CONTAINING(core::DataError, "bool element 1 is byte 2", read_npy(path));
  }
  SUBCASE("malformed header dicts") {
    for (const char* dict : {"{'descr': '<f4', 'fortran_order': False}",                                // no shape
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",         // extra key
                             "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",  // duplicate
                             "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",                 // quotes
                             "{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}",                // bool
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (2)}",                 // not a tuple
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}",               // negative
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) junk}",           // junk
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} extra",          // after dict
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
                             "['descr', '<f4']", ""}) {
      io_test::write_bytes(path, make_npy(1, dict, float_bytes({1, 2})));
      INFO("dict: ", dict);
      CHECK_THROWS_CONTAINING(core::DataError, file + ": malformed npy header", read_npy(path));
    }
    std::string no_newline = good;
    no_newline[good.find('\n')] = ' ';
    io_test::write_bytes(path, no_newline);
    CHECK_THROWS_CONTAINING(core::DataError, "does not end with a newline", read_npy(path));
    io_test::write_bytes(path, make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4),}", ""));
    CHECK_THROWS_CONTAINING(core::DataError, "overflows", read_npy(path));
  }
  CHECK_THROWS_CONTAINING(core::InputMissingError, "absent.npy", read_npy(dir / "absent.npy"));
}

TEST_CASE("npy write failures throw IoError and leave no file") {
  core::test::TempDir dir("io-npy");
  const float v[] = {1};
  CHECK_THROWS_CONTAINING(core::IoError, "", write_npy(dir / "missing" / "a.npy", v, {1}));
  CHECK(io_test::listing(dir.path()).empty());
}

TEST_CASE("npy files are exchanged with numpy") {
  const std::string py = io_test::python_with_numpy();
  if (py.empty()) {
    MESSAGE("python3 with numpy not found: cross-check skipped");
    return;
  }
  core::test::TempDir dir("io-npy");
  const float f[] = {1.5f, -2.0f, 0.1f, 4.0f, 5.0f, 6.0f};
  write_npy(dir / "f.npy", f, {2, 3});
  const std::int64_t i[] = {-1, 1LL << 40};
  write_npy(dir / "i.npy", i, {2});
  const Float16 h[] = {{0x3C00}, {0xC000}};
  write_npy(dir / "h.npy", h, {2});
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "f = np.load(d + '/f.npy'); assert f.dtype == np.float32 and f.shape == (2, 3), f\n"
      "assert f[0, 1] == -2.0 and f[1, 2] == 6.0 and f[0, 2] == np.float32(0.1)\n"
      "i = np.load(d + '/i.npy'); assert i.dtype == np.int64 and list(i) == [-1, 2**40]\n"
      "h = np.load(d + '/h.npy'); assert h.dtype == np.float16 and list(h) == [1.0, -2.0]\n"
      "with open(d + '/f.npy', 'rb') as fh: ours = fh.read()\n"
      "np.save(d + '/np_f.npy', f); assert open(d + '/np_f.npy', 'rb').read() == ours, 'bytes differ'\n"
      "np.save(d + '/np_b.npy', np.array([[True, False]]))\n"
      "np.save(d + '/np_u2.npy', np.arange(5, dtype='<u2'))\n"
      "np.save(d + '/np_fortran.npy', np.asfortranarray(np.ones((2, 3))))\n";
  core::test::write_text(dir / "check.py", script);
  const std::string cmd = py + " " + (dir / "check.py").string() + " " + dir.path().string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(read_npy(dir / "np_b.npy").as<bool>() == std::vector<bool>{true, false});
  CHECK(read_npy(dir / "np_b.npy").shape == std::vector<std::size_t>{1, 2});
  CHECK(read_npy(dir / "np_u2.npy").as<std::int32_t>() == std::vector<std::int32_t>{0, 1, 2, 3, 4});
  CHECK_THROWS_CONTAINING(core::DataError, "fortran_order True", read_npy(dir / "np_fortran.npy"));
}

TEST_CASE("npy: every single-byte corruption is read or rejected with a DataError, never a crash") {
  const std::string good = make_npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", "\x01\0\0\0\x02\0\0\0");
  int rejected = 0;
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (const char c : {'\0', '\xFF', '\n', '(', '\'', '9', ','}) {
      std::string bad = good;
      bad[i] = c;
      const io_test::Thrown t = io_test::thrown<core::DataError>(
          [&] { parse_npy(std::as_bytes(std::span(bad.data(), bad.size())), "corrupt").as<std::int64_t>(); });
      INFO("byte ", i, " set to ", int(static_cast<unsigned char>(c)), ": ", t.message);
      CHECK((t.as_expected || t.message == "no exception"));
      rejected += t.as_expected;
    }
  }
  CHECK(rejected > 0);
}
