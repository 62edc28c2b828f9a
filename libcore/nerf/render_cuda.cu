// Fused rendering, loss and backward pass of NICE-SLAM, one thread per ray, the per-ray reduction and the
// device Adam step (see render_cuda.hpp; the equations and the CPU reference are in render.hpp /
// render.cpp, which the kernel follows step by step, and optim.hpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device_utils.cuh"
#include "kernels/runtime.hpp"
#include "nerf/optim.hpp"
#include "nerf/render_cuda.hpp"

namespace core::nerf {
namespace {

constexpr int kMaxChannels = kCudaMaxChannels, kMaxWidth = kCudaMaxWidth, kMaxLayers = 4,
              kMaxSamples = kCudaMaxSamples, kThreads = 64, kReduceThreads = 256, kAdamThreads = 256;
#ifdef TOOLKIT_SIMT_EMULATION
// The emulator runs one fiber at a time: a plain add is atomic there; each emulated thread costs a fiber,
// so the grid-stride Adam step runs on fewer blocks (any count gives the same result).
inline void atomic_add(float* p, float v) { *p += v; }
constexpr unsigned kAdamBlocks = 8;
#else
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
constexpr unsigned kAdamBlocks = 1024;
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

struct DevBackground {  // BackgroundModel (model.hpp); azimuth 0: none
  int azimuth, elevation;
  const float* values;  // (e * azimuth + a) * 3 + channel
  float* grad;          // dL/d values (nullptr: not wanted)
};

struct DevModel {
  DevGrid grid[4];
  DevMlp decoder[4];
  DevBackground background;
  float lo[3], hi[3];
  float scale;  // occupancy = sigmoid(scale * raw)
  int stage;    // Stage
};

struct DevRays {
  int R, N;
  const float *origins, *dirs, *z;  // 3 x R, 3 x R, N x R (column-major)
  const float *depth, *colour, *depth_weight, *sensor_var;
  const unsigned char* active;  // nullptr: no loss (render only)
  float inv_active;             // 1 / (active rays), 0 when none
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

// BackgroundModel::locate (model.cpp) in double, as the host computes it: the four vertices, bilinear
// weights and fractions of direction d, and d(cell coordinates)/d(d).
struct BackgroundCell {
  int vertex[4];
  double w[4], du[3], dv[3], fu, fv;
};

__device__ inline void locate(const DevBackground& bg, const float dir[3], BackgroundCell& c) {
  const double pi = 3.14159265358979323846;
  const double x = dir[0], y = dir[1], z = dir[2];
  const double rho2 = x * x + y * y, rho = sqrt(rho2), n2 = rho2 + z * z;
  const double az = atan2(y, x), el = atan2(z, rho);
  const double su = bg.azimuth / (2 * pi), sv = (bg.elevation - 1) / pi;
  const double u = (az + pi) * su, v = fmin(fmax((el + pi / 2) * sv, 0.0), double(bg.elevation - 1));
  const double ufloor = floor(u);
  const int a0 = int(ufloor) % bg.azimuth, a1 = (a0 + 1) % bg.azimuth;
  const int e0 = int(v) < bg.elevation - 2 ? int(v) : bg.elevation - 2, e1 = e0 + 1;
  c.fu = u - ufloor;
  c.fv = v - e0;
  c.vertex[0] = e0 * bg.azimuth + a0;
  c.vertex[1] = e0 * bg.azimuth + a1;
  c.vertex[2] = e1 * bg.azimuth + a0;
  c.vertex[3] = e1 * bg.azimuth + a1;
  c.w[0] = (1 - c.fu) * (1 - c.fv);
  c.w[1] = c.fu * (1 - c.fv);
  c.w[2] = (1 - c.fu) * c.fv;
  c.w[3] = c.fu * c.fv;
  const double ku = rho2 > 0 ? su / rho2 : 0.0, kv = rho > 0 ? sv / n2 : 0.0;
  c.du[0] = -y * ku;
  c.du[1] = x * ku;
  c.du[2] = 0;
  c.dv[0] = rho > 0 ? -z * x / rho * kv : 0.0;
  c.dv[1] = rho > 0 ? -z * y / rho * kv : 0.0;
  c.dv[2] = rho * kv;
}

__device__ inline void background_logits(const DevBackground& bg, const BackgroundCell& c, float logit[3]) {
  for (int ch = 0; ch < 3; ++ch) logit[ch] = 0;
  for (int k = 0; k < 4; ++k)
    for (int ch = 0; ch < 3; ++ch) logit[ch] += float(c.w[k]) * bg.values[3 * c.vertex[k] + ch];
}

__global__ void fused_render_kernel(DevModel m, DevRays r) {
  const int ray = blockIdx.x * blockDim.x + threadIdx.x;
  if (ray >= r.R) return;
  const int N = r.N;
  const bool colour = uses(m.stage, 3);
  const bool background = colour && m.background.azimuth > 0;
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
  // The background behind the last sample: I += T_N c_bg(d).
  BackgroundCell cell;
  float bg_rgb[3] = {0, 0, 0};
  if (background) {
    locate(m.background, d, cell);
    background_logits(m.background, cell, bg_rgb);
    for (int ch = 0; ch < 3; ++ch) {
      bg_rgb[ch] = sigmoid(bg_rgb[ch]);
      I[ch] += tr * bg_rgb[ch];
    }
  }
  const float V = fmaxf(0.0f, E2 - 2 * D * D + D * D * W);
  r.out_depth[ray] = D;
  r.out_weight[ray] = W;
  r.out_variance[ray] = V;
  for (int ch = 0; ch < 3; ++ch) r.out_colour[3 * ray + ch] = I[ch];
  if (!r.active) return;

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

  // Backward (render_backward): dQ/do_k = T_k (q_k - S_k) with the suffix composite S_k; the background
  // is an opaque last sample, so S_N = gI . c_bg.
  const float gD2 = gD + gV * (-4 * D + 2 * D * W), gW2 = gV * D * D, gE2 = gV;
  float suffix = 0, d_origin[3] = {0, 0, 0}, d_dir[3] = {0, 0, 0};
  if (background) {
    suffix = gI[0] * bg_rgb[0] + gI[1] * bg_rgb[1] + gI[2] * bg_rgb[2];
    // dL/d logits = T_N gI sigma'(logit), to the four vertices and, through the cell coordinates, to d.
    double dd[3] = {0, 0, 0};
    for (int ch = 0; ch < 3; ++ch) {
      const float dlogit = tr * gI[ch] * bg_rgb[ch] * (1 - bg_rgb[ch]);
      if (m.background.grad)
        for (int k = 0; k < 4; ++k) atomic_add(m.background.grad + 3 * cell.vertex[k] + ch, float(cell.w[k]) * dlogit);
      const float* v = m.background.values;
      const double v0 = v[3 * cell.vertex[0] + ch], v1 = v[3 * cell.vertex[1] + ch], v2 = v[3 * cell.vertex[2] + ch],
                   v3 = v[3 * cell.vertex[3] + ch];
      const double dlu = (1 - cell.fv) * (v1 - v0) + cell.fv * (v3 - v2);
      const double dlv = (1 - cell.fu) * (v2 - v0) + cell.fu * (v3 - v1);
      for (int a = 0; a < 3; ++a) dd[a] += double(dlogit) * (dlu * cell.du[a] + dlv * cell.dv[a]);
    }
    for (int a = 0; a < 3; ++a) d_dir[a] = float(dd[a]);
  }
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

// One block: sums[0] = sum of the rays' losses and, when d_origins is given, sums[1..3] = sum d_r x dL/dd_r,
// sums[4..6] = sum dL/do_r, in double, in a fixed order (strided partial sums, then a tree): deterministic.
__global__ void reduce_rays_kernel(int R, const float* loss, const float* dirs, const float* d_origins,
                                   const float* d_dirs, double* sums) {
  __shared__ double part[7][kReduceThreads];
  const int t = threadIdx.x;
  double acc[7] = {0, 0, 0, 0, 0, 0, 0};
  for (int r = t; r < R; r += kReduceThreads) {
    acc[0] += double(loss[r]);
    if (!d_origins) continue;
    const double d[3] = {dirs[3 * r], dirs[3 * r + 1], dirs[3 * r + 2]};
    const double g[3] = {d_dirs[3 * r], d_dirs[3 * r + 1], d_dirs[3 * r + 2]};
    acc[1] += d[1] * g[2] - d[2] * g[1];
    acc[2] += d[2] * g[0] - d[0] * g[2];
    acc[3] += d[0] * g[1] - d[1] * g[0];
    for (int a = 0; a < 3; ++a) acc[4 + a] += double(d_origins[3 * r + a]);
  }
  for (int k = 0; k < 7; ++k) part[k][t] = acc[k];
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (t < half)
      for (int k = 0; k < 7; ++k) part[k][t] += part[k][t + half];
    __syncthreads();
  }
  if (t == 0)
    for (int k = 0; k < 7; ++k) sums[k] = part[k][0];
}

// One Adam step (optim.hpp) over n parameters; a and e carry the bias corrections (adam_scale).
__global__ void adam_kernel(long long n, float* params, const float* grad, float* m, float* v, float a, float b1,
                            float b2, float e) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = grad[i];
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    params[i] -= a * m[i] / (sqrtf(v[i]) + e);
  }
}

using kernels::DeviceBuffer;

// b holds n elements (reallocated when its size differs; contents then undefined).
template <class T>
T* fit(DeviceBuffer<T>& b, std::size_t n) {
  if (b.size() != n) b = DeviceBuffer<T>(n);
  return b.data();
}
template <class T>
T* put(DeviceBuffer<T>& b, const T* host, std::size_t n) {
  fit(b, n);
  if (n) b.upload(std::span<const T>(host, n));
  return b.data();
}
template <class T>
void get(const DeviceBuffer<T>& b, T* host) {
  const auto v = b.download();
  std::copy(v.begin(), v.end(), host);
}

// Adam's moments on the device for one parameter array.
struct DeviceAdam {
  DeviceBuffer<float> m, v;
  int t = 0;
  void reset(std::size_t n) {
    fit(m, n);
    fit(v, n);
    if (n) {
      m.zero();
      v.zero();
    }
    t = 0;
  }
  void step(float* params, const float* grad, double lr) {
    const long long n = static_cast<long long>(m.size());
    if (n == 0) return;
    const AdamScale s = adam_scale(++t, lr, kAdamBeta1, kAdamBeta2, kAdamEps);
    const unsigned blocks = std::min(kAdamBlocks, kernels::dev::blocks_for(n, kAdamThreads));
    kernels::dev::launch(adam_kernel, dim3(blocks), dim3(kAdamThreads), 0, nullptr, n, params, grad, m.data(), v.data(),
                         float(s.a), float(kAdamBeta1), float(kAdamBeta2), float(s.e));
  }
};

void check_model(const NiceModel<float>& model) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("fused CUDA rendering: " + what); };
  for (int l = 0; l < 4; ++l) {
    if (model.grid[l].channels > kMaxChannels) fail("more than " + std::to_string(kMaxChannels) + " channels");
    const auto& d = model.decoder[l];
    if (d.W.empty() || int(d.W.size()) > kMaxLayers) fail("decoders need 1 to 4 layers");
    for (const auto& w : d.W)
      if (w.rows() > kMaxWidth || w.cols() > kMaxWidth)
        fail("decoder widths above " + std::to_string(kMaxWidth));
  }
}

