// Rendered views of a learned map: every pixel of a camera at a pose rendered by the reference renderer
// (render.hpp, colour stage: composited colour and depth, NICE-SLAM eq. 5-6). As NICE-SLAM's visualiser
// does, the rays are sampled with the frame's measured depth as a guide (stratified samples plus samples
// near the measured depth; stratified only where the sensor gave none), so a view shows how well the map
// explains that frame. A comparison image puts the input beside the rendering: colour above, depth (grey,
// black = no depth, white = the input's farthest depth) below.
#pragma once
#include <cstdint>

#include "nerf/dataset.hpp"
#include "nerf/render.hpp"

namespace core::nerf {

struct RenderedView {
  ColorImage colour;
  DepthImage depth;
};

RenderedView render_view(const NiceModel<float>& model, const SamplingOptions& sampling, const Intrinsics& camera,
                         const Pose& pose, const DepthImage& guide, std::uint64_t seed);

// [input colour | rendered colour] over [input depth | rendered depth], 2 width x 2 height.
ColorImage comparison_image(const RgbdFrame& input, const RenderedView& view);

}  // namespace core::nerf
