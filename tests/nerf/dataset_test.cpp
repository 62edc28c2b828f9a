// Images and RGB-D dataset layouts: PNG round trips, slambook's ICL-NUIM frames (negative fy) checked
// by cross-frame depth consistency, a hand-made TUM folder, and malformed datasets.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "common/errors.hpp"
#include "nerf/dataset.hpp"
#include "test_support.hpp"

using namespace core;
using namespace core::nerf;
using namespace core::test;

namespace {

void write_small_frame(const fs::path& colour, const fs::path& depth, int w, int h, float z) {
  ColorImage c;
  c.width = w;
  c.height = h;
  c.rgb.resize(std::size_t(w) * h * 3);
  for (std::size_t k = 0; k < c.rgb.size(); ++k) c.rgb[k] = float(k % 256) / 255.0f;
  DepthImage d;
  d.width = w;
  d.height = h;
  d.depth.assign(std::size_t(w) * h, z);
  write_color_png(colour, c);
  write_depth_png(depth, d, 5000.0);
}

// A TUM folder with 3 colour frames, 3 depth frames (one 0.1 s off) and ground truth.
fs::path make_tum(const TempDir& dir) {
  const fs::path root = dir / "tum";
  fs::create_directories(root / "rgb");
  fs::create_directories(root / "depth");
  std::string rgb = "# colour\n", depth = "# depth\n";
  const double tc[3] = {1.00, 1.10, 1.20}, td[3] = {1.005, 1.095, 1.35};
  for (int i = 0; i < 3; ++i) {
    write_small_frame(root / ("rgb/" + std::to_string(i) + ".png"), root / ("depth/" + std::to_string(i) + ".png"), 8,
                      6, 1.0f + i);
    rgb += std::to_string(tc[i]) + " rgb/" + std::to_string(i) + ".png\n";
    depth += std::to_string(td[i]) + " depth/" + std::to_string(i) + ".png\n";
  }
  write_text(root / "rgb.txt", rgb);
  write_text(root / "depth.txt", depth);
  write_text(root / "groundtruth.txt", "0.999 1 2 3 0 0 0 1\n1.101 4 5 6 0 0 0 1\n");
  return root;
}

DatasetOptions with_camera(double fx, double fy, double cx, double cy) {
  DatasetOptions o;
  o.fx = fx;
  o.fy = fy;
  o.cx = cx;
  o.cy = cy;
  return o;
}

}  // namespace

