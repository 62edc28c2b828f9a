// Marching tetrahedra on analytic occupancies (closed, consistently oriented, on the surface, area and
// volume converging to the closed forms), PLY and map-file round trips.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <map>
#include <numbers>

#include "nerf/map_file.hpp"
#include "nerf/mesh.hpp"
#include "nerf/ply.hpp"
#include "nerf/slam.hpp"
#include "common/errors.hpp"
#include "test_support.hpp"

using namespace core::nerf;

namespace {

ScalarLattice sample(int n, const std::function<double(const Vec3&)>& f) {
  ScalarLattice g;
  g.spacing = 1.0 / (n - 1);
  g.nx = g.ny = g.nz = n;
  g.values.resize(std::size_t(n) * n * n);
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) g.values[g.index(i, j, k)] = float(f(g.point(i, j, k)));
  return g;
}

struct Topology {
  long euler = 0;
  bool manifold = true;  // every edge in exactly two triangles, traversed once in each direction
  double area = 0, volume = 0;
};

Topology topology(const TriangleMesh& m) {
  Topology t;
  std::map<std::pair<int, int>, int> directed;
  for (const auto& tri : m.triangles) {
    for (int e = 0; e < 3; ++e) ++directed[{tri[std::size_t(e)], tri[std::size_t((e + 1) % 3)]}];
    const Vec3 &a = m.vertices[std::size_t(tri[0])], &b = m.vertices[std::size_t(tri[1])],
               &c = m.vertices[std::size_t(tri[2])];
    t.area += 0.5 * (b - a).cross(c - a).norm();
    t.volume += a.dot(b.cross(c)) / 6;  // divergence theorem: positive when the normals point outwards
  }
  long edges = 0;
  for (const auto& [e, count] : directed) {
    const auto back = directed.find({e.second, e.first});
    if (count != 1 || back == directed.end() || back->second != 1) t.manifold = false;
    if (e.first < e.second) ++edges;
  }
  t.euler = long(m.vertices.size()) - edges + long(m.triangles.size());
  return t;
}

}  // namespace

TEST_CASE("marching tetrahedra: a sphere is closed, outward, on the surface, area and volume converge") {
  const Vec3 c(0.503, 0.497, 0.511);
  const double r = 0.3;
  double last_area_error = 1;
  for (int n : {21, 41, 81}) {
    const auto g = sample(n, [&](const Vec3& p) { return 0.5 + (r - (p - c).norm()); });
    const TriangleMesh m = extract_isosurface(g, 0.5);
    const Topology t = topology(m);
    CHECK(t.manifold);
    CHECK(t.euler == 2);
    double worst = 0;
    for (const auto& v : m.vertices) worst = std::max(worst, std::abs((v - c).norm() - r));
    CHECK(worst < 2 * g.spacing * g.spacing);  // linear interpolation of a smooth field: O(h^2)
    const double area_error = std::abs(t.area / (4 * std::numbers::pi * r * r) - 1);
    const double volume_error = std::abs(t.volume / (4.0 / 3 * std::numbers::pi * r * r * r) - 1);
    MESSAGE("n " << n << ": " << m.triangles.size() << " triangles, |d - r| <= " << worst << ", area error "
                 << area_error << ", volume error " << volume_error);
    CHECK(area_error < last_area_error / 3);  // second order: a quarter per halving
    CHECK(volume_error < 6 * g.spacing * g.spacing);
    last_area_error = area_error;
  }
  CHECK(last_area_error < 1e-3);
}

TEST_CASE("marching tetrahedra: a box and two separate balls; nothing for a constant field") {
  const Vec3 c(0.52, 0.49, 0.5), half(0.3, 0.2, 0.25);
  const auto box = sample(33, [&](const Vec3& p) { return 0.5 - ((p - c).cwiseAbs() - half).maxCoeff(); });
  const Topology tb = topology(extract_isosurface(box, 0.5));
  CHECK(tb.manifold);
  CHECK(tb.euler == 2);
  CHECK(tb.volume == doctest::Approx(8 * half.prod()).epsilon(0.03));
  const Vec3 c1(0.3, 0.3, 0.3), c2(0.7, 0.68, 0.71);
  const auto two = sample(33, [&](const Vec3& p) {
    return 0.5 + std::max(0.15 - (p - c1).norm(), 0.12 - (p - c2).norm());
  });
  const Topology t2 = topology(extract_isosurface(two, 0.5));
  CHECK(t2.manifold);
  CHECK(t2.euler == 4);  // two spheres
  CHECK(extract_isosurface(sample(5, [](const Vec3&) { return 0.9; }), 0.5).triangles.empty());
}