// What a launch computes beyond the rendered outputs.
struct Wants {
  bool model_grads = false;  // grid (and background) gradients into the map's gradient buffers
  bool ray_grads = false;    // dL/d origins, dL/d dirs per ray
  bool pose = false;         // their reduction to the pose gradient
};

class CudaMap final : public MapDevice {
 public:
  explicit CudaMap(const NiceModel<float>& model) {
    check_model(model);
    for (int a = 0; a < 3; ++a) {
      m_.lo[a] = float(model.bound_lo[a]);
      m_.hi[a] = float(model.bound_hi[a]);
    }
    m_.scale = float(model.occupancy_scale);
    for (int l = 0; l < 4; ++l) {
      const auto& g = model.grid[l];
      DevGrid& dg = m_.grid[l];
      for (int a = 0; a < 3; ++a) dg.lo[a] = float(g.lo[a]);
      dg.voxel = float(g.voxel);
      dg.n[0] = g.nx;
      dg.n[1] = g.ny;
      dg.n[2] = g.nz;
      dg.channels = g.channels;
      dg.values = put(grid_[l], g.values.data(), g.values.size());
      fit(grid_grad_[l], g.values.size());
      const auto& dec = model.decoder[l];
      DevMlp& dm = m_.decoder[l];
      dm.layers = int(dec.W.size());
      for (int k = 0; k < dm.layers; ++k) {
        const auto& W = dec.W[std::size_t(k)];
        const auto& b = dec.b[std::size_t(k)];
        dm.out[k] = int(W.rows());
        dm.in[k] = int(W.cols());
        decoders_.emplace_back();
        dm.W[k] = put(decoders_.back(), W.data(), std::size_t(W.size()));
        decoders_.emplace_back();
        dm.b[k] = put(decoders_.back(), b.data(), std::size_t(b.size()));
      }
    }
    DevBackground& bg = m_.background;
    bg.azimuth = model.background.azimuth;
    bg.elevation = model.background.elevation;
    bg.values = put(background_, model.background.values.data(), model.background.values.size());
    fit(background_grad_, model.background.values.size());
  }

