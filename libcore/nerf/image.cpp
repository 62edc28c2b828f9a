#include "nerf/image.hpp"

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>

#include "common/errors.hpp"
#include "io/input.hpp"

namespace core::nerf {

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

File open_read(const std::filesystem::path& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    if (!std::filesystem::exists(path)) throw InputMissingError(path.string() + ": no such file");
    throw InputMissingError(path.string() + ": cannot open: " + std::strerror(errno));
  }
  return f;
}

// DataError before anything is allocated for an image of more than kMaxImagePixels (or none): a few bytes of
// header can claim gigapixels (a decompression bomb).
void check_image_size(const std::filesystem::path& path, std::uint64_t width, std::uint64_t height) {
  if (width == 0 || height == 0 || width * height > kMaxImagePixels)
    throw DataError(path.string() + ": a " + std::to_string(width) + " x " + std::to_string(height) +
                    " image is outside the sizes RGB-D frames have (1 to " + std::to_string(kMaxImagePixels) +
                    " pixels)");
}

// A decoded PNG: 8- or 16-bit samples, channels per pixel.
struct PngData {
  int width = 0, height = 0, channels = 0, bit_depth = 0;
  std::vector<std::uint8_t> bytes;  // row-major; 16-bit samples big-endian as in the file
};

void png_error_fn(png_structp png, png_const_charp msg) {
  auto* text = static_cast<std::string*>(png_get_error_ptr(png));
  *text = msg;
  png_longjmp(png, 1);
}
void png_warning_fn(png_structp, png_const_charp) {}

// `expand_to_8bit_rgb`: palette and low-bit grey become 8-bit; otherwise the file's own layout.
PngData decode_png(const std::filesystem::path& path, bool colour) {
  File f = open_read(path);
  unsigned char sig[8];
  if (std::fread(sig, 1, 8, f.get()) != 8 || png_sig_cmp(sig, 0, 8) != 0)
    throw DataError(path.string() + ": not a PNG file");
  std::string error;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, png_error_fn, png_warning_fn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) throw Error(ExitCode::internal, "libpng: out of memory");
  PngData out;
  std::vector<png_bytep> rows;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw DataError(path.string() + ": corrupt PNG: " + error);
  }
  png_init_io(png, f.get());
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  const int type = png_get_color_type(png, info);
  if (colour) {
    png_set_palette_to_rgb(png);
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, info);
  try {
    check_image_size(path, png_get_image_width(png, info), png_get_image_height(png, info));
  } catch (const DataError&) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw;
  }
  out.width = int(png_get_image_width(png, info));
  out.height = int(png_get_image_height(png, info));
  out.channels = png_get_channels(png, info);
  out.bit_depth = png_get_bit_depth(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  out.bytes.resize(row_bytes * std::size_t(out.height));
  rows.resize(std::size_t(out.height));
  for (int y = 0; y < out.height; ++y) rows[std::size_t(y)] = out.bytes.data() + row_bytes * std::size_t(y);
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return out;
}

struct JpegErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}
// libjpeg only warns about entropy-coded data that ends early (the file, or a segment at the next marker) and
// decodes the rest as grey: here that is an error, so that a few bytes cannot stand for a large picture (other
// warnings, such as extraneous bytes before a marker, stay silent as before).
void jpeg_emit_message(j_common_ptr cinfo, int msg_level) {
  const int code = cinfo->err->msg_code;
  if (msg_level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER)) jpeg_error_exit(cinfo);
}

