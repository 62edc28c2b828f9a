#include "nerf/render.hpp"

#include <algorithm>
#include <cmath>

namespace core::nerf {

bool stage_uses(Stage stage, Level level) {
  switch (level) {
    case Level::coarse: return stage == Stage::coarse;
    case Level::middle: return stage != Stage::coarse;
    case Level::fine: return stage == Stage::fine || stage == Stage::colour;
    case Level::colour: return stage == Stage::colour;
  }
  return false;
}

template <class T>
void RenderGrad<T>::zero(int rays) {
  depth = Col<T>::Zero(rays);
  weight = Col<T>::Zero(rays);
  variance = Col<T>::Zero(rays);
  colour = Mat<T>::Zero(3, rays);
}

template <class T>
void ModelGrad<T>::zero(const NiceModel<T>& m) {
  for (int l = 0; l < 4; ++l) {
    grid[l].assign(m.grid[l].size(), T(0));
    decoder[l].zero_like(m.decoder[l]);
  }
  background.assign(m.background.values.size(), T(0));
}

template <class T>
void sample_depths(const std::vector<float>& measured, const SamplingOptions& o, Rng& rng, Mat<T>& z) {
  const int R = int(measured.size()), Ns = o.stratified, Nf = o.surface, N = Ns + Nf;
  z.resize(N, R);
  for (int r = 0; r < R; ++r) {
    const double d = measured[std::size_t(r)];
    const double far = d > 0 ? std::min(o.far, 1.2 * d + 0.1) : o.far;
    const int strat = d > 0 ? Ns : N;
    for (int k = 0; k < strat; ++k) z(k, r) = T(o.near + (k + rng.uniform()) * (far - o.near) / strat);
    if (d > 0) {
      const double half = std::max(o.surface_band * d, o.surface_min);
      for (int k = 0; k < Nf; ++k) z(Ns + k, r) = T(d - half + (k + rng.uniform()) * 2 * half / Nf);
    }
    std::sort(z.col(r).data(), z.col(r).data() + N);
  }
}

namespace {

// Trilinear cell of point p in grid g: base vertex and fractions; false outside.
template <class T>
bool cell_of(const FeatureGrid<T>& g, const T* p, std::int64_t& base, T f[3]) {
  const int n[3] = {g.nx, g.ny, g.nz};
  int i[3];
  for (int a = 0; a < 3; ++a) {
    const T u = (p[a] - T(g.lo[a])) / T(g.voxel);
    if (!(u >= T(0) && u <= T(n[a] - 1))) return false;
    i[a] = std::min(int(u), n[a] - 2);
    f[a] = u - T(i[a]);
  }
  base = (std::int64_t(i[2]) * g.ny + i[1]) * g.nx + i[0];
  return true;
}

template <class T>
std::int64_t corner_offset(const FeatureGrid<T>& g, int k) {
  return ((k >> 2) & 1) * std::int64_t(g.nx) * g.ny + ((k >> 1) & 1) * std::int64_t(g.nx) + (k & 1);
}

template <class T>
void trilinear_weights(const T f[3], T w[8], T dw[8][3]) {
  for (int k = 0; k < 8; ++k) {
    const T wx = (k & 1) ? f[0] : 1 - f[0], wy = (k & 2) ? f[1] : 1 - f[1], wz = (k & 4) ? f[2] : 1 - f[2];
    const T sx = (k & 1) ? 1 : -1, sy = (k & 2) ? 1 : -1, sz = (k & 4) ? 1 : -1;
    w[k] = wx * wy * wz;
    if (dw) {
      dw[k][0] = sx * wy * wz;
      dw[k][1] = wx * sy * wz;
      dw[k][2] = wx * wy * sz;
    }
  }
}

template <class T>
void gather(const FeatureGrid<T>& g, const Mat<T>& points, const std::vector<char>& inside, Mat<T>& feat) {
  const int C = g.channels;
  const Eigen::Index S = points.cols();
  feat.setZero(C, S);
#pragma omp parallel for schedule(static)
  for (Eigen::Index s = 0; s < S; ++s) {
    if (!inside[std::size_t(s)]) continue;
    std::int64_t base;
    T f[3], w[8];
    if (!cell_of(g, points.col(s).data(), base, f)) continue;
    trilinear_weights<T>(f, w, nullptr);
    T* out = feat.col(s).data();
    for (int k = 0; k < 8; ++k) {
      const T* v = &g.values[std::size_t(base + corner_offset(g, k)) * std::size_t(C)];
      for (int c = 0; c < C; ++c) out[c] += w[k] * v[c];
    }
  }
}

// Scatter dL/dfeatures into the grid gradient (serial: the same sums in the same order on any thread count).
template <class T>
void scatter(const FeatureGrid<T>& g, const Mat<T>& points, const std::vector<char>& inside, const Mat<T>& dfeat,
             std::vector<T>& grad) {
  const int C = g.channels;
  for (Eigen::Index s = 0; s < points.cols(); ++s) {
    if (!inside[std::size_t(s)]) continue;
    std::int64_t base;
    T f[3], w[8];
    if (!cell_of(g, points.col(s).data(), base, f)) continue;
    trilinear_weights<T>(f, w, nullptr);
    const T* d = dfeat.col(s).data();
    for (int k = 0; k < 8; ++k) {
      T* out = &grad[std::size_t(base + corner_offset(g, k)) * std::size_t(C)];
      for (int c = 0; c < C; ++c) out[c] += w[k] * d[c];
    }
  }
}

// dL/dp += sum_k (dL/dfeat . g_k) dw_k/dp.
template <class T>
void point_grad(const FeatureGrid<T>& g, const Mat<T>& points, const std::vector<char>& inside, const Mat<T>& dfeat,
                Mat<T>& dpoints) {
  const int C = g.channels;
  const T inv = T(1.0 / g.voxel);
#pragma omp parallel for schedule(static)
  for (Eigen::Index s = 0; s < points.cols(); ++s) {
    if (!inside[std::size_t(s)]) continue;
    std::int64_t base;
    T f[3], w[8], dw[8][3];
    if (!cell_of(g, points.col(s).data(), base, f)) continue;
    trilinear_weights<T>(f, w, dw);
    const T* d = dfeat.col(s).data();
    T acc[3] = {0, 0, 0};
    for (int k = 0; k < 8; ++k) {
      const T* v = &g.values[std::size_t(base + corner_offset(g, k)) * std::size_t(C)];
      T dot = 0;
      for (int c = 0; c < C; ++c) dot += d[c] * v[c];
      for (int a = 0; a < 3; ++a) acc[a] += dot * dw[k][a];
    }
    for (int a = 0; a < 3; ++a) dpoints(a, s) += acc[a] * inv;
  }
}

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// The background model's colour for direction d (3 x 1 column of T).
template <class T, class D>
Eigen::Matrix<T, 3, 1> background_colour(const BackgroundModel<T>& bg, const D& dir) {
  std::size_t vtx[4];
  double w[4], fu, fv;
  Vec3 du, dv;
  bg.locate(dir.template cast<double>(), vtx, w, du, dv, fu, fv);
  Eigen::Matrix<T, 3, 1> logit = Eigen::Matrix<T, 3, 1>::Zero();
  for (int k = 0; k < 4; ++k)
    for (int ch = 0; ch < 3; ++ch) logit(ch) += T(w[k]) * bg.values[3 * vtx[k] + std::size_t(ch)];
  return logit.unaryExpr([](T v) { return sigmoid(v); });
}

// dL/d(logits) added into grad and dL/d(dirs) added into d_dirs (each when given), through
// I += T_N sigmoid(bilinear(logits, u(d), v(d))).
template <class T>
void background_backward(const BackgroundModel<T>& bg, const RayBundle<T>& rays, const RenderCache<T>& c,
                              const RenderGrad<T>& g, std::vector<T>* grad, Mat<T>* d_dirs) {
  for (int r = 0; r < rays.rays(); ++r) {
    std::size_t vtx[4];
    double w[4], fu, fv;
    Vec3 du, dv;
    bg.locate(rays.dirs.col(r).template cast<double>(), vtx, w, du, dv, fu, fv);
    Vec3 dd = Vec3::Zero();
    for (int ch = 0; ch < 3; ++ch) {
      const T s = c.background_rgb(ch, r);
      const T dlogit = c.background_trans(r) * g.colour(ch, r) * s * (1 - s);
      if (grad)
        for (int k = 0; k < 4; ++k) (*grad)[3 * vtx[k] + std::size_t(ch)] += T(w[k]) * dlogit;
      if (d_dirs) {
        const auto V = [&](int k) { return double(bg.values[3 * vtx[k] + std::size_t(ch)]); };
        const double dlu = (1 - fv) * (V(1) - V(0)) + fv * (V(3) - V(2));
        const double dlv = (1 - fu) * (V(2) - V(0)) + fu * (V(3) - V(1));
        dd += double(dlogit) * (dlu * du + dlv * dv);
      }
    }
    if (d_dirs) d_dirs->col(r) += dd.cast<T>();
  }
}

}  // namespace

template <class T>
void render_forward(const NiceModel<T>& m, Stage stage, const RayBundle<T>& rays, RenderCache<T>& c,
                    RenderOutput<T>& out) {
  const int R = rays.rays(), N = rays.samples();
  const Eigen::Index S = Eigen::Index(R) * N;
  c.stage = stage;
  c.points.resize(3, S);
  c.inside.assign(std::size_t(S), 0);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < N; ++k) {
      const Eigen::Index s = Eigen::Index(r) * N + k;
      c.points.col(s) = rays.origins.col(r) + rays.z(k, r) * rays.dirs.col(r);
      const Vec3 p = c.points.col(s).template cast<double>();
      c.inside[std::size_t(s)] = m.inside(p);
    }
  for (int l = 0; l < 4; ++l)
    if (stage_uses(stage, Level(l))) gather(m.grid[l], c.points, c.inside, c.features[l]);
  Mat<T> y;
  if (stage == Stage::coarse) {
    m.decoder[0].forward(c.features[0], c.raw, c.acts[0]);
  } else {
    m.decoder[1].forward(c.features[1], c.raw, c.acts[1]);
    if (stage_uses(stage, Level::fine)) {
      Mat<T> x(c.features[1].rows() + c.features[2].rows(), S);
      x << c.features[1], c.features[2];
      m.decoder[2].forward(x, y, c.fine_acts);
      c.raw += y;
    }
  }
  const bool colour = stage_uses(stage, Level::colour);
  if (colour) {
    m.decoder[3].forward(c.features[3], c.rgb, c.acts[3]);
    c.rgb = c.rgb.unaryExpr([](T v) { return sigmoid(v); });
  }
  c.occupancy.resize(N, R);
  c.transmittance.resize(N, R);
  out.depth.resize(R);
  out.weight.resize(R);
  out.variance.resize(R);
  out.colour = Mat<T>::Zero(3, R);
  if (colour && m.background.enabled()) {
    c.background_rgb.resize(3, R);
    c.background_trans.resize(R);
  }
  const T scale = T(m.occupancy_scale);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < R; ++r) {
    T trans = 1, D = 0, W = 0, E2 = 0;
    for (int k = 0; k < N; ++k) {
      const Eigen::Index s = Eigen::Index(r) * N + k;
      const T o = c.inside[std::size_t(s)] ? sigmoid(scale * c.raw(0, s)) : T(0);
      c.occupancy(k, r) = o;
      c.transmittance(k, r) = trans;
      const T w = o * trans, z = rays.z(k, r);
      D += w * z;
      W += w;
      E2 += w * z * z;
      if (colour) out.colour.col(r) += w * c.rgb.col(s);
      trans *= 1 - o;
    }
    if (colour && m.background.enabled()) {
      c.background_trans(r) = trans;
      const Eigen::Matrix<T, 3, 1> bg = background_colour(m.background, rays.dirs.col(r));
      c.background_rgb.col(r) = bg;
      out.colour.col(r) += trans * bg;
    }
    out.depth(r) = D;
    out.weight(r) = W;
    out.variance(r) = std::max(T(0), E2 - 2 * D * D + D * D * W);
  }
}

