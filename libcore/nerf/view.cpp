#include "nerf/view.hpp"

#include <algorithm>

#include "common/errors.hpp"

namespace core::nerf {

RenderedView render_view(const NiceModel<float>& model, const SamplingOptions& sampling, const Intrinsics& camera,
                         const Pose& pose, const DepthImage& guide, std::uint64_t seed) {
  const int W = camera.width, H = camera.height;
  if (guide.width != W || guide.height != H)
    throw DataError("render_view: the guide depth is " + std::to_string(guide.width) + "x" +
                    std::to_string(guide.height) + ", the camera " + std::to_string(W) + "x" + std::to_string(H));
  RenderedView v;
  v.colour.width = v.depth.width = W;
  v.colour.height = v.depth.height = H;
  v.colour.rgb.assign(std::size_t(W) * H * 3, 0.0f);
  v.depth.depth.assign(std::size_t(W) * H, 0.0f);
  Rng rng(seed);
  const int rows_per_chunk = std::max(1, 4096 / W);
  RayBundle<float> rays;
  RenderCache<float> cache;
  RenderOutput<float> out;
  for (int y0 = 0; y0 < H; y0 += rows_per_chunk) {
    const int y1 = std::min(H, y0 + rows_per_chunk);
    std::vector<Vec3> dirs;
    std::vector<float> measured;
    for (int y = y0; y < y1; ++y)
      for (int x = 0; x < W; ++x) {
        dirs.push_back(camera.ray(x, y));
        measured.push_back(guide.at(x, y));
      }
    camera_rays(pose, dirs, rays);
    sample_depths(measured, sampling, rng, rays.z);
    render_forward(model, Stage::colour, rays, cache, out);
    const std::size_t first = std::size_t(y0) * W;
    for (std::size_t r = 0; r < dirs.size(); ++r) {
      v.depth.depth[first + r] = out.depth(Eigen::Index(r));
      for (int c = 0; c < 3; ++c) v.colour.rgb[3 * (first + r) + std::size_t(c)] = out.colour(c, Eigen::Index(r));
    }
  }
  return v;
}

ColorImage comparison_image(const RgbdFrame& input, const RenderedView& view) {
  const int W = view.colour.width, H = view.colour.height;
  ColorImage out;
  out.width = 2 * W;
  out.height = 2 * H;
  out.rgb.assign(std::size_t(out.width) * out.height * 3, 0.0f);
  float far = 0;
  for (float d : input.depth.depth) far = std::max(far, d);
  const float inv = far > 0 ? 1.0f / far : 0.0f;
  auto put = [&](int x, int y, const float* rgb) { std::copy_n(rgb, 3, &out.rgb[3 * (std::size_t(y) * out.width + x)]); };
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      put(x, y, input.color.at(x, y));
      put(W + x, y, view.colour.at(x, y));
      const float a = std::min(1.0f, input.depth.at(x, y) * inv), b = std::min(1.0f, view.depth.at(x, y) * inv);
      const float ga[3] = {a, a, a}, gb[3] = {b, b, b};
      put(x, H + y, ga);
      put(W + x, H + y, gb);
    }
  return out;
}

}  // namespace core::nerf
