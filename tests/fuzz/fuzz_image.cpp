// RGB-D frame images (nice-slam-run): the first byte picks the reader, colour (PNG or JPEG by signature) or
// 16-bit depth PNG; an image that decodes must hold width x height pixels.
#include <stdexcept>

#include "fuzz_support.hpp"
#include "nerf/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto path = fuzz::file("i.png", fuzz::text(data + 1, size - 1));
  return fuzz::expect_clean([&] {
    if (data[0] & 1) {
      const auto d = core::nerf::read_depth_image(path, 5000.0);
      if (d.depth.size() != std::size_t(d.width) * d.height) throw std::logic_error("depth size mismatch");
    } else {
      const auto c = core::nerf::read_color_image(path);
      if (c.rgb.size() != 3 * std::size_t(c.width) * c.height) throw std::logic_error("colour size mismatch");
    }
  });
}