template <class T>
void render_backward(const NiceModel<T>& m, const RayBundle<T>& rays, const RenderCache<T>& c,
                     const RenderGrad<T>& g, ModelGrad<T>* grad, bool decoder_grads, Mat<T>* d_origins,
                     Mat<T>* d_dirs) {
  const int R = rays.rays(), N = rays.samples();
  const Eigen::Index S = Eigen::Index(R) * N;
  const Stage stage = c.stage;
  const bool colour = stage_uses(stage, Level::colour);
  const T scale = T(m.occupancy_scale);
  Mat<T> draw = Mat<T>::Zero(1, S), drgb;
  if (colour) drgb = Mat<T>::Zero(3, S);
#pragma omp parallel for schedule(static)
  for (int r = 0; r < R; ++r) {
    // Recompute D and W to form the variance's partial derivatives (V = E2 - 2 D^2 + D^2 W).
    T D = 0, W = 0;
    for (int k = 0; k < N; ++k) {
      const T w = c.occupancy(k, r) * c.transmittance(k, r);
      D += w * rays.z(k, r);
      W += w;
    }
    const T gV = g.variance(r);
    const T gD = g.depth(r) + gV * (-4 * D + 2 * D * W);
    const T gW = g.weight(r) + gV * D * D;
    const T gE2 = gV;
    Eigen::Matrix<T, 3, 1> gI = Eigen::Matrix<T, 3, 1>::Zero();
    if (colour) gI = g.colour.col(r);
    const bool background = colour && m.background.enabled();
    T suffix = background ? gI.dot(c.background_rgb.col(r)) : T(0);  // S_k; the background is an opaque last sample
    for (int k = N - 1; k >= 0; --k) {
      const Eigen::Index s = Eigen::Index(r) * N + k;
      const T o = c.occupancy(k, r), tr = c.transmittance(k, r), z = rays.z(k, r);
      T q = gW + gD * z + gE2 * z * z;
      if (colour) {
        q += gI.dot(c.rgb.col(s));
        const T w = o * tr;
        for (int ch = 0; ch < 3; ++ch) {
          const T cv = c.rgb(ch, s);
          drgb(ch, s) = w * gI(ch) * cv * (1 - cv);
        }
      }
      const T dodraw = c.inside[std::size_t(s)] ? scale * o * (1 - o) : T(0);
      draw(0, s) = tr * (q - suffix) * dodraw;
      suffix = o * q + (1 - o) * suffix;
    }
  }
  // Decoders.
  Mat<T> dfeat[4];
  if (stage == Stage::coarse) {
    m.decoder[0].backward(c.acts[0], draw, &dfeat[0], decoder_grads && grad ? &grad->decoder[0] : nullptr);
  } else {
    m.decoder[1].backward(c.acts[1], draw, &dfeat[1], decoder_grads && grad ? &grad->decoder[1] : nullptr);
    if (stage_uses(stage, Level::fine)) {
      Mat<T> dx;
      m.decoder[2].backward(c.fine_acts, draw, &dx, decoder_grads && grad ? &grad->decoder[2] : nullptr);
      const Eigen::Index C1 = c.features[1].rows();
      dfeat[1] += dx.topRows(C1);
      dfeat[2] = dx.bottomRows(dx.rows() - C1);
    }
  }
  if (colour) m.decoder[3].backward(c.acts[3], drgb, &dfeat[3], decoder_grads && grad ? &grad->decoder[3] : nullptr);
  // Grids and points.
  const bool want_points = d_origins || d_dirs;
  Mat<T> dpoints;
  if (want_points) dpoints = Mat<T>::Zero(3, S);
  for (int l = 0; l < 4; ++l) {
    if (!stage_uses(stage, Level(l))) continue;
    if (grad) scatter(m.grid[l], c.points, c.inside, dfeat[l], grad->grid[l]);
    if (want_points) point_grad(m.grid[l], c.points, c.inside, dfeat[l], dpoints);
  }
  if (grad && colour && m.background.enabled()) background_backward<T>(m.background, rays, c, g, &grad->background, nullptr);
  if (!want_points) return;
  if (d_origins) d_origins->setZero(3, R);
  if (d_dirs) d_dirs->setZero(3, R);
  if (d_dirs && colour && m.background.enabled()) background_backward<T>(m.background, rays, c, g, nullptr, d_dirs);
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < N; ++k) {
      const Eigen::Index s = Eigen::Index(r) * N + k;
      if (d_origins) d_origins->col(r) += dpoints.col(s);
      if (d_dirs) d_dirs->col(r) += rays.z(k, r) * dpoints.col(s);
    }
}

