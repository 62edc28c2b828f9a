#include "nerf/mesh.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "nerf/render.hpp"

namespace core::nerf {

namespace {

// Cube corners are bit masks: bit 0 = +x, bit 1 = +y, bit 2 = +z. The Kuhn triangulation has one
// tetrahedron per order of the axes, on the monotone path 0 -> e_a -> e_a + e_b -> (1, 1, 1).
std::array<std::array<int, 4>, 6> kuhn_tetrahedra() {
  std::array<std::array<int, 4>, 6> tets{};
  int axes[3] = {0, 1, 2}, t = 0;
  do {
    const int m1 = 1 << axes[0], m2 = m1 | (1 << axes[1]);
    tets[std::size_t(t++)] = {0, m1, m2, 7};
  } while (std::next_permutation(axes, axes + 3));
  return tets;
}

// det(b - a, c - a, d - a) of cube corners (exact, in lattice units).
int corner_det(int a, int b, int c, int d) {
  auto diff = [a](int m, int axis) { return ((m >> axis) & 1) - ((a >> axis) & 1); };
  int u[3], v[3], w[3];
  for (int axis = 0; axis < 3; ++axis) {
    u[axis] = diff(b, axis);
    v[axis] = diff(c, axis);
    w[axis] = diff(d, axis);
  }
  return u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) + u[2] * (v[0] * w[1] - v[1] * w[0]);
}

class IsosurfaceBuilder {
 public:
  IsosurfaceBuilder(const ScalarLattice& lattice, double level) : g_(lattice), level_(level) {}

  TriangleMesh run() {
    const auto tets = kuhn_tetrahedra();
    for (int k = 0; k + 1 < g_.nz; ++k)
      for (int j = 0; j + 1 < g_.ny; ++j)
        for (int i = 0; i + 1 < g_.nx; ++i) {
          int above = 0;
          for (int m = 0; m < 8; ++m) above += value(i, j, k, m) > level_;
          if (above == 0 || above == 8) continue;
          for (const auto& t : tets) cut_tetrahedron(i, j, k, t);
        }
    return std::move(mesh_);
  }

 private:
  float value(int i, int j, int k, int m) const { return g_.values[corner_index(i, j, k, m)]; }
  std::size_t corner_index(int i, int j, int k, int m) const {
    return g_.index(i + (m & 1), j + ((m >> 1) & 1), k + ((m >> 2) & 1));
  }

  // The surface vertex on the edge between corners m and n of cell (i, j, k). In the Kuhn triangulation
  // one corner's mask is a subset of the other's; the vertex is keyed (and interpolated) from that lower
  // corner, so the cells sharing the edge create it once and identically.
  std::int32_t edge_vertex(int i, int j, int k, int m, int n) {
    if ((m & n) != m) std::swap(m, n);
    const std::size_t lo = corner_index(i, j, k, m), hi = corner_index(i, j, k, n);
    const std::uint64_t key = std::uint64_t(lo) * 8 + std::uint64_t(m ^ n);
    const auto [it, added] = vertex_of_edge_.try_emplace(key, std::int32_t(mesh_.vertices.size()));
    if (added) {
      const double flo = g_.values[lo], fhi = g_.values[hi];
      const double t = (level_ - flo) / (fhi - flo);
      const Vec3 a = g_.point(i + (m & 1), j + ((m >> 1) & 1), k + ((m >> 2) & 1));
      const Vec3 b = g_.point(i + (n & 1), j + ((n >> 1) & 1), k + ((n >> 2) & 1));
      mesh_.vertices.push_back(a + t * (b - a));
    }
    return it->second;
  }

  void cut_tetrahedron(int i, int j, int k, const std::array<int, 4>& corners) {
    int in[4], out[4], n_in = 0, n_out = 0;
    for (int c : corners) (value(i, j, k, c) > level_ ? in[n_in++] : out[n_out++]) = c;
    if (n_in == 0 || n_out == 0) return;
    auto v = [&](int a, int b) { return edge_vertex(i, j, k, a, b); };
    if (n_in == 1 || n_out == 1) {
      // Corner a alone on its side; with (b, c, d) counter-clockwise around a (positive determinant),
      // the triangle (ab, ac, ad) faces away from a: keep that when a is inside, reverse it when outside.
      const int a = n_in == 1 ? in[0] : out[0];
      int* rest = n_in == 1 ? out : in;
      int b = rest[0], c = rest[1], d = rest[2];
      if (corner_det(a, b, c, d) < 0) std::swap(c, d);
      if (n_in == 1) mesh_.triangles.push_back({v(a, b), v(a, c), v(a, d)});
      else mesh_.triangles.push_back({v(a, b), v(a, d), v(a, c)});
      return;
    }
    // Inside a, b; outside c, d; with det(b - a, c - a, d - a) > 0 the quad (ac, ad, bd, bc) faces c, d.
    const int a = in[0], b = in[1];
    int c = out[0], d = out[1];
    if (corner_det(a, b, c, d) < 0) std::swap(c, d);
    const std::int32_t ac = v(a, c), ad = v(a, d), bd = v(b, d), bc = v(b, c);
    mesh_.triangles.push_back({ac, ad, bd});
    mesh_.triangles.push_back({ac, bd, bc});
  }

  const ScalarLattice& g_;
  double level_;
  TriangleMesh mesh_;
  std::unordered_map<std::uint64_t, std::int32_t> vertex_of_edge_;
};

}  // namespace

TriangleMesh extract_isosurface(const ScalarLattice& lattice, double level) {
  return IsosurfaceBuilder(lattice, level).run();
}

