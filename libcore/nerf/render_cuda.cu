// Fused rendering, loss and backward pass of NICE-SLAM, one thread per ray (see render_cuda.hpp; the
// equations and the CPU reference are in render.hpp / render.cpp, which this follows step by step).
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device_utils.cuh"
#include "kernels/runtime.hpp"
#include "nerf/render_cuda.hpp"

namespace core::nerf {
namespace {

constexpr int kMaxChannels = 32, kMaxWidth = 64, kMaxLayers = 4, kMaxSamples = 128, kThreads = 64;

#ifdef TOOLKIT_SIMT_EMULATION
// The emulator runs one fiber at a time: a plain add is atomic there.
inline void atomic_add(float* p, float v) { *p += v; }
#else
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
#endif

struct DevGrid {
  float lo[3];
  float voxel;
  int n[3];
  int channels;
  const float* values;  // vertex-major, as FeatureGrid
  float* grad;          // dL/d values (nullptr: not wanted)
};

struct DevMlp {
  int layers;
  int in[kMaxLayers], out[kMaxLayers];
  const float* W[kMaxLayers];  // out x in, column-major (Eigen's layout)
  const float* b[kMaxLayers];
};

struct DevModel {
  DevGrid grid[4];
  DevMlp decoder[4];
  float lo[3], hi[3];
  float scale;  // occupancy = sigmoid(scale * raw)
  int stage;    // Stage
};

struct DevRays {
  int R, N;
  const float *origins, *dirs, *z;  // 3 x R, 3 x R, N x R (column-major)
  const float *depth, *colour, *depth_weight, *sensor_var;
  const unsigned char* active;
  float inv_active;  // 1 / (active rays), 0 when none
  int variance_normalised;
  float colour_weight, eps;
  float *out_depth, *out_weight, *out_variance, *out_colour, *loss;
  float *d_origins, *d_dirs;  // nullptr: not wanted
  int backward;
};

// Per-sample decoder state, recomputed in the backward pass.
struct SampleState {
  float feat[4][kMaxChannels];
  float geo[kMaxLayers][kMaxWidth];     // acts of the coarse or middle decoder
  float fine[kMaxLayers][kMaxWidth];    // acts of the fine decoder
  float colour[kMaxLayers][kMaxWidth];  // acts of the colour decoder
  float raw, rgb[3];
};

__host__ __device__ inline bool uses(int stage, int level) {
  const int coarse = int(Stage::coarse), fine = int(Stage::fine), colour = int(Stage::colour);
  switch (level) {
    case 0: return stage == coarse;
    case 1: return stage != coarse;
    case 2: return stage == fine || stage == colour;
    default: return stage == colour;
  }
}

__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// Trilinear cell of p (render.cpp's cell_of): base vertex and fractions; false outside the grid.
__device__ inline bool cell_of(const DevGrid& g, const float p[3], long long& base, float f[3]) {
  int i[3];
  for (int a = 0; a < 3; ++a) {
    const float u = (p[a] - g.lo[a]) / g.voxel;
    if (!(u >= 0.0f && u <= float(g.n[a] - 1))) return false;
    i[a] = int(u) < g.n[a] - 2 ? int(u) : g.n[a] - 2;
    f[a] = u - float(i[a]);
  }
  base = (static_cast<long long>(i[2]) * g.n[1] + i[1]) * g.n[0] + i[0];
  return true;
}

__device__ inline long long corner_offset(const DevGrid& g, int k) {
  return ((k >> 2) & 1) * static_cast<long long>(g.n[0]) * g.n[1] + ((k >> 1) & 1) * static_cast<long long>(g.n[0]) +
         (k & 1);
}

__device__ inline void trilinear(const float f[3], float w[8], float dw[8][3]) {
  for (int k = 0; k < 8; ++k) {
    const float wx = (k & 1) ? f[0] : 1 - f[0], wy = (k & 2) ? f[1] : 1 - f[1], wz = (k & 4) ? f[2] : 1 - f[2];
    const float sx = (k & 1) ? 1.0f : -1.0f, sy = (k & 2) ? 1.0f : -1.0f, sz = (k & 4) ? 1.0f : -1.0f;
    w[k] = wx * wy * wz;
    dw[k][0] = sx * wy * wz;
    dw[k][1] = wx * sy * wz;
    dw[k][2] = wx * wy * sz;
  }
}

__device__ inline void gather(const DevGrid& g, const float p[3], float* feat) {
  for (int c = 0; c < g.channels; ++c) feat[c] = 0;
  long long base;
  float f[3], w[8], dw[8][3];
  if (!cell_of(g, p, base, f)) return;
  trilinear(f, w, dw);
  for (int k = 0; k < 8; ++k) {
    const float* v = g.values + (base + corner_offset(g, k)) * g.channels;
    for (int c = 0; c < g.channels; ++c) feat[c] += w[k] * v[c];
  }
}

// acts[0] holds the input; acts[l + 1] = relu(W_l acts[l] + b_l); y = the last layer's output.
__device__ inline void mlp_forward(const DevMlp& m, float acts[kMaxLayers][kMaxWidth], float* y) {
  for (int l = 0; l < m.layers; ++l) {
    const int out = m.out[l], in = m.in[l];
    for (int i = 0; i < out; ++i) {
      float s = m.b[l][i];
      for (int j = 0; j < in; ++j) s += m.W[l][i + j * out] * acts[l][j];
      if (l + 1 < m.layers) acts[l + 1][i] = fmaxf(s, 0.0f);
      else y[i] = s;
    }
  }
}

// dL/d input from dL/d output (Mlp::backward without the parameter gradients).
__device__ inline void mlp_backward(const DevMlp& m, const float acts[kMaxLayers][kMaxWidth], const float* dy,
                                    float* dx) {
  float d[kMaxWidth], da[kMaxWidth];
  for (int i = 0; i < m.out[m.layers - 1]; ++i) d[i] = dy[i];
  for (int l = m.layers - 1; l >= 0; --l) {
    const int out = m.out[l], in = m.in[l];
    for (int j = 0; j < in; ++j) {
      float s = 0;
      for (int i = 0; i < out; ++i) s += m.W[l][i + j * out] * d[i];
      da[j] = s;
    }
    if (l == 0) {
      for (int j = 0; j < in; ++j) dx[j] = da[j];
    } else {
      for (int j = 0; j < in; ++j) d[j] = acts[l][j] > 0.0f ? da[j] : 0.0f;
    }
  }
}

// Features, decoder activations, raw geometry output and colour of a sample inside the bound.
__device__ inline void evaluate(const DevModel& m, const float p[3], SampleState& s) {
  for (int l = 0; l < 4; ++l)
    if (uses(m.stage, l)) gather(m.grid[l], p, s.feat[l]);
  const int geo_level = m.stage == int(Stage::coarse) ? 0 : 1;
  const int C = m.grid[geo_level].channels;
  for (int c = 0; c < C; ++c) s.geo[0][c] = s.feat[geo_level][c];
  mlp_forward(m.decoder[geo_level], s.geo, &s.raw);
  if (uses(m.stage, 2)) {
    const int C2 = m.grid[2].channels;
    for (int c = 0; c < C; ++c) s.fine[0][c] = s.feat[1][c];
    for (int c = 0; c < C2; ++c) s.fine[0][C + c] = s.feat[2][c];
    float y;
    mlp_forward(m.decoder[2], s.fine, &y);
    s.raw += y;
  }
  if (uses(m.stage, 3)) {
    for (int c = 0; c < m.grid[3].channels; ++c) s.colour[0][c] = s.feat[3][c];
    mlp_forward(m.decoder[3], s.colour, s.rgb);
    for (int ch = 0; ch < 3; ++ch) s.rgb[ch] = sigmoid(s.rgb[ch]);
  }
}

__device__ inline bool inside_bound(const DevModel& m, const float p[3]) {
  for (int a = 0; a < 3; ++a)
    if (!(p[a] >= m.lo[a] && p[a] <= m.hi[a])) return false;
  return true;
}

__global__ void fused_render_kernel(DevModel m, DevRays r) {
  const int ray = blockIdx.x * blockDim.x + threadIdx.x;
  if (ray >= r.R) return;
  const int N = r.N;
  const bool colour = uses(m.stage, 3);
  float o[3], d[3];
  for (int a = 0; a < 3; ++a) {
    o[a] = r.origins[3 * ray + a];
    d[a] = r.dirs[3 * ray + a];
  }
  SampleState s;
  float occ[kMaxSamples], trans[kMaxSamples], rgb[kMaxSamples][3];
  float D = 0, W = 0, E2 = 0, I[3] = {0, 0, 0}, tr = 1;
  for (int k = 0; k < N; ++k) {
    const float z = r.z[ray * N + k];
    const float p[3] = {o[0] + z * d[0], o[1] + z * d[1], o[2] + z * d[2]};
    float oc = 0;
    rgb[k][0] = rgb[k][1] = rgb[k][2] = 0;
    if (inside_bound(m, p)) {
      evaluate(m, p, s);
      oc = sigmoid(m.scale * s.raw);
      if (colour)
        for (int ch = 0; ch < 3; ++ch) rgb[k][ch] = s.rgb[ch];
    }
    occ[k] = oc;
    trans[k] = tr;
    const float w = oc * tr;
    D += w * z;
    W += w;
    E2 += w * z * z;
    if (colour)
      for (int ch = 0; ch < 3; ++ch) I[ch] += w * rgb[k][ch];
    tr *= 1 - oc;
  }
  const float V = fmaxf(0.0f, E2 - 2 * D * D + D * D * W);
  r.out_depth[ray] = D;
  r.out_weight[ray] = W;
  r.out_variance[ray] = V;
  for (int ch = 0; ch < 3; ++ch) r.out_colour[3 * ray + ch] = I[ch];

  // The ray's share of render_loss and dL/d(outputs).
  float loss = 0, gD = 0, gV = 0, gI[3] = {0, 0, 0};
  if (r.active[ray]) {
    const float inv = r.inv_active, dw = r.depth_weight[ray], target = r.depth[ray];
    if (target > 0) {
      const float e = D - target, sgn = float((e > 0) - (e < 0));
      if (r.variance_normalised) {
        const float var = V + r.sensor_var[ray] + r.eps, sd = sqrtf(var);
        loss += dw * fabsf(e) / sd * inv;
        gD = dw * sgn / sd * inv;
        gV = -dw * fabsf(e) / (2 * var * sd) * inv;
      } else {
        loss += dw * fabsf(e) * inv;
        gD = dw * sgn * inv;
      }
    }
    if (r.colour_weight > 0)
      for (int ch = 0; ch < 3; ++ch) {
        const float e = I[ch] - r.colour[3 * ray + ch];
        loss += r.colour_weight * fabsf(e) * inv;
        gI[ch] = r.colour_weight * float((e > 0) - (e < 0)) * inv;
      }
  }
  r.loss[ray] = loss;
  if (!r.backward) return;

  // Backward (render_backward): dQ/do_k = T_k (q_k - S_k) with the suffix composite S_k.
  const float gD2 = gD + gV * (-4 * D + 2 * D * W), gW2 = gV * D * D, gE2 = gV;
  float suffix = 0, d_origin[3] = {0, 0, 0}, d_dir[3] = {0, 0, 0};
  for (int k = N - 1; k >= 0; --k) {
    const float z = r.z[ray * N + k], oc = occ[k], tk = trans[k];
    float q = gW2 + gD2 * z + gE2 * z * z, drgb[3] = {0, 0, 0};
    if (colour) {
      const float w = oc * tk;
      for (int ch = 0; ch < 3; ++ch) {
        q += gI[ch] * rgb[k][ch];
        drgb[ch] = w * gI[ch] * rgb[k][ch] * (1 - rgb[k][ch]);
      }
    }
    const float p[3] = {o[0] + z * d[0], o[1] + z * d[1], o[2] + z * d[2]};
    const bool in = inside_bound(m, p);
    const float draw = in ? tk * (q - suffix) * m.scale * oc * (1 - oc) : 0.0f;
    suffix = oc * q + (1 - oc) * suffix;
    if (!in || (draw == 0 && drgb[0] == 0 && drgb[1] == 0 && drgb[2] == 0)) continue;
    evaluate(m, p, s);
    float dfeat[4][kMaxChannels];
    const int geo_level = m.stage == int(Stage::coarse) ? 0 : 1;
    mlp_backward(m.decoder[geo_level], s.geo, &draw, dfeat[geo_level]);
    if (uses(m.stage, 2)) {
      float dx[kMaxWidth];
      mlp_backward(m.decoder[2], s.fine, &draw, dx);
      const int C1 = m.grid[1].channels;
      for (int c = 0; c < C1; ++c) dfeat[1][c] += dx[c];
      for (int c = 0; c < m.grid[2].channels; ++c) dfeat[2][c] = dx[C1 + c];
    }
    if (colour) mlp_backward(m.decoder[3], s.colour, drgb, dfeat[3]);
    float dp[3] = {0, 0, 0};
    for (int l = 0; l < 4; ++l) {
      if (!uses(m.stage, l)) continue;
      const DevGrid& g = m.grid[l];
      long long base;
      float f[3], w[8], dw[8][3];
      if (!cell_of(g, p, base, f)) continue;
      trilinear(f, w, dw);
      for (int c8 = 0; c8 < 8; ++c8) {
        const long long at = (base + corner_offset(g, c8)) * g.channels;
        float dot = 0;
        for (int c = 0; c < g.channels; ++c) {
          dot += dfeat[l][c] * g.values[at + c];
          if (g.grad) atomic_add(g.grad + at + c, w[c8] * dfeat[l][c]);
        }
        for (int a = 0; a < 3; ++a) dp[a] += dot * dw[c8][a] / g.voxel;
      }
    }
    for (int a = 0; a < 3; ++a) {
      d_origin[a] += dp[a];
      d_dir[a] += z * dp[a];
    }
  }
  if (r.d_origins)
    for (int a = 0; a < 3; ++a) {
      r.d_origins[3 * ray + a] = d_origin[a];
      r.d_dirs[3 * ray + a] = d_dir[a];
    }
}

template <class T>
kernels::DeviceBuffer<T> upload(const T* data, std::size_t n) {
  return kernels::DeviceBuffer<T>(std::span<const T>(data, n));
}

void check_limits(const NiceModel<float>& model, Stage stage, int samples) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("render_loss_backward_cuda: " + what); };
  if (samples > kMaxSamples) fail(std::to_string(samples) + " samples per ray (at most " + std::to_string(kMaxSamples) + ")");
  if (model.background.enabled()) fail("the background model (model.background) has no device path yet");
  for (int l = 0; l < 4; ++l) {
    if (!uses(int(stage), l)) continue;
    if (model.grid[l].channels > kMaxChannels) fail("more than 32 channels");
    const auto& d = model.decoder[l];
    if (d.W.empty() || int(d.W.size()) > kMaxLayers) fail("decoders need 1 to 4 layers");
    for (const auto& w : d.W)
      if (w.rows() > kMaxWidth || w.cols() > kMaxWidth) fail("decoder widths above 64");
  }
}

}  // namespace