TEST_CASE("PLY: binary and ascii round trips of vertices, colours and faces; malformed files") {
  const auto g = sample(9, [](const Vec3& p) { return 0.5 + 0.3 - (p - Vec3(0.5, 0.5, 0.5)).norm(); });
  TriangleMesh m = extract_isosurface(g, 0.5);
  REQUIRE(!m.triangles.empty());
  for (std::size_t v = 0; v < m.vertices.size(); ++v)
    m.colours.push_back({std::uint8_t(v % 256), std::uint8_t(255 - v % 256), 7});
  core::test::TempDir dir("ply");
  for (bool binary : {true, false}) {
    const auto path = dir / (binary ? "b.ply" : "a.ply");
    write_ply(path, m, binary);
    const TriangleMesh r = read_ply(path);
    REQUIRE(r.vertices.size() == m.vertices.size());
    CHECK(r.triangles == m.triangles);
    CHECK(r.colours == m.colours);
    double worst = 0;
    for (std::size_t v = 0; v < m.vertices.size(); ++v)
      worst = std::max(worst, (r.vertices[v] - m.vertices[v].cast<float>().cast<double>()).norm());
    CHECK(worst == 0);
  }
  core::test::write_text(dir / "bad.ply", "ply\nformat binary_big_endian 1.0\nend_header\n");
  CHECK_THROWS_AS(read_ply(dir / "bad.ply"), core::DataError);
  CHECK_THROWS_AS(read_ply(dir / "none.ply"), core::InputMissingError);
}

TEST_CASE("map file: grids, decoders and background round trip exactly; a decoders-only file is not a map") {
  NiceModel<float> model;
  ModelOptions o;
  o.channels = 4;
  o.hidden = 8;
  o.voxel_middle = 0.5;
  o.voxel_fine = o.voxel_colour = 0.25;
  model.init(o, Vec3(-1, -1, 0), Vec3(1, 1, 1), 5);
  core::test::TempDir dir("map");
  save_map(dir / "map.safetensors", model, {{"test", true}});
  const NiceModel<float> back = load_map(dir / "map.safetensors");
  CHECK(back.bound_lo == model.bound_lo);
  CHECK(back.bound_hi == model.bound_hi);
  CHECK(back.occupancy_scale == model.occupancy_scale);
  for (int l = 0; l < 4; ++l) {
    CHECK(back.grid[l].values == model.grid[l].values);
    CHECK(back.grid[l].nx == model.grid[l].nx);
    CHECK(back.grid[l].nz == model.grid[l].nz);
    CHECK(back.grid[l].voxel == model.grid[l].voxel);
    REQUIRE(back.decoder[l].W.size() == model.decoder[l].W.size());
    for (std::size_t k = 0; k < model.decoder[l].W.size(); ++k) {
      CHECK(back.decoder[l].W[k] == model.decoder[l].W[k]);
      CHECK(back.decoder[l].b[k] == model.decoder[l].b[k]);
    }
  }
  // The model's own surface: evaluate_points agrees with the lattice it meshes.
  const ScalarLattice g = occupancy_lattice(back, 8);
  Mat<float> p(3, 1);
  p.col(0) = g.point(3, 2, 1).cast<float>();
  std::vector<float> occ;
  evaluate_points(model, p, &occ, nullptr);
  CHECK(occ[0] == g.values[g.index(3, 2, 1)]);
  CHECK(!back.background.enabled());
  // The background model travels with the map (render frames show it).
  NiceModel<float> with_bg = model;
  with_bg.background.init(6, 4);
  for (std::size_t i = 0; i < with_bg.background.values.size(); ++i) with_bg.background.values[i] = 0.1f * float(i);
  save_map(dir / "bg.safetensors", with_bg, {});
  const NiceModel<float> bg = load_map(dir / "bg.safetensors");
  CHECK(bg.background.azimuth == 6);
  CHECK(bg.background.elevation == 4);
  CHECK(bg.background.values == with_bg.background.values);
  save_decoders(dir / "dec.safetensors", model, {});
  CHECK_THROWS_AS(load_map(dir / "dec.safetensors"), core::DataError);
  CHECK_THROWS_AS(load_map(dir / "none.safetensors"), core::InputMissingError);
}

TEST_CASE("culling keeps the triangles a view observed: in its image, in front of its depth + margin") {
  const Vec3 c(0.5, 0.5, 0.5);
  const auto g = sample(33, [&](const Vec3& p) { return 0.5 + 0.3 - (p - c).norm(); });
  const TriangleMesh sphere = extract_isosurface(g, 0.5);
  ObservedViews views;
  views.camera = Intrinsics{40, 40, 20, 20, 19.5, 19.5};  // 90 degrees: the whole ball in view
  views.poses.push_back(Pose{Mat3::Identity(), Vec3(0.5, 0.5, -1.0)});  // looking along +z
  DepthImage depth;
  depth.width = depth.height = 40;
  depth.depth.assign(40 * 40, 1.45f);  // observed up to world z = 0.45 (+ margin 0.05)
  depth.depth[0] = 0;
  views.depths.push_back(depth);
  CHECK(observed(views, Vec3(0.5, 0.5, 0.49), 0.05));
  CHECK(!observed(views, Vec3(0.5, 0.5, 0.51), 0.05));
  CHECK(!observed(views, Vec3(0.5, 0.5, -1.5), 0.05));  // behind the camera
  TriangleMesh culled = sphere;
  cull_unobserved(culled, views, 0.05);
  CHECK(culled.triangles.size() > sphere.triangles.size() / 5);
  CHECK(culled.triangles.size() < sphere.triangles.size() * 6 / 10);  // the near half of the ball
  for (const auto& t : culled.triangles)
    for (auto i : t) {
      REQUIRE(std::size_t(i) < culled.vertices.size());
      CHECK(culled.vertices[std::size_t(i)].z() <= 0.5 + 1e-9);
    }
  views.poses.clear();
  views.depths.clear();
  cull_unobserved(culled, views, 0.05);
  CHECK(culled.triangles.empty());
  CHECK(culled.vertices.empty());
}