void evaluate_points(const NiceModel<float>& model, const Mat<float>& points, std::vector<float>* occupancy,
                     Mat<float>* colour) {
  // Each point is a one-sample ray at depth 0, rendered by the reference renderer: its cache holds the
  // sample's occupancy (0 outside the bound) and colour.
  const Eigen::Index P = points.cols(), chunk = 1 << 16;
  if (occupancy) occupancy->resize(std::size_t(P));
  if (colour) colour->resize(3, P);
  RayBundle<float> rays;
  RenderCache<float> cache;
  RenderOutput<float> out;
  for (Eigen::Index begin = 0; begin < P; begin += chunk) {
    const Eigen::Index n = std::min(chunk, P - begin);
    rays.origins = points.middleCols(begin, n);
    rays.dirs = Mat<float>::Zero(3, n);
    rays.z = Mat<float>::Zero(1, n);
    render_forward(model, colour ? Stage::colour : Stage::fine, rays, cache, out);
    if (occupancy) std::copy_n(cache.occupancy.data(), n, occupancy->begin() + begin);
    if (colour) colour->middleCols(begin, n) = cache.rgb;
  }
}

ScalarLattice occupancy_lattice(const NiceModel<float>& model, int resolution) {
  ScalarLattice g;
  const Vec3 extent = model.bound_hi - model.bound_lo;
  g.lo = model.bound_lo;
  g.spacing = extent.maxCoeff() / resolution;
  g.nx = int(std::floor(extent.x() / g.spacing + 1e-9)) + 1;
  g.ny = int(std::floor(extent.y() / g.spacing + 1e-9)) + 1;
  g.nz = int(std::floor(extent.z() / g.spacing + 1e-9)) + 1;
  const std::size_t total = std::size_t(g.nx) * g.ny * g.nz;
  g.values.resize(total);
  const std::size_t slab = std::size_t(g.nx) * g.ny;
  Mat<float> points(3, Eigen::Index(slab));
  std::vector<float> occ;
  for (int k = 0; k < g.nz; ++k) {
    for (int j = 0; j < g.ny; ++j)
      for (int i = 0; i < g.nx; ++i) points.col(Eigen::Index(j) * g.nx + i) = g.point(i, j, k).cast<float>();
    evaluate_points(model, points, &occ, nullptr);
    std::copy(occ.begin(), occ.end(), g.values.begin() + std::ptrdiff_t(k * slab));
  }
  return g;
}

TriangleMesh extract_mesh(const NiceModel<float>& model, const MeshOptions& o, const ObservedViews* views) {
  TriangleMesh mesh = extract_isosurface(occupancy_lattice(model, o.resolution), o.level);
  if (o.cull && views) cull_unobserved(mesh, *views, o.cull_margin);
  if (!o.colour || mesh.vertices.empty()) return mesh;
  Mat<float> points(3, Eigen::Index(mesh.vertices.size())), rgb;
  for (std::size_t v = 0; v < mesh.vertices.size(); ++v) points.col(Eigen::Index(v)) = mesh.vertices[v].cast<float>();
  evaluate_points(model, points, nullptr, &rgb);
  mesh.colours.resize(mesh.vertices.size());
  for (std::size_t v = 0; v < mesh.vertices.size(); ++v)
    for (int c = 0; c < 3; ++c)
      mesh.colours[v][std::size_t(c)] =
          std::uint8_t(std::lround(255.0 * std::clamp(double(rgb(c, Eigen::Index(v))), 0.0, 1.0)));
  return mesh;
}

bool observed(const ObservedViews& views, const Vec3& p, double margin) {
  const Intrinsics& k = views.camera;
  for (std::size_t i = 0; i < views.poses.size(); ++i) {
    const Vec3 c = views.poses[i].R.transpose() * (p - views.poses[i].t);
    if (!(c.z() > 0)) continue;
    const long u = std::lround(k.fx * c.x() / c.z() + k.cx), v = std::lround(k.fy * c.y() / c.z() + k.cy);
    if (u < 0 || v < 0 || u >= k.width || v >= k.height) continue;
    const float d = views.depths[i].at(int(u), int(v));
    if (d > 0 && c.z() <= d + margin) return true;
  }
  return false;
}

void cull_unobserved(TriangleMesh& mesh, const ObservedViews& views, double margin) {
  std::vector<char> seen(mesh.vertices.size());
#pragma omp parallel for schedule(static)
  for (std::size_t v = 0; v < mesh.vertices.size(); ++v) seen[v] = observed(views, mesh.vertices[v], margin);
  std::vector<std::int32_t> index(mesh.vertices.size(), -1);
  TriangleMesh kept;
  for (const auto& t : mesh.triangles) {
    if (!seen[std::size_t(t[0])] || !seen[std::size_t(t[1])] || !seen[std::size_t(t[2])]) continue;
    std::array<std::int32_t, 3> out{};
    for (int c = 0; c < 3; ++c) {
      auto& at = index[std::size_t(t[std::size_t(c)])];
      if (at < 0) {
        at = std::int32_t(kept.vertices.size());
        kept.vertices.push_back(mesh.vertices[std::size_t(t[std::size_t(c)])]);
        if (!mesh.colours.empty()) kept.colours.push_back(mesh.colours[std::size_t(t[std::size_t(c)])]);
      }
      out[std::size_t(c)] = at;
    }
    kept.triangles.push_back(out);
  }
  mesh = std::move(kept);
}

}  // namespace core::nerf