  std::string name() const override { return kernels::cuda_device_name(0); }

  void render(Stage stage, const RayBundle<float>& rays, RenderOutput<float>& out) override {
    launch(stage, rays, nullptr, LossOptions{}, &out, Wants{});
  }

  double pose_gradient(const RayBundle<float>& rays, const RayTargets<float>& targets, const LossOptions& loss,
                       Vec3& g_rot, Vec3& g_trans) override {
    Wants w;
    w.ray_grads = w.pose = true;
    const double value = launch(Stage::colour, rays, &targets, loss, nullptr, w);
    g_rot = Vec3(sums_[1], sums_[2], sums_[3]);
    g_trans = Vec3(sums_[4], sums_[5], sums_[6]);
    return value;
  }

  void start_mapping() override {
    for (int l = 0; l < 4; ++l) adam_[l].reset(grid_[l].size());
    background_adam_.reset(background_.size());
  }

  double map_step(Stage stage, const RayBundle<float>& rays, const RayTargets<float>& targets, const LossOptions& loss,
                  const double lr[4], double lr_background) override {
    if (adam_[1].m.size() != grid_[1].size()) start_mapping();
    Wants w;
    w.model_grads = true;
    const double value = launch(stage, rays, &targets, loss, nullptr, w);
    if (stage == Stage::colour && m_.background.azimuth > 0)
      background_adam_.step(background_.data(), background_grad_.data(), lr_background);
    for (int l = 0; l < 4; ++l)
      if (uses(int(stage), l)) adam_[l].step(grid_[l].data(), grid_grad_[l].data(), lr[l]);
    return value;
  }