double render_loss_backward_cuda(const NiceModel<float>& model, Stage stage, const RayBundle<float>& rays,
                                 const RayTargets<float>& t, const LossOptions& loss, RenderOutput<float>& out,
                                 ModelGrad<float>* grad, Mat<float>* d_origins, Mat<float>* d_dirs) {
  const int R = rays.rays(), N = rays.samples();
  check_limits(model, stage, N);
  out.depth.setZero(R);
  out.weight.setZero(R);
  out.variance.setZero(R);
  out.colour.setZero(3, R);
  if (d_origins) d_origins->setZero(3, R);
  if (d_dirs) d_dirs->setZero(3, R);
  if (R == 0) return 0.0;
  using kernels::DeviceBuffer;
  DevModel m{};
  for (int a = 0; a < 3; ++a) {
    m.lo[a] = float(model.bound_lo[a]);
    m.hi[a] = float(model.bound_hi[a]);
  }
  m.scale = float(model.occupancy_scale);
  m.stage = int(stage);
  std::vector<DeviceBuffer<float>> keep;  // device copies of the model, alive until the kernel is done
  DeviceBuffer<float> grid_grad[4];
  for (int l = 0; l < 4; ++l) {
    if (!uses(int(stage), l)) continue;
    const auto& g = model.grid[l];
    DevGrid& dg = m.grid[l];
    for (int a = 0; a < 3; ++a) dg.lo[a] = float(g.lo[a]);
    dg.voxel = float(g.voxel);
    dg.n[0] = g.nx;
    dg.n[1] = g.ny;
    dg.n[2] = g.nz;
    dg.channels = g.channels;
    keep.push_back(upload(g.values.data(), g.values.size()));
    dg.values = keep.back().data();
    if (grad) {
      grid_grad[l] = DeviceBuffer<float>(g.values.size());
      grid_grad[l].zero();
      dg.grad = grid_grad[l].data();
    }
    const auto& dec = model.decoder[l];
    DevMlp& dm = m.decoder[l];
    dm.layers = int(dec.W.size());
    for (int k = 0; k < dm.layers; ++k) {
      dm.out[k] = int(dec.W[std::size_t(k)].rows());
      dm.in[k] = int(dec.W[std::size_t(k)].cols());
      keep.push_back(upload(dec.W[std::size_t(k)].data(), std::size_t(dec.W[std::size_t(k)].size())));
      dm.W[k] = keep.back().data();
      keep.push_back(upload(dec.b[std::size_t(k)].data(), std::size_t(dec.b[std::size_t(k)].size())));
      dm.b[k] = keep.back().data();
    }
  }
  // Targets, with render_loss's defaults where a field is empty.
  const std::size_t nR = std::size_t(R);
  const std::vector<float> ones(nR, 1.0f), zeros(3 * nR, 0.0f);
  std::vector<unsigned char> active(nR);
  int n_active = 0;
  for (int i = 0; i < R; ++i) n_active += (active[std::size_t(i)] = t.active[std::size_t(i)] != 0);
  auto buffer = [&](const float* data, std::size_t n) {
    keep.push_back(upload(data, n));
    return keep.back().data();
  };
  DevRays r{};
  r.R = R;
  r.N = N;
  r.origins = buffer(rays.origins.data(), std::size_t(3 * R));
  r.dirs = buffer(rays.dirs.data(), std::size_t(3 * R));
  r.z = buffer(rays.z.data(), std::size_t(N) * R);
  r.depth = buffer(t.depth.data(), std::size_t(R));
  r.colour = buffer(t.colour.size() == 3 * R ? t.colour.data() : zeros.data(), std::size_t(3 * R));
  r.depth_weight = buffer(t.depth_weight.size() ? t.depth_weight.data() : ones.data(), std::size_t(R));
  r.sensor_var = buffer(t.sensor_var.size() ? t.sensor_var.data() : zeros.data(), std::size_t(R));
  const DeviceBuffer<unsigned char> active_dev = upload(active.data(), active.size());
  r.active = active_dev.data();
  r.inv_active = n_active ? 1.0f / float(n_active) : 0.0f;
  r.variance_normalised = loss.variance_normalised;
  r.colour_weight = float(loss.colour_weight);
  r.eps = float(loss.eps);
  DeviceBuffer<float> depth(nR), weight(nR), variance(nR), colour(3 * nR), ray_loss(nR), dor, ddi;
  r.out_depth = depth.data();
  r.out_weight = weight.data();
  r.out_variance = variance.data();
  r.out_colour = colour.data();
  r.loss = ray_loss.data();
  if (d_origins || d_dirs) {
    dor = DeviceBuffer<float>(std::size_t(3 * R));
    ddi = DeviceBuffer<float>(std::size_t(3 * R));
    r.d_origins = dor.data();
    r.d_dirs = ddi.data();
  }
  r.backward = grad || d_origins || d_dirs;
  kernels::dev::launch(fused_render_kernel, dim3(unsigned((R + kThreads - 1) / kThreads)), dim3(kThreads), 0, nullptr,
                       m, r);
  auto to = [](const DeviceBuffer<float>& b, float* host) {
    const auto v = b.download();
    std::copy(v.begin(), v.end(), host);
  };
  to(depth, out.depth.data());
  to(weight, out.weight.data());
  to(variance, out.variance.data());
  to(colour, out.colour.data());
  if (d_origins) to(dor, d_origins->data());
  if (d_dirs) to(ddi, d_dirs->data());
  if (grad)
    for (int l = 0; l < 4; ++l)
      if (uses(int(stage), l)) {
        const auto g = grid_grad[l].download();
        for (std::size_t i = 0; i < g.size(); ++i) grad->grid[l][i] += g[i];
      }
  double total = 0;
  for (float v : ray_loss.download()) total += double(v);
  return total;
}

}  // namespace core::nerf