template <class T>
double render_loss(const RenderOutput<T>& out, const RayTargets<T>& t, const LossOptions& o, RenderGrad<T>& g) {
  const int R = int(out.depth.size());
  g.zero(R);
  int active = 0;
  for (int r = 0; r < R; ++r) active += t.active[std::size_t(r)] != 0;
  if (active == 0) return 0.0;
  const T inv = T(1.0 / active);
  double loss = 0;
  const bool colour = o.colour_weight > 0 && out.colour.cols() == R;
  for (int r = 0; r < R; ++r) {
    if (!t.active[std::size_t(r)]) continue;
    const T dw = t.depth_weight.size() ? t.depth_weight(r) : T(1);
    if (t.depth(r) > 0) {
      const T e = out.depth(r) - t.depth(r), sgn = T((e > 0) - (e < 0));
      if (o.variance_normalised) {
        const T var = out.variance(r) + (t.sensor_var.size() ? t.sensor_var(r) : T(0)) + T(o.eps);
        const T sd = std::sqrt(var);
        loss += double(dw * std::abs(e) / sd * inv);
        g.depth(r) = dw * sgn / sd * inv;
        g.variance(r) = -dw * std::abs(e) / (2 * var * sd) * inv;
      } else {
        loss += double(dw * std::abs(e) * inv);
        g.depth(r) = dw * sgn * inv;
      }
    }
    if (colour)
      for (int ch = 0; ch < 3; ++ch) {
        const T e = out.colour(ch, r) - t.colour(ch, r);
        loss += o.colour_weight * double(std::abs(e) * inv);
        g.colour(ch, r) = T(o.colour_weight) * T((e > 0) - (e < 0)) * inv;
      }
  }
  return loss;
}