  void download(NiceModel<float>& model) const override {
    for (int l = 0; l < 4; ++l) get(grid_[l], model.grid[l].values.data());
    get(background_, model.background.values.data());
  }

  std::size_t bytes() const override {
    std::size_t n = background_.bytes() + background_grad_.bytes() + background_adam_.m.bytes() +
                    background_adam_.v.bytes() + sums_dev_.bytes() + active_.bytes();
    for (int l = 0; l < 4; ++l)
      n += grid_[l].bytes() + grid_grad_[l].bytes() + adam_[l].m.bytes() + adam_[l].v.bytes();
    for (const auto& b : decoders_) n += b.bytes();
    for (const auto* b : {&origins_, &dirs_, &z_, &depth_, &colour_, &depth_weight_, &sensor_var_, &out_depth_,
                          &out_weight_, &out_variance_, &out_colour_, &ray_loss_, &d_origins_, &d_dirs_})
      n += b->bytes();
    return n;
  }

  // One launch of the fused kernel on `rays` (targets nullptr: outputs only), then the reduction of the
  // rays' losses (and pose gradients) into sums_. Returns the loss.
  double launch(Stage stage, const RayBundle<float>& rays, const RayTargets<float>* t, const LossOptions& loss,
                RenderOutput<float>* out, const Wants& want) {
    const int R = rays.rays(), N = rays.samples();
    if (N > kMaxSamples)
      throw std::invalid_argument("fused CUDA rendering: " + std::to_string(N) + " samples per ray (at most " +
                                  std::to_string(kMaxSamples) + ")");
    std::fill(std::begin(sums_), std::end(sums_), 0.0);
    if (out) {
      out->depth.setZero(R);
      out->weight.setZero(R);
      out->variance.setZero(R);
      out->colour.setZero(3, R);
    }
    DevModel m = m_;
    m.stage = int(stage);
    const bool colour = uses(int(stage), 3);
    if (want.model_grads) {
      for (int l = 0; l < 4; ++l)
        if (uses(int(stage), l)) {
          grid_grad_[l].zero();
          m.grid[l].grad = grid_grad_[l].data();
        }
      if (colour && m.background.azimuth > 0) {
        background_grad_.zero();
        m.background.grad = background_grad_.data();
      }
    }
    if (R == 0) return 0.0;
    const std::size_t nR = std::size_t(R);
    DevRays r{};
    r.R = R;
    r.N = N;
    r.origins = put(origins_, rays.origins.data(), 3 * nR);
    r.dirs = put(dirs_, rays.dirs.data(), 3 * nR);
    r.z = put(z_, rays.z.data(), std::size_t(N) * nR);
    if (t) {
      // Targets, with render_loss's defaults where a field is empty.
      std::vector<float> ones, zeros;
      auto or_default = [&](const float* data, bool given, std::vector<float>& fill, std::size_t n, float v) {
        if (given) return data;
        fill.assign(n, v);
        return static_cast<const float*>(fill.data());
      };
      std::vector<unsigned char> active(nR);
      int n_active = 0;
      for (std::size_t i = 0; i < nR; ++i) n_active += (active[i] = t->active[i] != 0);
      std::vector<float> zeros3;
      r.depth = put(depth_, t->depth.data(), nR);
      r.colour = put(colour_, or_default(t->colour.data(), t->colour.size() == 3 * R, zeros3, 3 * nR, 0.0f), 3 * nR);
      r.depth_weight = put(depth_weight_, or_default(t->depth_weight.data(), t->depth_weight.size() > 0, ones, nR, 1.0f), nR);
      r.sensor_var = put(sensor_var_, or_default(t->sensor_var.data(), t->sensor_var.size() > 0, zeros, nR, 0.0f), nR);
      r.active = put(active_, active.data(), nR);
      r.inv_active = n_active ? 1.0f / float(n_active) : 0.0f;
      r.variance_normalised = loss.variance_normalised;
      r.colour_weight = float(loss.colour_weight);
      r.eps = float(loss.eps);
      r.loss = fit(ray_loss_, nR);
    }
    r.out_depth = fit(out_depth_, nR);
    r.out_weight = fit(out_weight_, nR);
    r.out_variance = fit(out_variance_, nR);
    r.out_colour = fit(out_colour_, 3 * nR);
    if (want.ray_grads) {
      r.d_origins = fit(d_origins_, 3 * nR);
      r.d_dirs = fit(d_dirs_, 3 * nR);
    }
    r.backward = t && (want.model_grads || want.ray_grads);
    kernels::dev::launch(fused_render_kernel, dim3(unsigned((R + kThreads - 1) / kThreads)), dim3(kThreads), 0,
                         nullptr, m, r);
    if (out) {
      get(out_depth_, out->depth.data());
      get(out_weight_, out->weight.data());
      get(out_variance_, out->variance.data());
      get(out_colour_, out->colour.data());
    }
    if (!t) return 0.0;
    fit(sums_dev_, 7);
    const bool pose = want.pose && want.ray_grads;
    kernels::dev::launch(reduce_rays_kernel, dim3(1), dim3(kReduceThreads), 0, nullptr, R,
                         static_cast<const float*>(ray_loss_.data()), static_cast<const float*>(dirs_.data()),
                         pose ? static_cast<const float*>(d_origins_.data()) : nullptr,
                         pose ? static_cast<const float*>(d_dirs_.data()) : nullptr, sums_dev_.data());
    get(sums_dev_, sums_);
    return sums_[0];
  }

