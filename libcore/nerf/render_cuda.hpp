// The fused CUDA path of NICE-SLAM's rendering (render.hpp has the CPU reference and the equations): one
// device thread per ray samples the points, reads the grids (trilinear), runs the decoders, composites
// depth, colour, weight and variance, evaluates the ray's share of the loss (render_loss), and runs the
// backward pass in the same thread (decoder activations recomputed per sample instead of stored), adding
// dL/d grid features into device gradient buffers (atomics; mapping) and writing dL/d origin and dL/d
// direction of the ray (tracking: the pose gradient follows on the host as for the CPU path). The same
// source runs on the device (sm_90) and on the host SIMT emulator (tests/support/simt). Decoder weights
// are inputs only (no decoder gradients: pretraining stays on the CPU). Limits: channels <= 32, hidden
// width <= 64, samples per ray <= 128, no background model (std::invalid_argument otherwise).
// Needs a CUDA build (TOOLKIT_HAVE_CUDA).
#pragma once
#include "nerf/render.hpp"

namespace core::nerf {

// render_forward + render_loss + render_backward (grid parts of `grad`, when given, and d_origins /
// d_dirs, when given) with the same meaning, in float32; returns the loss. The model and the rays are
// uploaded per call.
double render_loss_backward_cuda(const NiceModel<float>& model, Stage stage, const RayBundle<float>& rays,
                                 const RayTargets<float>& targets, const LossOptions& loss, RenderOutput<float>& out,
                                 ModelGrad<float>* grad, Mat<float>* d_origins, Mat<float>* d_dirs);

}  // namespace core::nerf