template <class T>
void depth_uncertainty_weights(const RenderOutput<T>& out, const DepthNoiseModel& noise, bool per_ray,
                               RayTargets<T>& t) {
  const int R = int(t.depth.size());
  t.sensor_var = Col<T>::Zero(R);
  t.depth_weight = Col<T>::Ones(R);
  double sum = 0;
  int n = 0;
  for (int r = 0; r < R; ++r) {
    if (!(t.depth(r) > 0)) continue;
    const double s = noise.sigma(double(t.depth(r)));
    t.sensor_var(r) = T(s * s);
    const double inv_sd = 1.0 / std::sqrt(double(out.variance(r)) + s * s);
    if (per_ray) t.depth_weight(r) = T(inv_sd);
    if (t.active.empty() || t.active[std::size_t(r)]) {
      sum += inv_sd;
      ++n;
    }
  }
  if (n == 0) return;
  const T c = T(double(n) / sum);
  if (per_ray) t.depth_weight *= c;
  else t.depth_weight.setConstant(c);
}

template <class T>
void camera_rays(const Pose& pose, const std::vector<Vec3>& unit_depth_rays, RayBundle<T>& rays) {
  const int R = int(unit_depth_rays.size());
  rays.origins.resize(3, R);
  rays.dirs.resize(3, R);
  for (int r = 0; r < R; ++r) {
    rays.origins.col(r) = pose.t.cast<T>();
    rays.dirs.col(r) = (pose.R * unit_depth_rays[std::size_t(r)]).cast<T>();
  }
}

#define NERF_INSTANTIATE(T)                                                                                      \
  template struct RenderGrad<T>;                                                                                 \
  template struct ModelGrad<T>;                                                                                  \
  template void sample_depths<T>(const std::vector<float>&, const SamplingOptions&, Rng&, Mat<T>&);            \
  template void render_forward<T>(const NiceModel<T>&, Stage, const RayBundle<T>&, RenderCache<T>&,             \
                                  RenderOutput<T>&);                                                             \
  template void render_backward<T>(const NiceModel<T>&, const RayBundle<T>&, const RenderCache<T>&,             \
                                   const RenderGrad<T>&, ModelGrad<T>*, bool, Mat<T>*, Mat<T>*);                \
  template double render_loss<T>(const RenderOutput<T>&, const RayTargets<T>&, const LossOptions&, RenderGrad<T>&); \
  template void camera_rays<T>(const Pose&, const std::vector<Vec3>&, RayBundle<T>&);                            \
  template void depth_uncertainty_weights<T>(const RenderOutput<T>&, const DepthNoiseModel&, bool, RayTargets<T>&);
NERF_INSTANTIATE(float)
NERF_INSTANTIATE(double)
#undef NERF_INSTANTIATE

}  // namespace core::nerf
