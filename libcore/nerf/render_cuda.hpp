// The fused CUDA path of NICE-SLAM's rendering (render.hpp has the CPU reference and the equations): one
// device thread per ray samples the points, reads the grids (trilinear), runs the decoders, composites
// depth, colour, weight and variance (plus the background model behind the last sample, when the model
// has one), evaluates the ray's share of the loss (render_loss), and runs the backward pass in the same
// thread (decoder activations recomputed per sample instead of stored), adding dL/d grid features and
// dL/d background logits into device gradient buffers (atomics) and writing dL/d origin and dL/d direction
// of the ray. Around it: a deterministic block reduction of the per-ray pose gradients and losses, and an
// Adam step over device arrays. make_cuda_map keeps a model on the device for a whole run (map_device.hpp).
// The same source runs on the device (sm_90) and on the host SIMT emulator (tests/support/simt). Decoder
// weights are inputs only (no decoder gradients: pretraining stays on the CPU). The limits below hold the
// per-thread state in registers / local memory. The functions need a CUDA build (TOOLKIT_HAVE_CUDA); the
// limits are plain constants for the checks of any build.
#pragma once
#include <memory>

#include "nerf/map_device.hpp"
#include "nerf/render.hpp"

namespace core::nerf {

inline constexpr int kCudaMaxChannels = 32;   // features per grid vertex (model.channels)
inline constexpr int kCudaMaxWidth = 64;      // decoder widths (model.hidden; the fine decoder reads 2 x channels)
inline constexpr int kCudaMaxSamples = 128;   // samples per ray (sampling.stratified + sampling.surface)

// render_forward + render_loss + render_backward (grid and background parts of `grad`, when given, and
// d_origins / d_dirs, when given) with the same meaning, in float32; returns the loss. The model and the
// rays are uploaded per call. std::invalid_argument beyond the limits above.
double render_loss_backward_cuda(const NiceModel<float>& model, Stage stage, const RayBundle<float>& rays,
                                 const RayTargets<float>& targets, const LossOptions& loss, RenderOutput<float>& out,
                                 ModelGrad<float>* grad, Mat<float>* d_origins, Mat<float>* d_dirs);

// The model's grids, decoders and background uploaded once to the current device (MapDevice).
// std::invalid_argument beyond the limits above (samples are checked per call).
std::unique_ptr<MapDevice> make_cuda_map(const NiceModel<float>& model);

}  // namespace core::nerf
