#include "nerf/model.hpp"

#include <algorithm>
#include <cmath>

namespace core::nerf {

template <class T>
void FeatureGrid<T>::init(const Vec3& lo_, const Vec3& hi, double voxel_, int channels_, Rng& rng, double stddev) {
  lo = lo_;
  voxel = voxel_;
  channels = channels_;
  const Vec3 extent = hi - lo;
  nx = int(std::ceil(extent.x() / voxel - 1e-9)) + 1;
  ny = int(std::ceil(extent.y() / voxel - 1e-9)) + 1;
  nz = int(std::ceil(extent.z() / voxel - 1e-9)) + 1;
  values.resize(vertices() * std::size_t(channels));
  for (auto& v : values) v = T(stddev * rng.normal());
}

template <class T>
void Mlp<T>::init(const std::vector<int>& sizes, Rng& rng) {
  W.clear();
  b.clear();
  for (std::size_t l = 0; l + 1 < sizes.size(); ++l) {
    const double limit = std::sqrt(6.0 / sizes[l]);
    Mat<T> w(sizes[l + 1], sizes[l]);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = T(rng.uniform(-limit, limit));
    W.push_back(w);
    b.push_back(Col<T>::Zero(sizes[l + 1]));
  }
}

template <class T>
void Mlp<T>::zero_like(const Mlp& o) {
  W.clear();
  b.clear();
  for (std::size_t l = 0; l < o.W.size(); ++l) {
    W.push_back(Mat<T>::Zero(o.W[l].rows(), o.W[l].cols()));
    b.push_back(Col<T>::Zero(o.b[l].size()));
  }
}

template <class T>
std::size_t Mlp<T>::parameter_count() const {
  std::size_t n = 0;
  for (std::size_t l = 0; l < W.size(); ++l) n += std::size_t(W[l].size() + b[l].size());
  return n;
}

template <class T>
std::vector<T*> Mlp<T>::parameter_blocks(std::vector<std::size_t>& sizes) {
  std::vector<T*> out;
  sizes.clear();
  for (std::size_t l = 0; l < W.size(); ++l) {
    out.push_back(W[l].data());
    sizes.push_back(std::size_t(W[l].size()));
    out.push_back(b[l].data());
    sizes.push_back(std::size_t(b[l].size()));
  }
  return out;
}

template <class T>
void Mlp<T>::forward(const Mat<T>& X, Mat<T>& Y, std::vector<Mat<T>>& acts) const {
  acts.resize(W.size());
  acts[0] = X;
  for (std::size_t l = 0; l < W.size(); ++l) {
    Mat<T> z = W[l] * acts[l];
    z.colwise() += b[l];
    if (l + 1 < W.size()) acts[l + 1] = z.cwiseMax(T(0));
    else Y = std::move(z);
  }
}

template <class T>
void Mlp<T>::backward(const std::vector<Mat<T>>& acts, const Mat<T>& dY, Mat<T>* dX, Mlp* grad) const {
  Mat<T> d = dY;  // dL/d(pre-activation) of layer l
  for (std::size_t l = W.size(); l-- > 0;) {
    if (grad) {
      grad->W[l].noalias() += d * acts[l].transpose();
      grad->b[l] += d.rowwise().sum();
    }
    if (l == 0 && !dX) break;
    Mat<T> da = W[l].transpose() * d;
    if (l == 0) {
      *dX = std::move(da);
      break;
    }
    d = da.cwiseProduct((acts[l].array() > T(0)).template cast<T>().matrix());
  }
}

const char* stage_name(Stage s) {
  switch (s) {
    case Stage::coarse: return "coarse";
    case Stage::middle: return "middle";
    case Stage::fine: return "fine";
    case Stage::colour: return "colour";
  }
  return "?";
}

template <class T>
void BackgroundModel<T>::init(int az, int el) {
  azimuth = az;
  elevation = el;
  values.assign(std::size_t(az) * std::size_t(el) * 3, T(0));
}

template <class T>
void BackgroundModel<T>::locate(const Vec3& d, std::size_t vertex[4], double w[4], Vec3& du, Vec3& dv, double& fu,
                                double& fv) const {
  const double rho2 = d.x() * d.x() + d.y() * d.y(), rho = std::sqrt(rho2), n2 = rho2 + d.z() * d.z();
  const double az = std::atan2(d.y(), d.x()), el = std::atan2(d.z(), rho);
  const double su = azimuth / (2 * M_PI), sv = (elevation - 1) / M_PI;
  const double u = (az + M_PI) * su, v = std::clamp((el + M_PI / 2) * sv, 0.0, double(elevation - 1));
  const double ufloor = std::floor(u);
  const int a0 = int(ufloor) % azimuth, a1 = (a0 + 1) % azimuth;
  const int e0 = std::min(int(v), elevation - 2), e1 = e0 + 1;
  fu = u - ufloor;
  fv = v - e0;
  vertex[0] = std::size_t(e0) * azimuth + a0;
  vertex[1] = std::size_t(e0) * azimuth + a1;
  vertex[2] = std::size_t(e1) * azimuth + a0;
  vertex[3] = std::size_t(e1) * azimuth + a1;
  w[0] = (1 - fu) * (1 - fv);
  w[1] = fu * (1 - fv);
  w[2] = (1 - fu) * fv;
  w[3] = fu * fv;
  du = rho2 > 0 ? Vec3(Vec3(-d.y(), d.x(), 0) * (su / rho2)) : Vec3(Vec3::Zero());
  dv = rho > 0 ? Vec3(Vec3(-d.z() * d.x() / rho, -d.z() * d.y() / rho, rho) * (sv / n2)) : Vec3(Vec3::Zero());
}

template <class T>
void NiceModel<T>::reset_grids(const ModelOptions& o, const Vec3& lo, const Vec3& hi, std::uint64_t seed) {
  bound_lo = lo;
  bound_hi = hi;
  occupancy_scale = o.occupancy_scale;
  Rng rng(seed ^ 0x9d1dULL);
  const double voxels[4] = {o.voxel_coarse, o.voxel_middle, o.voxel_fine, o.voxel_colour};
  for (int l = 0; l < 4; ++l) grid[l].init(lo, hi, voxels[l], o.channels, rng, o.init_stddev);
}

template <class T>
void NiceModel<T>::init(const ModelOptions& o, const Vec3& lo, const Vec3& hi, std::uint64_t seed) {
  reset_grids(o, lo, hi, seed);
  Rng rng(seed ^ 0xdec0deULL);
  const int C = o.channels, H = o.hidden;
  decoder[0].init({C, H, H, 1}, rng);
  decoder[1].init({C, H, H, 1}, rng);
  decoder[2].init({2 * C, H, H, 1}, rng);
  decoder[2].W.back().setZero();  // the fine level starts as no correction of the middle level
  decoder[3].init({C, H, H, 3}, rng);
  if (o.background) background.init(o.background_azimuth, o.background_elevation);
}

template <class T>
template <class U>
NiceModel<U> NiceModel<T>::cast() const {
  NiceModel<U> m;
  m.bound_lo = bound_lo;
  m.bound_hi = bound_hi;
  m.occupancy_scale = occupancy_scale;
  m.background.azimuth = background.azimuth;
  m.background.elevation = background.elevation;
  m.background.values.assign(background.values.begin(), background.values.end());
  for (int l = 0; l < 4; ++l) {
    auto& g = m.grid[l];
    g.lo = grid[l].lo;
    g.voxel = grid[l].voxel;
    g.nx = grid[l].nx;
    g.ny = grid[l].ny;
    g.nz = grid[l].nz;
    g.channels = grid[l].channels;
    g.values.assign(grid[l].values.begin(), grid[l].values.end());
    for (std::size_t k = 0; k < decoder[l].W.size(); ++k) {
      m.decoder[l].W.push_back(decoder[l].W[k].template cast<U>());
      m.decoder[l].b.push_back(decoder[l].b[k].template cast<U>());
    }
  }
  return m;
}

template struct BackgroundModel<float>;
template struct BackgroundModel<double>;
template struct FeatureGrid<float>;
template struct FeatureGrid<double>;
template struct Mlp<float>;
template struct Mlp<double>;
template struct NiceModel<float>;
template struct NiceModel<double>;
template NiceModel<double> NiceModel<float>::cast<double>() const;
template NiceModel<float> NiceModel<double>::cast<float>() const;

}  // namespace core::nerf