ColorImage decode_jpeg(const std::filesystem::path& path, std::FILE* f) {
  jpeg_decompress_struct cinfo;
  JpegErrorManager err;
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = jpeg_error_exit;
  err.base.output_message = [](j_common_ptr) {};
  err.base.emit_message = jpeg_emit_message;
  ColorImage img;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw DataError(path.string() + ": corrupt JPEG: " + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, f);
  jpeg_read_header(&cinfo, TRUE);
  try {
    check_image_size(path, cinfo.image_width, cinfo.image_height);
  } catch (const DataError&) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  img.width = int(cinfo.output_width);
  img.height = int(cinfo.output_height);
  img.rgb.resize(std::size_t(img.width) * img.height * 3);
  std::vector<unsigned char> row(std::size_t(img.width) * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    const int y = int(cinfo.output_scanline);
    unsigned char* p = row.data();
    jpeg_read_scanlines(&cinfo, &p, 1);
    for (std::size_t k = 0; k < row.size(); ++k) img.rgb[std::size_t(y) * row.size() + k] = row[k] / 255.0f;
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return img;
}

void write_png(const std::filesystem::path& path, int width, int height, int channels, int bit_depth,
               const std::uint8_t* bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  File f(std::fopen(tmp.c_str(), "wb"));
  if (!f) throw IoError(tmp.string() + ": cannot create: " + std::strerror(errno));
  std::string error;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, png_error_fn, png_warning_fn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) throw Error(ExitCode::internal, "libpng: out of memory");
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    f.reset();
    std::filesystem::remove(tmp);
    throw IoError(path.string() + ": PNG write failed: " + error);
  }
  png_init_io(png, f.get());
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), bit_depth,
               channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 3);
  png_write_info(png, info);
  const std::size_t row_bytes = std::size_t(width) * channels * (bit_depth / 8);
  std::vector<png_bytep> rows(static_cast<std::size_t>(height), nullptr);
  for (int y = 0; y < height; ++y) rows[std::size_t(y)] = const_cast<png_bytep>(bytes + row_bytes * std::size_t(y));
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fflush(f.get()) != 0 || std::ferror(f.get())) {
    f.reset();
    std::filesystem::remove(tmp);
    throw IoError(path.string() + ": write failed");
  }
  f.reset();
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw IoError(path.string() + ": rename failed: " + ec.message());
}

}  // namespace

ColorImage read_color_image(const std::filesystem::path& path) {
  {
    File f = open_read(path);
    unsigned char sig[3] = {0, 0, 0};
    const std::size_t n = std::fread(sig, 1, 3, f.get());
    if (n == 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF) {
      std::rewind(f.get());
      return decode_jpeg(path, f.get());
    }
  }
  const PngData d = decode_png(path, /*colour=*/true);
  ColorImage img;
  img.width = d.width;
  img.height = d.height;
  img.rgb.resize(d.bytes.size());
  for (std::size_t k = 0; k < d.bytes.size(); ++k) img.rgb[k] = d.bytes[k] / 255.0f;
  return img;
}

std::vector<std::uint16_t> read_depth_png16(const std::filesystem::path& path, int& width, int& height) {
  const PngData d = decode_png(path, /*colour=*/false);
  if (d.channels != 1 || d.bit_depth != 16)
    throw DataError(path.string() + ": depth PNG must be 16-bit single-channel, got " + std::to_string(d.bit_depth) +
                    "-bit with " + std::to_string(d.channels) + " channel(s)");
  width = d.width;
  height = d.height;
  std::vector<std::uint16_t> out(std::size_t(width) * height);
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = std::uint16_t(d.bytes[2 * k] << 8 | d.bytes[2 * k + 1]);
  return out;
}

DepthImage read_depth_image(const std::filesystem::path& path, double scale) {
  DepthImage img;
  const auto raw = read_depth_png16(path, img.width, img.height);
  img.depth.resize(raw.size());
  for (std::size_t k = 0; k < raw.size(); ++k) img.depth[k] = float(raw[k] / scale);
  return img;
}

void write_png_rgb8(const std::filesystem::path& path, int width, int height, const std::uint8_t* rgb) {
  write_png(path, width, height, 3, 8, rgb);
}

void write_png_gray16(const std::filesystem::path& path, int width, int height, const std::uint16_t* values) {
  std::vector<std::uint8_t> be(std::size_t(width) * height * 2);
  for (std::size_t k = 0; k < be.size() / 2; ++k) {
    be[2 * k] = std::uint8_t(values[k] >> 8);
    be[2 * k + 1] = std::uint8_t(values[k] & 0xFF);
  }
  write_png(path, width, height, 1, 16, be.data());
}

void write_color_png(const std::filesystem::path& path, const ColorImage& image) {
  std::vector<std::uint8_t> bytes(image.rgb.size());
  for (std::size_t k = 0; k < bytes.size(); ++k)
    bytes[k] = std::uint8_t(std::lround(std::clamp(image.rgb[k], 0.0f, 1.0f) * 255.0f));
  write_png_rgb8(path, image.width, image.height, bytes.data());
}

void write_depth_png(const std::filesystem::path& path, const DepthImage& image, double scale) {
  std::vector<std::uint16_t> v(image.depth.size());
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = std::uint16_t(std::clamp(std::lround(double(image.depth[k]) * scale), 0L, 65535L));
  write_png_gray16(path, image.width, image.height, v.data());
}

}  // namespace core::nerf
