// Top-down map PNG (see map_png.hpp).
#include "slam/map_png.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <vector>

#include "common/errors.hpp"
#include "common/rundir.hpp"

namespace core::slam {

namespace {

using Rgb = std::array<unsigned char, 3>;

class Canvas {
 public:
  explicit Canvas(int size) : size_(size), pixels_(static_cast<std::size_t>(size) * size * 3, 255) {}
  void dot(int x, int y, const Rgb& c, int radius) {
    for (int dy = -radius; dy <= radius; ++dy)
      for (int dx = -radius; dx <= radius; ++dx) put(x + dx, y + dy, c);
  }
  void line(int x0, int y0, int x1, int y1, const Rgb& c) {  // Bresenham
    const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    for (int err = dx + dy;;) {
      put(x0, y0, c);
      if (x0 == x1 && y0 == y1) break;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  const std::vector<unsigned char>& pixels() const { return pixels_; }

 private:
  void put(int x, int y, const Rgb& c) {
    if (x < 0 || y < 0 || x >= size_ || y >= size_) return;
    std::copy(c.begin(), c.end(), pixels_.begin() + (static_cast<std::size_t>(y) * size_ + x) * 3);
  }
  int size_;
  std::vector<unsigned char> pixels_;
};

}  // namespace

void write_map_png(const std::filesystem::path& path, const Problem& p, const Estimate& x, int size) {
  Eigen::MatrixXd points(2, x.t.cols() + x.m.cols());
  points << x.t.topRows(2), x.m.topRows(2);
  const Eigen::Vector2d lo = points.rowwise().minCoeff(), hi = points.rowwise().maxCoeff();
  const double span = std::max((hi - lo).maxCoeff(), 1e-12), margin = 0.05 * size;
  const double scale = (size - 2 * margin) / span;
  auto px = [&](const Eigen::VectorXd& v) {
    return std::array<int, 2>{static_cast<int>(std::lround(margin + (v(0) - lo(0)) * scale)),
                              static_cast<int>(std::lround(size - margin - (v(1) - lo(1)) * scale))};
  };
  Canvas canvas(size);
  const Rgb grey{190, 190, 190}, blue{30, 80, 200}, red{220, 40, 40};
  for (const PoseEdge& e : p.pose_edges) {
    const auto a = px(x.t.col(e.i)), b = px(x.t.col(e.j));
    canvas.line(a[0], a[1], b[0], b[1], std::abs(e.i - e.j) == 1 ? blue : grey);
  }
  for (int i = 0; i < x.t.cols(); ++i) {
    const auto a = px(x.t.col(i));
    canvas.dot(a[0], a[1], blue, 1);
  }
  for (int j = 0; j < x.m.cols(); ++j) {
    const auto a = px(x.m.col(j));
    canvas.dot(a[0], a[1], red, 3);
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = size;
  image.height = size;
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t bytes = 0;
  if (!png_image_write_to_memory(&image, nullptr, &bytes, 0, canvas.pixels().data(), 0, nullptr))
    throw IoError("map PNG: " + std::string(image.message));
  std::vector<unsigned char> buffer(bytes);
  if (!png_image_write_to_memory(&image, buffer.data(), &bytes, 0, canvas.pixels().data(), 0, nullptr))
    throw IoError("map PNG: " + std::string(image.message));
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(buffer.data()), bytes));
}

}  // namespace core::slam
