// The map held on an accelerator for a whole run (`device: cuda`; render_cuda.hpp implements it): the
// feature grids, decoder weights and background logits are uploaded once, tracking and mapping render
// there, mapping's gradients and Adam steps stay there, and only what the host asks for comes back (the
// rendered outputs of the sampled rays, the pose gradient, the loss; the grids at the end). NiceSlam
// (slam.hpp) calls it in place of render_forward / render_loss / render_backward and the host Adam; the
// rays and sample depths still come from the host with the same random streams, so a device run and a CPU
// run see the same pixels and samples and can be compared.
#pragma once
#include <cstddef>
#include <string>

#include "nerf/render.hpp"

namespace core::nerf {

class MapDevice {
 public:
  virtual ~MapDevice() = default;
  virtual std::string name() const = 0;
  // render_forward's outputs (depth, weight, variance, colour) of `rays`.
  virtual void render(Stage stage, const RayBundle<float>& rays, RenderOutput<float>& out) = 0;
  // Tracking: render_loss of the colour stage and its gradient with respect to the camera pose of rays
  // with origin t and directions R u (all from one camera): g_rot = sum_r d_r x dL/dd_r (a left rotation
  // increment), g_trans = sum_r dL/do_r; the per-ray terms are reduced on the device.
  virtual double pose_gradient(const RayBundle<float>& rays, const RayTargets<float>& targets,
                               const LossOptions& loss, Vec3& g_rot, Vec3& g_trans) = 0;
  // Mapping: fresh Adam moments (each mapping call of the host path starts new optimisers too).
  virtual void start_mapping() = 0;
  // One mapping iteration: render_loss of `stage`, the gradients of the grids the stage reads (and of the
  // background logits in the colour stage when the model has them) accumulated on the device, then one
  // Adam step (optim.hpp's meaning) of each of those with step size lr[level] (lr_background). The loss.
  virtual double map_step(Stage stage, const RayBundle<float>& rays, const RayTargets<float>& targets,
                          const LossOptions& loss, const double lr[4], double lr_background) = 0;
  // The device's grids and background logits copied into `model` (the decoders never change there).
  virtual void download(NiceModel<float>& model) const = 0;
  virtual std::size_t bytes() const = 0;  // device memory this map holds (buffers it allocated)
};

}  // namespace core::nerf
