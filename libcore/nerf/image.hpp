// Images of an RGB-D frame and their files: 8-bit colour PNG/JPEG (libpng, libjpeg) read as floats in
// [0, 1]; 16-bit depth PNG read as raw sensor units; PNG writers for colour and depth. Decoding errors
// (truncated file, wrong bit depth, not an image) are DataErrors naming the file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

namespace core::nerf {

struct ColorImage {
  int width = 0, height = 0;
  std::vector<float> rgb;  // row-major, 3 floats per pixel in [0, 1]
  const float* at(int x, int y) const { return &rgb[3 * (std::size_t(y) * width + x)]; }
};

struct DepthImage {
  int width = 0, height = 0;
  std::vector<float> depth;  // metres, row-major; 0 where the sensor gave no depth
  float at(int x, int y) const { return depth[std::size_t(y) * width + x]; }
};

// The largest image the readers decode (2^25 pixels, 8192 x 4096): a larger one, or one without pixels, is a
// DataError before anything is allocated for it, as is a JPEG that ends before its last scan.
inline constexpr std::uint64_t kMaxImagePixels = std::uint64_t{1} << 25;

// 8-bit RGB, RGBA (alpha dropped), grey or palette PNG, or a baseline/progressive JPEG (chosen by the
// file's signature).
ColorImage read_color_image(const std::filesystem::path& path);
// A 16-bit single-channel PNG as raw values; DataError for any other kind of PNG.
std::vector<std::uint16_t> read_depth_png16(const std::filesystem::path& path, int& width, int& height);
// A 16-bit depth PNG divided by `scale` (units per metre); 0 stays 0 (no depth).
DepthImage read_depth_image(const std::filesystem::path& path, double scale);

// Writers (through a temporary file and rename); IoError on failure.
void write_png_rgb8(const std::filesystem::path& path, int width, int height, const std::uint8_t* rgb);
void write_png_gray16(const std::filesystem::path& path, int width, int height, const std::uint16_t* values);
// Colour in [0, 1] (clamped) to 8-bit PNG; depth in metres times `scale`, rounded, to 16-bit PNG.
void write_color_png(const std::filesystem::path& path, const ColorImage& image);
void write_depth_png(const std::filesystem::path& path, const DepthImage& image, double scale);

}  // namespace core::nerf