TEST_CASE("PNG round trips: 8-bit colour and 16-bit depth") {
  TempDir dir("nerf-png");
  std::vector<std::uint16_t> v(7 * 5);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = std::uint16_t(k * 1871 + 3);
  write_png_gray16(dir / "d.png", 7, 5, v.data());
  int w = 0, h = 0;
  CHECK(read_depth_png16(dir / "d.png", w, h) == v);
  CHECK(w == 7);
  CHECK(h == 5);
  std::vector<std::uint8_t> rgb(7 * 5 * 3);
  for (std::size_t k = 0; k < rgb.size(); ++k) rgb[k] = std::uint8_t(k * 7);
  write_png_rgb8(dir / "c.png", 7, 5, rgb.data());
  const ColorImage c = read_color_image(dir / "c.png");
  for (std::size_t k = 0; k < rgb.size(); ++k) CHECK(std::lround(c.rgb[k] * 255.0f) == rgb[k]);
  // A colour PNG is not a depth PNG; a truncated PNG is corrupt; a text file is not a PNG.
  CHECK_THROWS_AS(read_depth_png16(dir / "c.png", w, h), DataError);
  const auto bytes = read_text(dir / "d.png");
  write_text(dir / "cut.png", bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_AS(read_depth_png16(dir / "cut.png", w, h), DataError);
  write_text(dir / "t.png", "hello");
  CHECK_THROWS_AS(read_color_image(dir / "t.png"), DataError);
  CHECK_THROWS_AS(read_color_image(dir / "none.png"), InputMissingError);
}

TEST_CASE("slambook ICL-NUIM frames: folder layout, negative fy, cross-frame depth consistency") {
  if (!have_dataset("rgbd/slambook-ch12/pose.txt")) return;
  const fs::path root = datasets_dir() / "rgbd/slambook-ch12";
  // Fraction of frame-a pixels whose back-projection, moved into frame b by the poses, lands on a
  // frame-b depth within tol.
  auto agreement = [&](double fy, int ia, int ib, double tol) {
    const Dataset d = open_dataset(root, with_camera(481.2, fy, 319.5, 239.5));
    REQUIRE(d.layout == "folder");
    REQUIRE(d.frames.size() == 5);
    const RgbdFrame a = load_frame(d, std::size_t(ia)), b = load_frame(d, std::size_t(ib));
    const Pose b_from_a = b.groundtruth->inverse() * *a.groundtruth;
    int agree = 0, seen = 0;
    for (int y = 0; y < 480; y += 8)
      for (int x = 0; x < 640; x += 8) {
        const double z = a.depth.at(x, y);
        if (z <= 0) continue;
        const Vec3 p = b_from_a * (d.camera.ray(x, y) * z);
        const int u = int(std::lround(d.camera.fx * p.x() / p.z() + d.camera.cx));
        const int v = int(std::lround(d.camera.fy * p.y() / p.z() + d.camera.cy));
        if (p.z() <= 0 || u < 0 || v < 0 || u >= 640 || v >= 480 || b.depth.at(u, v) <= 0) continue;
        ++seen;
        agree += std::abs(b.depth.at(u, v) - p.z()) < tol;
      }
    return double(agree) / std::max(seen, 1);
  };
  // The sequence's poses are accurate to a few centimetres: within 10 cm, nearly every overlapping
  // pixel agrees with the right intrinsics (measured 0.98 and 0.95), few with fy's sign flipped (0.14, 0.16).
  for (int i : {0, 3}) {
    const double right = agreement(-480.0, i, i + 1, 0.1), wrong = agreement(480.0, i, i + 1, 0.1);
    MESSAGE("frames " << i + 1 << "->" << i + 2 << ": agreement with fy=-480 " << right << ", with fy=+480 " << wrong);
    CHECK(right > 0.9);
    CHECK(wrong < 0.3);
  }

  const Dataset d = open_dataset(root, with_camera(481.2, -480.0, 319.5, 239.5));
  const RgbdFrame f = load_frame(d, 0);
  CHECK(f.color.width == 640);
  CHECK(f.depth.height == 480);
  const auto valid = std::count_if(f.depth.depth.begin(), f.depth.depth.end(), [](float z) { return z > 0; });
  CHECK(valid > 640 * 480 / 2);
  DatasetOptions quarter = with_camera(481.2, -480.0, 319.5, 239.5);
  quarter.downscale = 4;
  const Dataset q = open_dataset(root, quarter);
  CHECK(q.camera.width == 160);
  CHECK(q.camera.fy == doctest::Approx(-120.0));
  CHECK(q.camera.cx == doctest::Approx(79.5));
  const RgbdFrame g = load_frame(q, 0);
  CHECK(g.depth.at(10, 10) == f.depth.at(42, 42));
}

TEST_CASE("TUM layout: association of depth and ground truth by timestamp") {
  TempDir dir("nerf-tum");
  const fs::path root = make_tum(dir);
  const Dataset d = open_dataset(root, with_camera(5, 5, 3.5, 2.5));
  CHECK(d.layout == "tum");
  REQUIRE(d.frames.size() == 2);  // the third colour frame has no depth within 0.02 s
  CHECK(d.frames[1].depth.filename() == "1.png");
  REQUIRE(d.frames[0].groundtruth.has_value());
  CHECK(d.frames[1].groundtruth->t.x() == 4.0);
  const RgbdFrame f = load_frame(d, 1);
  CHECK(f.depth.at(3, 3) == doctest::Approx(2.0f));
}

TEST_CASE("malformed datasets: exit codes 65 / 66 / 2 with the file named") {
  TempDir dir("nerf-bad");
  auto code_of = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      MESSAGE(std::string(e.what()));
      return int(e.code());
    }
    return 0;
  };
  const auto cam = with_camera(5, 5, 3.5, 2.5);
  CHECK(code_of([&] { open_dataset(dir / "nowhere", cam); }) == 66);
  fs::create_directories(dir / "empty");
  CHECK(code_of([&] { open_dataset(dir / "empty", cam); }) == 66);
  {
    const fs::path root = make_tum(dir);
    CHECK(code_of([&] { open_dataset(root, DatasetOptions{}); }) == 2);  // no intrinsics anywhere
    fs::remove(root / "depth.txt");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 66);
  }
  {
    TempDir d2("nerf-bad2");
    const fs::path root = make_tum(d2);
    write_text(root / "depth.txt", "1.0 depth/0.png\nbroken line with words\n");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 65);
  }
  {
    TempDir d3("nerf-bad3");
    const fs::path root = make_tum(d3);
    fs::copy_file(root / "rgb/0.png", root / "depth/1.png", fs::copy_options::overwrite_existing);  // 8-bit depth
    const Dataset d = open_dataset(root, cam);
    CHECK(code_of([&] { load_frame(d, 1); }) == 65);
    fs::remove(root / "rgb/1.png");
    CHECK(code_of([&] { load_frame(d, 1); }) == 66);
  }
  {
    // Folder layout with one pose fewer than images.
    const fs::path root = dir / "folder";
    fs::create_directories(root);
    for (int i = 1; i <= 3; ++i)
      write_small_frame(root / ("color_" + std::to_string(i) + ".png"), root / ("depth_" + std::to_string(i) + ".png"),
                        8, 6, 1.0f);
    write_text(root / "pose.txt", "0 0 0 0 0 0 1\n0 0 0 0 0 0 1\n");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 65);
    write_text(root / "pose.txt", "0 0 0 0 0 0 1\n0 0 0 0 0 0 1\n0 0 x 0 0 0 1\n");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 65);
    // A frame number beyond long (std::stol threw out_of_range: exit 1), and two names of one number.
    write_text(root / "pose.txt", "0 0 0 0 0 0 1\n0 0 0 0 0 0 1\n0 0 0 0 0 0 1\n");
    write_text(root / "color_99999999999999999999.png", "");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 65);
    fs::remove(root / "color_99999999999999999999.png");
    write_text(root / "color_01.png", "");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 65);
    fs::remove(root / "color_01.png");
    CHECK(code_of([&] { open_dataset(root, cam); }) == 0);
  }
  {
    // Replica layout with a frame of another size.
    const fs::path root = dir / "replica";
    fs::create_directories(root / "results");
    write_small_frame(root / "results/frame000000.png", root / "results/depth000000.png", 8, 6, 1.0f);
    write_small_frame(root / "results/frame000001.png", root / "results/depth000001.png", 10, 6, 1.0f);
    write_text(root / "traj.txt", "1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\n1 0 0 0.1 0 1 0 0 0 0 1 0 0 0 0 1\n");
    const Dataset d = open_dataset(root, cam);
    CHECK(d.layout == "replica");
    CHECK(d.depth_scale == 6553.5);
    CHECK(code_of([&] { load_frame(d, 0); }) == 0);
    CHECK(code_of([&] { load_frame(d, 1); }) == 65);
  }
}