  // The gradients of the last launch (render_loss_backward_cuda).
  const DeviceBuffer<float>& grid_grad(int level) const { return grid_grad_[level]; }
  const DeviceBuffer<float>& background_grad() const { return background_grad_; }
  const DeviceBuffer<float>& d_origins() const { return d_origins_; }
  const DeviceBuffer<float>& d_dirs() const { return d_dirs_; }

 private:
  DevModel m_{};
  DeviceBuffer<float> grid_[4], grid_grad_[4], background_, background_grad_;
  std::vector<DeviceBuffer<float>> decoders_;
  DeviceAdam adam_[4], background_adam_;
  // Per-launch buffers, kept between launches (reallocated when the ray count changes).
  DeviceBuffer<float> origins_, dirs_, z_, depth_, colour_, depth_weight_, sensor_var_, out_depth_, out_weight_,
      out_variance_, out_colour_, ray_loss_, d_origins_, d_dirs_;
  DeviceBuffer<unsigned char> active_;
  DeviceBuffer<double> sums_dev_;
  double sums_[7] = {0, 0, 0, 0, 0, 0, 0};
};

}  // namespace

std::unique_ptr<MapDevice> make_cuda_map(const NiceModel<float>& model) { return std::make_unique<CudaMap>(model); }

double render_loss_backward_cuda(const NiceModel<float>& model, Stage stage, const RayBundle<float>& rays,
                                 const RayTargets<float>& t, const LossOptions& loss, RenderOutput<float>& out,
                                 ModelGrad<float>* grad, Mat<float>* d_origins, Mat<float>* d_dirs) {
  CudaMap map(model);
  Wants want;
  want.model_grads = grad != nullptr;
  want.ray_grads = d_origins || d_dirs;
  const double value = map.launch(stage, rays, &t, loss, &out, want);
  const int R = rays.rays();
  if (d_origins) d_origins->setZero(3, R);
  if (d_dirs) d_dirs->setZero(3, R);
  if (R > 0 && d_origins) get(map.d_origins(), d_origins->data());
  if (R > 0 && d_dirs) get(map.d_dirs(), d_dirs->data());
  if (grad) {
    const bool background = stage_uses(stage, Level::colour) && model.background.enabled();
    for (int l = 0; l < 4; ++l) {
      if (!stage_uses(stage, Level(l))) continue;
      const auto g = map.grid_grad(l).download();
      for (std::size_t i = 0; i < g.size(); ++i) grad->grid[l][i] += g[i];
    }
    if (background) {
      const auto g = map.background_grad().download();
      for (std::size_t i = 0; i < g.size(); ++i) grad->background[i] += g[i];
    }
  }
  return value;
}

}  // namespace core::nerf