// Found by fuzz_image (tests/fuzz): 164 bytes of progressive JPEG claiming 7174 x 8982 pixels made the reader
// allocate 770 MB and decode 64 million grey pixels from nothing (a timeout); 161 bytes claiming 223 x 63475
// (within the size limit) did the same with 14 million. Images beyond kMaxImagePixels are refused before any
// allocation, and entropy-coded data that ends early (the file, or a segment) is an error, not a grey picture.
TEST_CASE("image readers: a header claiming a huge image, and a truncated JPEG, are DataErrors") {
  TempDir dir("nerf-image-bomb");
  const auto corpus = [](const char* name) {  // the fuzz corpus's inputs, without their selector byte
    return read_text(source_dir() / "tests/fuzz/corpus/image" / name).substr(1);
  };
  write_text(dir / "bomb.jpg", corpus("jpeg_bomb.bin"));
  CHECK_THROWS_WITH_AS(read_color_image(dir / "bomb.jpg"), doctest::Contains("7174 x 8982 image is outside"), DataError);
  write_text(dir / "sparse.jpg", corpus("jpeg_sparse.bin"));
  CHECK_THROWS_WITH_AS(read_color_image(dir / "sparse.jpg"), doctest::Contains("corrupt JPEG"), DataError);
  const std::string jpeg = corpus("rgb.jpg");
  write_text(dir / "whole.jpg", jpeg);
  const ColorImage whole = read_color_image(dir / "whole.jpg");
  CHECK(whole.width == 6);
  CHECK(whole.height == 4);
  write_text(dir / "cut.jpg", jpeg.substr(0, jpeg.size() - 40));
  CHECK_THROWS_WITH_AS(read_color_image(dir / "cut.jpg"), doctest::Contains("corrupt JPEG"), DataError);
}
